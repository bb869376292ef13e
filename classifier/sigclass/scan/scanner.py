"""The streaming scanner: blocks of bytes in, findings out as soon as each failure ends.

Per block of bytes, one prefilter pass finds the lines that match any ledger
pattern, fact, marker or generic failure trigger. Python only looks at those
lines and at the lines that follow them while a failure block is open, so the
per-line Python loop never runs over the whole log.

A failure block is a Python traceback (chained ones included), a C++ error
block (`terminate called...`, `what():`, `frame #N:`), or a one-line error
plus its continuation lines. Lines are reassembled per stream (torchrun rank,
Ray pid, ...) so interleaved workers do not cut each other's tracebacks.
"""

from __future__ import annotations

from typing import Callable, Iterator
import warnings

from sigclass.ledger.context import fact_info
from sigclass.ledger.pack import Ledger
from sigclass.ledger.patterns import MATCH_TIMEOUT, SLOW, STARVED, within_limit
from sigclass.ledger.signature import Signature
from sigclass.records import Finding
from sigclass.scan import prefilter
from sigclass.scan.blocks import one_block, ScanResult
from sigclass.scan.learned import as_learned, Guess, LearnedModel
from sigclass.scan.locate import required_literals
from sigclass.scan.overtime import OverTime
from sigclass.scan.reader import blocks, IDLE, SourceState
from sigclass.scan.source import ScanState
from sigclass.scan.triggers import G_BASE, G_KV, GENERIC
from sigclass.scan.attribution import decide
from sigclass.text import safe
from sigclass.vocab import SignatureMode


_NO_RULES: tuple = ()
_REGEX_SYNTAX = frozenset("\\.^$*+?{}[]|()")  # a pattern without any of these matches exactly its own text
_UNSET = object()


def literals_of(src: str) -> tuple[str, ...] | None:
    """The plain strings one of which every match of a ledger pattern contains (scan.locate), or None."""
    got = required_literals(src)
    return None if got is None else tuple(s.decode("ascii") for s in got)


class _PatternGuard:
    """Runs ledger regexes with a time limit; a pattern that spends it on the CPU is switched off and named."""

    def __init__(self) -> None:
        self.disabled: set[int] = set()
        self.messages: list[str] = []
        # pattern text -> the plain strings one of which every match holds (None: no such set), made on first use
        self.needs: dict[str, tuple[str, ...] | None] = {}
        self.plain: dict[int, str | None] = {}  # pattern index -> its text when that is plain text (`hit`)

    def search(self, pat, text: str):
        if pat.index in self.disabled:
            return None
        needs = self._needs(pat)
        if needs is not None and not any(s in text for s in needs):
            # no match can be in a text without one of them: a substring test instead of a timed regex call
            # (the timeout alone costs the regex module 3-12 us a call, the test well under 1 us)
            return None
        try:  # the common case, untimed
            # concurrent=False: the regex module otherwise releases the GIL around every match, and with a
            # timeout that costs ~70 us a line (~2 us without): one line is too short to share the interpreter
            return pat.compiled.search(text, timeout=MATCH_TIMEOUT, concurrent=False)
        except TimeoutError:
            pass
        # the timeout is wall-clock time: only a pattern that spent it on this thread's CPU is switched off
        got = within_limit(lambda: pat.compiled.search(text, timeout=MATCH_TIMEOUT, concurrent=False), MATCH_TIMEOUT)
        if got is STARVED:
            return None  # never got the CPU to finish: no match on this line, no verdict on the pattern
        if got is not SLOW:
            return got
        self.disabled.add(pat.index)
        msg = (f"{pat.location}: signature {pat.family} pattern timed out after {MATCH_TIMEOUT}s and is "
               "switched off for this run; rewrite it without nested repetition")
        self.messages.append(msg)
        warnings.warn(msg, stacklevel=2)
        return None

    def hit(self, pat, text: str) -> bool:
        """Whether the pattern matches somewhere in text (`search` as a yes or no). A pattern that is plain
        text, without any character regex syntax gives a meaning to, matches where that text occurs: a
        substring test answers for it."""
        lit = self.plain.get(pat.index, _UNSET) if getattr(pat, "source", None) is not None else None
        if lit is _UNSET:
            lit = self.plain[pat.index] = pat.source if not _REGEX_SYNTAX.intersection(pat.source) else None
        if lit is not None and pat.index not in self.disabled:
            return lit in text
        return self.search(pat, text) is not None

    def absent(self, pat, text: str) -> bool:
        """True when no part of text (a block's lines joined) can hold a match: it lacks every plain string
        the pattern's matches need. False says nothing."""
        needs = self._needs(pat)
        return needs is not None and not any(s in text for s in needs)

    def _needs(self, pat) -> tuple[str, ...] | None:
        src = getattr(pat, "source", None)  # a pattern without its text (a caller's own object) is not gated
        if src is None:
            return None
        needs = self.needs.get(src, _UNSET)
        if needs is _UNSET:
            needs = self.needs[src] = literals_of(src)
        return needs  # type: ignore[return-value]

    @staticmethod
    def search_value(rx, text: str):
        """A ledger `require`/`prefer` regex on a fact value (text from the log), under the same limit."""
        got = within_limit(lambda: rx.search(text, timeout=MATCH_TIMEOUT, concurrent=False), MATCH_TIMEOUT)
        return None if got is SLOW or got is STARVED else got


def _after_prefix(src: str) -> str:
    """A pattern anchored at the line start, for the prefilter: the line may begin with a worker prefix
    (`[rank3]:`, the JSON-lines adapter's `[sc:...]:`, `3: `, `(pid=12, ip=...) `, Open MPI's `[1,3]<stderr>:`,
    pdsh's host: `node-2: `, `gpu187: `, `gpu187:2: `, `10.0.0.7: `) that the confirming match, on the line
    without its prefix, no longer sees. Any `: ` is let past here (text/prefixes.py decides what a prefix is, and
    a line whose `...: ` is not one fails the confirming match): spelling the host forms out as `^[A-Za-z]...: `
    alternatives made Hyperscan (0.9.1) miss `[sc:...]:Killed` lines when two such patterns shared a database."""
    return r"(?:^|\]:|>:|: |\) )" + src[1:] if src.startswith("^") else src


class Scanner:
    """Compiled once per ledger; scans any number of sources."""

    def __init__(self, ledger: Ledger, *, engine: str | None = None, signatures: str = SignatureMode.BOTH,
                 learned: LearnedModel | Callable[[list[str]], Guess | None] | None = None) -> None:
        self.ledger = ledger
        self.signatures = signatures
        self.learned = as_learned(learned)
        if self.learned is not None:
            self.learned.set_mode(signatures)  # a model may keep one abstain threshold per mode
        self.any_family: dict[int, str] = {}
        self.fact_pat: dict[int, object] = {}
        # pattern id -> how many matching lines (per source and worker) make a finding, for counted evidence:
        # every `any` pattern of a family with min_count > 1, and single patterns given their own min_count
        self.counted: dict[int, int] = {}
        items: list[tuple[int, str, str]] = []
        for sig in ledger:
            if not sig.active:
                continue
            for p in sig.any:
                if sig.min_count > 1 or p.min_count > 1:
                    self.counted[p.index] = max(sig.min_count, p.min_count)
                self.any_family[p.index] = sig.id
                items.append((p.index, _after_prefix(p.source), f"{p.location} ({sig.id})"))
            for p in sig.facts:
                self.fact_pat[p.index] = p
                items.append((p.index, _after_prefix(p.source), f"{p.location} ({sig.id} fact {p.fact})"))
        for gid, src in GENERIC.items():
            items.append((gid, src, f"built-in trigger {gid - G_BASE}"))
        # signatures over time (metric, storm, stall, rate, recovery rules): regex evidence, so not in learned-only mode
        self.over_time = OverTime(ledger if signatures != SignatureMode.LEARNED else _NO_RULES)
        items.extend((pid, _after_prefix(src), label) for pid, src, label in self.over_time.items)
        self.live_stall: float | None = 0.0  # live pipes: provisional stalls (`stall_setting`; 0.0 is automatic)
        self.engine = prefilter.build(items, engine)
        self.multiline_families = [s for s in ledger if s.active and s.multiline]
        self.guard = _PatternGuard()
        self._fact_ids: tuple[frozenset[int], frozenset[int]] | None = None
        self._block_any_memo: dict[str, tuple[list, frozenset[int]]] = {}

    def fact_id_sets(self) -> tuple[frozenset[int], frozenset[int]]:
        """(unit-scope fact ids, lazy ids), the same for every source, made once.

        Unit-scope facts are kept per sighting, with the line; the others are
        last-value-wins. Lazy ids: pattern ids that, on a line no open block
        needs, can only set (last-value-wins) facts or key=value fields (never
        an over-time rule's trigger: those lines go through the per-line path).
        """
        if self._fact_ids is None:
            unit = frozenset(pid for pid, p in self.fact_pat.items() if fact_info(p.fact).scope == "unit")
            lazy = (frozenset(self.fact_pat) - unit - frozenset(self.over_time.by_pid)) | {G_KV}
            self._fact_ids = (unit, lazy)
        return self._fact_ids

    # ------------------------------------------------------------------ API
    def scan(self, path: str, *, display: str | None = None, on_finding: Callable[[Finding], None] | None = None,
             live: bool | None = None) -> ScanResult:
        """Scan one source ('-' is stdin). Raises InputError when it cannot be opened."""
        state = SourceState(display or ("<stdin>" if path == "-" else safe.name(path)))
        run = ScanState(self, state, on_finding)
        for item, hits in self._prefetched(path, state, live):
            if item is IDLE:
                run.idle()
                continue
            run.feed(*item, hits=hits[0] if hits else None, nl=hits[1] if hits else None)  # type: ignore[misc]
        return self._result(state, run)

    def scan_whole(self, data: bytes, display: str) -> ScanResult:
        """Scan a small plain file already read whole: `data` is every byte of it, ending in a newline, with no
        line longer than the reader keeps. The same result as `scan` on that file, without the reader."""
        state = SourceState(display)
        state.bytes_read = len(data)
        run = ScanState(self, state, None)
        run.feed(data)
        return self._result(state, run)

    def _result(self, state: SourceState, run: ScanState) -> ScanResult:
        run.finish()
        problems = list(state.problems)
        if state.cut_lines:
            problems.append(f"{state.name}: {state.cut_lines} line(s) longer than 64 KiB were cut to their first 64 KiB")
        problems.extend(self.guard.messages)
        self.guard.messages = []
        return ScanResult(state.name, run.findings, run.markers, run.kv, run.facts, problems, run.lineno,
                          state.bytes_read, run.first_time, run.last_time, run.fact_lines, run.exits,
                          decide(state.name, run.findings, run.exits), run.quieted)

    def _prefetched(self, path: str, state: SourceState, live: bool | None) -> Iterator[tuple[object, tuple | None]]:
        """Blocks of a source with their prefilter hits. For files, helper threads read and run the
        prefilter ahead (scan.readahead), so matching overlaps the Python work on the blocks before. A live
        pipe is read inline, so that quiet spells are seen, and so is a file of one block, which has nothing
        to read ahead (a thread would double its cost)."""
        if live or path == "-" or one_block(path):
            for item in blocks(path, state, live=live):
                yield item, None
            return
        from sigclass.scan.readahead import read_ahead  # threads: only for files of more than one block

        yield from read_ahead(path, state, self.engine.scan)

    def scan_text(self, text: str, *, source: str = "<text>") -> ScanResult:
        """Scan an in-memory string."""
        state = SourceState(source)
        run = ScanState(self, state, None)
        data = text.encode("utf-8", "replace")
        if b"\x00" in data:
            data = data.replace(b"\x00", b"")  # as the reader does: a hole of NUL bytes is no text
        step = 4 << 20
        pos = 0
        while pos < len(data):
            end = data.rfind(b"\n", pos, pos + step)
            end = len(data) if end == -1 or pos + step >= len(data) else end + 1
            run.feed(data[pos:end])
            pos = end
        run.finish()
        return ScanResult(source, run.findings, run.markers, run.kv, run.facts, list(state.problems) + self.guard.messages,
                          run.lineno, len(data), run.first_time, run.last_time, run.fact_lines, run.exits,
                          decide(source, run.findings, run.exits), run.quieted)

    # ------------------------------------------------------------------ classification
    def _block_any(self, sig: Signature) -> tuple[list, dict[int, tuple[int, object]]]:
        """A family's `any` patterns that name it from one block (not counted ones), and, by id, each one's
        place in that list and the pattern; made once."""
        got = self._block_any_memo.get(sig.id)
        if got is None:
            pats = [p for p in sig.any if p.index not in self.counted]
            got = self._block_any_memo[sig.id] = (pats, {p.index: (n, p) for n, p in enumerate(pats)})
        return got

    def _line_any(self, by_id: dict[int, tuple[int, object]], lp: set[int], ln: str) -> bool:
        """Whether one of a family's block patterns the prefilter matched on a line (ids lp) matches it,
        tried in the family's order (what trying every pattern of the family whose id is in lp does)."""
        mine = [by_id[i] for i in lp if i in by_id]
        if not mine:
            return False
        if len(mine) > 1:
            mine.sort(key=lambda x: x[0])
        hit = self.guard.hit
        return any(hit(p, ln) for _, p in mine)

    def ruled_out(self, sig, lines: list[str], text: str | None = None) -> bool:
        """Whether a block's lines hold one that the family's `none` patterns name: the ledger's word that the block
        is not that family (for its own patterns and for a learned guess alike). `text` is the lines joined."""
        guard = self.guard
        text = "\n".join(lines) if text is None else text
        return any(not guard.absent(p, text) and any(guard.hit(p, ln) for ln in lines) for p in sig.none)

    def classify_block(self, lines: list[str], pids: set[int], facts: Callable[[str], str | None],
                       line_pids: list[set[int] | None] | None = None) -> tuple[Signature, list[str], float] | None:
        """The best family for a block. With line_pids (the prefilter's ids per line), a family's `any`
        patterns are confirmed only on the lines the prefilter matched them on."""
        if self.signatures == SignatureMode.LEARNED:
            return None
        confirm_all = line_pids is None
        if line_pids is None:
            line_pids = [None] * len(lines)
        cands = {self.any_family[p] for p in pids if p in self.any_family}
        cands.update(s.id for s in self.multiline_families)
        best = None
        best_key = None
        text = "\n".join(lines)  # the block's text: a pattern whose strings it lacks matches none of its lines
        guard = self.guard
        for fid in cands:
            sig = self.ledger[fid]
            if not sig.active or sig.min_count > 1:
                continue
            block_any, by_id = self._block_any(sig)
            if confirm_all:
                ev = [ln for ln in lines if any(guard.hit(p, ln) for p in block_any)]
            else:
                ev = [ln for ln, lp in zip(lines, line_pids) if lp and self._line_any(by_id, lp, ln)]
            if not ev and sig.multiline:
                if any(guard.search(p, text) for p in sig.multiline):
                    ev = [ln for ln in lines if ln.strip()][:3]
            if not ev:
                continue
            if any(guard.absent(p, text) or not any(guard.hit(p, ln) for ln in lines) for p in sig.all):
                continue
            if sig.none and self.ruled_out(sig, lines, text):
                continue
            ok = True
            for name, rx in sig.require:
                v = facts(name)
                if v is None or not self.guard.search_value(rx, v):
                    ok = False
                    break
            if not ok:
                continue
            prefer = sum(1 for name, rx in sig.prefer
                         if (v := facts(name)) is not None and self.guard.search_value(rx, v))
            key = (sig.priority, prefer, len(ev))
            if best_key is None or key > best_key:
                best, best_key = (sig, ev, 1.0), key
        return best
