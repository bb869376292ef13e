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

import os
import queue
import re
import threading
import time as _time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterator


from sigclass.scan import prefilter
from sigclass.records import Finding
from sigclass.ledger.pack import Ledger, Signature
from sigclass.scan.reader import BLOCK, IDLE, SourceState, blocks
from sigclass.text.lines import Line, fingerprint, header_tag, parse_time, split_line

MATCH_TIMEOUT = 0.25
_DONE, _FAILED = object(), object()
GAP_LINES = 40  # a traceback with no line of its own for this many lines is closed
GAP_AFTER_EXC = 3  # ... and once its exception line was seen, after this many
MAX_BLOCK_LINES = 400
LIVE_QUIET = 0.3  # seconds: on a live pipe, a finished failure's stream this quiet means it has ended
MAX_MSG_LINES = 12  # continuation lines after an exception line

# Generic triggers: ids above the ledger's pattern ids.
_G = 1 << 20
G_TB, G_EXC, G_CPP, G_FATAL, G_ABORT, G_MARK, G_KV = range(_G, _G + 7)
GENERIC = {
    G_TB: r"Traceback \(most recent call last\)",
    # an exception name where a message can start: line start, or after a prefix/header (`]`, `:`, `)`, `>`,
    # a log level), not quoted mid-sentence as in `retrying (ConnectionResetError: ...)`
    G_EXC: r"(?:^|[\]:)>] ?|[A-Z]{4,8}:? |- )[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|\.error)(?:\[[^\]]*\])?: ",
    G_CPP: r"terminate called after throwing an instance of",
    G_FATAL: r"Fatal Python error: ",
    G_ABORT: r"Aborted +\(core dumped\)",
    G_MARK: r"[Ss]hard[ =_-]?[0-9]+",
    G_KV: r"(?:worker|rank|gpu)=[A-Za-z0-9_.-]+",
}
BLOCK_STARTERS = {G_TB, G_EXC, G_CPP, G_FATAL, G_ABORT}

_EXC_LINE = re.compile(r"(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|\.error)|[A-Z]\w*Error)(?:\[[^\]]*\])?(?::|$)")
_CHAIN = re.compile(r"(?:The above exception was the direct cause|During handling of the above exception"
                    r"|-- Process \d+ terminated with the following error)")  # the last: torch.multiprocessing.spawn
_CPP_CONT = re.compile(r"(?:what\(\):|Exception raised from|frame #\d+:|terminate called|\*\*\* |\[\d+\] )")
_MARKER = re.compile(
    r"(?:\[\s*)?[Ss]hard[ =_-]?(?P<unit>\d+)\]?\s*[:\]]?\s*(?:[-:|]\s*)?(?:status=)?(?P<verb>[A-Za-z]+)"
)
# the verb first: `Starting shard_3 (1024 prompts)`
_MARKER_PRE = re.compile(r"(?P<verb>[A-Za-z][a-z]+)\s+\[?[Ss]hard[ =_-]?(?P<unit>\d+)")  # not a log level
_START_VERBS = {"start", "starting", "started", "begin", "beginning", "running"}
_OK_VERBS = {"done", "finished", "completed", "complete", "succeeded", "success", "ok"}
_FAIL_VERBS = {"failed", "error", "errored", "aborted", "failure"}
# a line that starts a new log record even without a header we know
_NEW_RECORD = re.compile(
    r"(?:\[?(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL|FATAL|TRACE|NOTICE)(?:[\s:|\]]|$)|\[?\d{4}-\d\d-\d\d|[IWEF]\d{4} \d"
    r"|[^|]{0,80}\d+%\||(?:Epoch|epoch|Step|step) \d)"
)
_KV = re.compile(r"(?:^|[\s,;(\[])(?P<key>worker|rank|gpu)=(?P<val>[A-Za-z0-9_.-]+)")


@dataclass
class Marker:
    """A unit start/end marker line (`[shard 17] starting`, `shard=3 done`)."""

    unit: str
    kind: str  # start | ok | failed
    line: int
    time: str | None
    worker: str | None
    stream: str
    text: str = ""  # the marker line (body), cut to 300 characters


@dataclass
class _Block:
    stream: str
    worker: str | None
    kind: str  # tb | line | cpp
    phase: str  # frames | exc | msg | chain
    tag: str
    header: str
    start: int
    last: int
    time: str | None
    unit: str | None
    lines: list[tuple[int, Line]] = field(default_factory=list)
    line_pids: list[set[int] | None] = field(default_factory=list)  # the prefilter's pattern ids, per line
    pids: set[int] = field(default_factory=set)
    msg_lines: int = 0
    wall: float = 0.0
    shaped: bool = False  # it looks like a failure by its shape alone
    own_time: bool = True  # its first line carries a timestamp of its own


@dataclass
class ScanResult:
    source: str
    findings: list[Finding]
    markers: list[Marker]
    workers_kv: dict[str, str]  # key -> value of worker=/rank=/gpu= lines
    facts: dict[str, dict[str, str]]
    problems: list[str]
    lines: int
    bytes: int
    first_time: str | None = None
    last_time: str | None = None


class _PatternGuard:
    """Runs ledger regexes with a time limit; a pattern that times out is switched off and named."""

    def __init__(self) -> None:
        self.disabled: set[int] = set()
        self.messages: list[str] = []

    def search(self, pat, text: str):
        if pat.index in self.disabled:
            return None
        try:
            return pat.compiled.search(text, timeout=MATCH_TIMEOUT)
        except TimeoutError:
            self.disabled.add(pat.index)
            msg = (f"{pat.location}: signature {pat.family} pattern timed out after {MATCH_TIMEOUT}s and is "
                   "switched off for this run; rewrite it without nested repetition")
            self.messages.append(msg)
            warnings.warn(msg, stacklevel=2)
            return None


class Scanner:
    """Compiled once per ledger; scans any number of sources."""

    def __init__(self, ledger: Ledger, *, engine: str | None = None, signatures: str = "both",
                 learned: Callable[[list[str]], tuple[str, float] | None] | None = None) -> None:
        self.ledger = ledger
        self.signatures = signatures
        self.learned = learned
        if learned is not None and hasattr(learned, "set_mode"):
            learned.set_mode(signatures)  # a model may keep one abstain threshold per mode
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
                items.append((p.index, p.source, f"{p.location} ({sig.id})"))
            for p in sig.facts:
                self.fact_pat[p.index] = p
                items.append((p.index, p.source, f"{p.location} ({sig.id} fact {p.fact})"))
        for gid, src in GENERIC.items():
            items.append((gid, src, f"built-in trigger {gid - _G}"))
        self.engine = prefilter.build(items, engine)
        self.multiline_families = [s for s in ledger if s.active and s.multiline]
        self.guard = _PatternGuard()

    # ------------------------------------------------------------------ API
    def scan(self, path: str, *, display: str | None = None, on_finding: Callable[[Finding], None] | None = None,
             live: bool | None = None) -> ScanResult:
        """Scan one source ('-' is stdin). Raises InputError when it cannot be opened."""
        state = SourceState(display or ("<stdin>" if path == "-" else path))
        run = _SourceScan(self, state, on_finding)
        for item, hits in self._prefetched(path, state, live):
            if item is IDLE:
                run.idle()
                continue
            run.feed(*item, hits=hits)  # type: ignore[misc]
        run.finish()
        problems = list(state.problems)
        if state.cut_lines:
            problems.append(f"{state.name}: {state.cut_lines} line(s) longer than 64 KiB were cut to their first 64 KiB")
        problems.extend(self.guard.messages)
        self.guard.messages = []
        return ScanResult(state.name, run.findings, run.markers, run.kv, run.facts, problems, run.lineno,
                          state.bytes_read, run.first_time, run.last_time)

    def _prefetched(self, path: str, state: SourceState, live: bool | None) -> Iterator[tuple[object, dict | None]]:
        """Blocks of a source with their prefilter hits. For files, a helper thread reads and runs the
        prefilter one block ahead (Hyperscan and file reads release the GIL), so matching overlaps the
        Python work on the block before. A live pipe is read inline, so that quiet spells are seen, and
        so is a file of one block, which has nothing to read ahead (a thread would double its cost)."""
        if live or path == "-" or _one_block(path):
            for item in blocks(path, state, live=live):
                yield item, None
            return
        q: queue.Queue = queue.Queue(maxsize=2)
        stop = threading.Event()

        def produce() -> None:
            try:
                for item in blocks(path, state, live=False):
                    if stop.is_set():
                        return
                    q.put((item, None if item is IDLE else self.engine.scan(item[0])))  # type: ignore[index]
            except BaseException as exc:  # handed to the consumer, which raises it
                q.put((_FAILED, exc))
                return
            q.put((_DONE, None))

        worker = threading.Thread(target=produce, name="sigclass-prefilter", daemon=True)
        worker.start()
        try:
            while True:
                item, hits = q.get()
                if item is _DONE:
                    return
                if item is _FAILED:
                    raise hits  # type: ignore[misc]
                yield item, hits
        finally:
            stop.set()
            while worker.is_alive():
                try:
                    q.get_nowait()
                except queue.Empty:
                    worker.join(0.01)

    def scan_text(self, text: str, *, source: str = "<text>") -> ScanResult:
        """Scan an in-memory string."""
        state = SourceState(source)
        run = _SourceScan(self, state, None)
        data = text.encode("utf-8", "replace")
        step = 4 << 20
        pos = 0
        while pos < len(data):
            end = data.rfind(b"\n", pos, pos + step)
            end = len(data) if end == -1 or pos + step >= len(data) else end + 1
            run.feed(data[pos:end])
            pos = end
        run.finish()
        return ScanResult(source, run.findings, run.markers, run.kv, run.facts, list(state.problems) + self.guard.messages,
                          run.lineno, len(data), run.first_time, run.last_time)

    # ------------------------------------------------------------------ classification
    def classify_block(self, lines: list[str], pids: set[int], facts: Callable[[str], str | None],
                       line_pids: list[set[int] | None] | None = None) -> tuple[Signature, list[str], float] | None:
        """The best family for a block. With line_pids (the prefilter's ids per line), a family's `any`
        patterns are confirmed only on the lines the prefilter matched them on."""
        if self.signatures == "learned":
            return None
        confirm_all = line_pids is None
        if line_pids is None:
            line_pids = [None] * len(lines)
        cands = {self.any_family[p] for p in pids if p in self.any_family}
        cands.update(s.id for s in self.multiline_families)
        best = None
        best_key = None
        text = None
        for fid in cands:
            sig = self.ledger[fid]
            if not sig.active or sig.min_count > 1:
                continue
            block_any = [p for p in sig.any if p.index not in self.counted]
            if confirm_all:
                ev = [ln for ln in lines if any(self.guard.search(p, ln) for p in block_any)]
            else:
                ev = [ln for ln, lp in zip(lines, line_pids)
                      if lp and any(p.index in lp and self.guard.search(p, ln) for p in block_any)]
            if not ev and sig.multiline:
                text = text if text is not None else "\n".join(lines)
                if any(self.guard.search(p, text) for p in sig.multiline):
                    ev = [ln for ln in lines if ln.strip()][:3]
            if not ev:
                continue
            if any(not any(self.guard.search(p, ln) for ln in lines) for p in sig.all):
                continue
            if any(self.guard.search(p, ln) for p in sig.none for ln in lines):
                continue
            ok = True
            for name, rx in sig.require:
                v = facts(name)
                if v is None or not rx.search(v):
                    ok = False
                    break
            if not ok:
                continue
            prefer = sum(1 for name, rx in sig.prefer if (v := facts(name)) is not None and rx.search(v))
            key = (sig.priority, prefer, len(ev))
            if best_key is None or key > best_key:
                best, best_key = (sig, ev, 1.0), key
        return best


class _SourceScan:
    """The state of one source being scanned."""

    def __init__(self, scanner: Scanner, state: SourceState, on_finding: Callable[[Finding], None] | None) -> None:
        self.sc = scanner
        self.state = state
        self.on_finding = on_finding
        self.lineno = 0  # lines fully consumed so far
        self.open: dict[str, _Block] = {}
        self.findings: list[Finding] = []
        self.roots: list[Finding] = []
        self.markers: list[Marker] = []
        self.kv: dict[str, str] = {}
        self.facts: dict[str, dict[str, str]] = {}
        self.counters: dict[tuple[str, str | None], Finding] = {}
        self.pending: list[Finding] = []
        self._lo = 0  # where the current span starts: look-backs stop there
        self._hits: dict[int, set[int]] = {}
        self._cur: tuple[bytes, int, Line] | None = None
        self.bytes_seen = 0
        self.counts: dict[tuple[str, str | None], list] = {}
        self.declined: set[tuple[str, str | None]] = set()  # counted evidence the learned model abstained on
        self.last_time: str | None = None
        self.first_time: str | None = None
        self.year: int | None = None
        self.live_clock = _time.monotonic

    # ------------------------------------------------------------------ feeding
    def feed(self, buf: bytes, start: int = 0, end: int | None = None, hits: dict[int, set[int]] | None = None) -> None:
        """Process the whole lines in buf[start:end] (the rest of buf is not looked at); hits, when
        given, are the prefilter's answer for the whole of buf."""
        n = len(buf) if end is None else end
        self._lo = start
        if hits is None:
            hits = self.sc.engine.scan(buf)
        if start or n != len(buf):
            hits = {k: v for k, v in hits.items() if start <= k < n}
        self._hits = hits
        if self.first_time is None and self.lineno < 50:
            self._first_time_from_head(buf, start, n)
        self.bytes_seen += n - start
        starts = sorted(hits)
        pos = start
        hi = 0
        lineno = self.lineno
        nstarts = len(starts)
        count = _newlines if self.bytes_seen > (8 << 20) else _bytes_newlines
        while pos < n:
            if not self.open:
                while hi < nstarts and starts[hi] < pos:
                    hi += 1
                if hi >= nstarts:
                    lineno += count(buf, pos, n)
                    pos = n
                    break
                target = starts[hi]
                lineno += count(buf, pos, target)
                pos = target
            le = buf.find(b"\n", pos, n)
            le = n if le == -1 else le
            pids = hits.get(pos)
            self._line(buf, pos, le, lineno + 1, pids)
            lineno += 1
            pos = le + 1
        self.lineno = lineno
        if self.state.live and self.open:
            # on a live pipe, a failure whose exception line has been seen ends when its stream goes quiet,
            # even while other workers keep writing
            now = self.live_clock()
            for stream, blk in list(self.open.items()):
                if blk.phase not in ("frames", "chain") and now - blk.wall > LIVE_QUIET:
                    self._close(stream)
            self._release()
        self._update_time_from_tail(buf, start, n)

    def idle(self) -> None:
        """A live pipe went quiet: every open block has ended."""
        for stream in list(self.open):
            self._close(stream)
        self._release()

    def finish(self) -> None:
        for stream in list(self.open):
            self._close(stream)
        self._release()

    # ------------------------------------------------------------------ per line
    def _line(self, buf: bytes, ls: int, le: int, lineno: int, pids: set[int] | None) -> None:
        raw = buf[ls:le].decode("utf-8", "replace")
        ln = split_line(raw)
        if ln.line_override is not None:
            lineno = ln.line_override
        self._cur = (buf, ls, ln)  # for time_of: timestamps are parsed only where a record needs one
        if pids:
            self._side_hits(ln, lineno, pids)
        # expire blocks of other streams that have been quiet for too long
        for stream, blk in list(self.open.items()):
            if stream != ln.stream and lineno - blk.last > (GAP_LINES if blk.phase == "frames" else GAP_AFTER_EXC):
                self._close(stream)
        blk = self.open.get(ln.stream)
        if blk is not None:
            if self._continues(blk, ln, pids):
                blk.lines.append((lineno, ln))
                blk.line_pids.append(pids)
                blk.last = lineno
                blk.wall = self.live_clock()
                if pids:
                    blk.pids |= pids
                if len(blk.lines) >= MAX_BLOCK_LINES:
                    self._close(ln.stream)
                return
            self._close(ln.stream)
        if pids and self._starts_block(ln, pids):
            self._open(buf, ls, ln, lineno, pids)

    def _side_hits(self, ln: Line, lineno: int, pids: set[int]) -> None:
        for pid in pids:
            fp = self.sc.fact_pat.get(pid)
            if fp is not None:
                m = self.sc.guard.search(fp, ln.content)
                if m is not None and m.group(fp.fact) is not None:
                    self.facts.setdefault(ln.worker or "", {})[fp.fact] = m.group(fp.fact)
        if G_MARK in pids:
            for rx in (_MARKER, _MARKER_PRE):
                # shard-first on the whole line (a log header may swallow a `[shard 3]` tag); verb-first on the body
                m = rx.search(ln.content if rx is _MARKER else ln.body)
                verb = m["verb"].lower() if m else ""
                kind = ("start" if verb in _START_VERBS else "ok" if verb in _OK_VERBS
                        else "failed" if verb in _FAIL_VERBS else None)
                if kind:
                    self.markers.append(Marker(str(int(m["unit"])), kind, lineno, self._cur_time(), ln.worker, ln.stream,
                                               ln.body.strip()[:300]))
                    break
        if G_KV in pids:
            for m in _KV.finditer(ln.content):
                self.kv.setdefault(m["key"], m["val"])
        for pid in pids:
            need = self.sc.counted.get(pid)
            if need is not None:
                self._count(self.sc.any_family[pid], pid, need, ln, lineno)

    def _count(self, fam: str, pid: int, need: int, ln: Line, lineno: int) -> None:
        sig = self.sc.ledger[fam]
        learned_mode = self.sc.signatures == "learned"
        if learned_mode and (self.sc.learned is None or (fam, ln.worker) in self.declined):
            return
        family_wide = sig.min_count > 1  # all the family's patterns feed one counter
        pats = [p for p in sig.any if p.index in self.sc.counted] if family_wide else \
            [p for p in sig.any if p.index == pid]
        if not any(self.sc.guard.search(p, ln.content) for p in pats):
            return
        if any(self.sc.guard.search(p, ln.content) for p in sig.none):
            return
        key = (fam, ln.worker) if family_wide else (fam, ln.worker, pid)
        if (fam, ln.worker) in self.counters and key != (fam, ln.worker):
            key = (fam, ln.worker)  # the family already fired for this worker: later lines add to that finding
        done = self.counters.get(key)
        if done is not None:
            done.count += 1
            done.lines.append(lineno)
            done.end_line = lineno
            return
        seen = self.counts.setdefault(key, [])
        seen.append((lineno, ln, self._cur_time()))
        if len(seen) < need:
            return
        first_line, _, first_time = seen[0]
        ev = [x.content for _, x, _ in seen[:3]]
        method, conf = "regex", 1.0
        if learned_mode:
            # in learned mode the counted lines are only evidence: the model says what they are, or nothing
            guess = self._ask_learned([x.body for _, x, _ in seen], ln.worker)
            if guess is None or guess[0] not in self.sc.ledger:
                self.declined.add((fam, ln.worker))
                del self.counts[key]
                return
            sig, method, conf = self.sc.ledger[guess[0]], "learned", guess[1]
        f = self._make(sig, ev, conf, method, first_line, lineno, first_time, ln.worker, ln.stream, None,
                       [x.content for _, x, _ in seen], [x.content for _, x, _ in seen[:1]])
        f.count = len(seen)
        f.lines = [a for a, _, _ in seen]
        self.counters[key] = f
        self.counters.setdefault((fam, ln.worker), f)
        del self.counts[key]
        self._emit(f)

    def _starts_block(self, ln: Line, pids: set[int]) -> bool:
        for p in pids:
            if p in BLOCK_STARTERS:
                if p == G_EXC and not _EXC_LINE.match(ln.body.lstrip()):
                    continue
                return True
            if p in self.sc.any_family and p not in self.sc.counted:
                return True
        return False

    def _open(self, buf: bytes, ls: int, ln: Line, lineno: int, pids: set[int]) -> None:
        body = ln.body
        if "Traceback (most recent call last)" in body:
            kind, phase = "tb", "frames"
        elif G_CPP in pids or _CPP_CONT.match(body.lstrip()):
            kind, phase = "cpp", "msg"
        else:
            kind, phase = "line", "msg"
        blk = _Block(ln.stream, ln.worker, kind, phase, header_tag(ln.header), ln.header, lineno, lineno,
                     self.time_of(buf, ls, ln), ln.unit, [], [], set(pids), 0, self.live_clock())
        blk.own_time = bool(ln.time_override) or parse_time(ln.content, self.year) is not None
        blk.shaped = kind in ("tb", "cpp") or bool(pids & {G_FATAL, G_ABORT}) or (
            G_EXC in pids and bool(_EXC_LINE.match(body.lstrip())))
        if kind != "tb":
            # a headless traceback: take the frame lines just above the exception line
            above = self._frames_above(buf, ls, ln, lineno)
            blk.lines.extend((no, x) for no, x, _ in above)
            blk.line_pids.extend(lp for _, _, lp in above)
            if blk.lines:
                blk.start = blk.lines[0][0]
                blk.shaped = blk.shaped or G_EXC in pids
        blk.lines.append((lineno, ln))
        blk.line_pids.append(pids)
        self.open[ln.stream] = blk

    def _frames_above(self, buf: bytes, ls: int, ln: Line, lineno: int) -> list[tuple[int, Line, set[int] | None]]:
        out: list[tuple[int, Line, set[int] | None]] = []
        end = ls - 1
        back = 0
        lo = self._lo
        while end > lo and back < 60 and len(out) < 40:
            start = max(buf.rfind(b"\n", lo, end) + 1, lo)
            prev = split_line(buf[start:end].decode("utf-8", "replace"))
            back += 1
            if prev.stream != ln.stream:
                end = start - 1
                continue
            b = prev.body
            if b.startswith((" ", "\t")) and b.strip():
                out.append((lineno - back, prev, self._hits.get(start)))
                end = start - 1
                continue
            if "Traceback (most recent call last)" in b:
                out.append((lineno - back, prev, self._hits.get(start)))
            break
        out.reverse()
        return out

    def _continues(self, blk: _Block, ln: Line, pids: set[int] | None) -> bool:
        body = ln.body
        stripped = body.strip()
        same_record = not ln.header or ln.header == blk.header or (":" in blk.tag and header_tag(ln.header) == blk.tag)
        if blk.kind == "tb" and blk.phase in ("frames", "chain"):
            if not stripped:
                return True
            if body[:1] in (" ", "\t") or "Traceback (most recent call last)" in body or _CHAIN.search(body):
                if "Traceback (most recent call last)" in body:
                    blk.phase = "frames"
                return True
            if blk.phase == "chain":
                return False
            blk.phase = "exc"
            blk.shaped = True
            blk.msg_lines = 0
            return True
        # after the exception line, or in a one-line / C++ block
        if "Traceback (most recent call last)" in body:
            if blk.kind == "tb" and body.lstrip().startswith("Original Traceback"):
                # torch re-raises a DataLoader worker's exception with the worker's traceback in its message
                blk.phase = "frames"
                return True
            if blk.kind != "tb":  # `ERROR ... failed: X` (or kernel assertion lines) then its traceback: one failure
                blk.kind, blk.phase = "tb", "frames"
                return True
            if blk.kind == "tb" and blk.phase == "chain_wait":
                blk.phase = "frames"
                return True
            return False
        if _CHAIN.search(body):
            blk.phase = "chain" if blk.kind == "tb" else blk.phase
            return blk.kind == "tb"
        if not stripped:
            if blk.kind == "tb":
                blk.phase = "chain_wait"
                return True
            return False
        if blk.phase == "chain_wait":
            return False
        if _CPP_CONT.match(stripped):
            return True
        if not same_record or _NEW_RECORD.match(stripped):
            return False
        if blk.msg_lines >= MAX_MSG_LINES:
            return False
        blk.msg_lines += 1
        return True

    # ------------------------------------------------------------------ closing
    def _close(self, stream: str) -> None:
        blk = self.open.pop(stream, None)
        if blk is None:
            return
        # drop trailing blank lines
        while blk.lines and not blk.lines[-1][1].body.strip():
            blk.lines.pop()
        if not blk.lines:
            return
        texts = [ln.content for _, ln in blk.lines]
        bodies = [ln.body for _, ln in blk.lines]
        worker = blk.worker

        def fact(name: str) -> str | None:
            for key in (worker or "", ""):
                v = self.facts.get(key, {}).get(name)
                if v is not None:
                    return v
            for d in self.facts.values():
                if name in d:
                    return d[name]
            return None

        if not blk.own_time:
            # the failure's own first timestamp beats the one inherited from another stream's line above
            for _, x in blk.lines[:20]:
                t = parse_time(x.content, self.year)
                if t is not None:
                    blk.time = t
                    break
        res = self.sc.classify_block(texts, blk.pids, fact, blk.line_pids)
        end_line = blk.lines[-1][0]
        unit = blk.unit
        if res is not None:
            sig, ev, conf = res
            key_lines = [_strip_ts(e) for e in ev[-1:]]
            f = self._make(sig, ev[:5], conf, "regex", blk.start, end_line, blk.time, worker, stream, unit, bodies, key_lines)
            self._emit(f)
            return
        if self.sc.learned is not None and (blk.shaped or self.sc.signatures == "learned"):
            guess = self._ask_learned(bodies, worker)
            if guess is not None:
                fid, prob = guess
                sig = self.sc.ledger.signatures.get(fid)
                if sig is not None:
                    ev = _exception_lines(bodies)
                    f = self._make(sig, ev, prob, "learned", blk.start, end_line, blk.time, worker, stream, unit, bodies,
                                   [_strip_ts(e) for e in ev[:1]])
                    self._emit(f)
                    return
        if not blk.shaped:
            return
        ev = _exception_lines(bodies)
        f = Finding(
            family="unknown", title="Failure no signature explains", role="root", status="unknown",
            confidence=0.0, method="none", source=self.state.name, line=blk.start, end_line=end_line,
            time=blk.time, worker=worker, evidence=ev, fingerprint=fingerprint(["unknown", *ev[-2:]]),
            mitigation="", family_role="root", unit=unit, stream=stream, block=bodies,
        )
        self._emit(f)

    def _ask_learned(self, bodies: list[str], worker: str | None) -> tuple[str, float] | None:
        """The learned callback's guess; one that sets `wants_facts` also gets the source's facts for the worker."""
        if getattr(self.sc.learned, "wants_facts", False):
            facts = {**self.facts.get("", {}), **self.facts.get(worker or "", {})}
            return self.sc.learned(bodies, facts)  # type: ignore[call-arg, misc]
        return self.sc.learned(bodies)  # type: ignore[misc]

    def _make(self, sig: Signature, ev: list[str], conf: float, method: str, line: int, end: int, t: str | None,
              worker: str | None, stream: str, unit: str | None, bodies: list[str], key_lines: list[str]) -> Finding:
        facts = {}
        for d in (self.facts.get("", {}), self.facts.get(worker or "", {})):
            facts.update(d)
        return Finding(
            family=sig.id, title=sig.title, role=sig.role, status=sig.status, confidence=round(conf, 3),
            method=method, source=self.state.name, line=line, end_line=end, time=t, worker=worker,
            evidence=[e.strip() for e in ev], fingerprint=fingerprint([sig.id, *key_lines]),
            mitigation=sig.mitigation, probes=list(sig.probes), caveats=list(sig.caveats),
            supersedes=[{"id": s.id, "note": s.note} for s in sig.supersedes],
            superseded_by=[{"id": s.id, "note": s.note} for s in sig.superseded_by],
            family_role=sig.role, unit=unit, stream=stream, block=bodies, facts=facts,
        )

    def _emit(self, f: Finding) -> None:
        """Queue a finding; it is released once no earlier-starting block is still open."""
        self.pending.append(f)
        self._release()

    def _release(self) -> None:
        if not self.pending:
            return
        floor = min((b.start for b in self.open.values()), default=None)
        self.pending.sort(key=lambda f: f.line)
        while self.pending and (floor is None or self.pending[0].line < floor):
            self._publish(self.pending.pop(0))

    def _publish(self, f: Finding) -> None:
        if f.family_role == "secondary":
            # the latest root of the same worker; else, as in a distributed job, the latest root in the source
            root = next((r for r in reversed(self.roots) if r.worker == f.worker or r.worker is None or f.worker is None),
                        self.roots[-1] if self.roots else None)
            if root is not None:
                f.role = "secondary"
                f.root = root.pointer()
            else:
                f.role = "root"
        else:
            f.role = "root"
            self.roots.append(f)
        f.lines = [f.line] if not f.lines else f.lines
        self.findings.append(f)
        if self.on_finding is not None:
            self.on_finding(f)

    # ------------------------------------------------------------------ time
    def time_of(self, buf: bytes, ls: int, ln: Line) -> str | None:
        """The line's own timestamp, else the nearest one above it, else the last one seen."""
        if ln.time_override:
            return ln.time_override
        t = parse_time(ln.content, self.year)
        if t is not None:
            y = _year_in(ln.content)
            if y:
                self.year = y
        else:
            t = self._look_back_time(buf, ls)
        if t is not None:
            self.last_time = t
        return t

    def _cur_time(self) -> str | None:
        assert self._cur is not None
        buf, ls, ln = self._cur
        return self.time_of(buf, ls, ln)

    def _look_back_time(self, buf: bytes, ls: int) -> str | None:
        end = ls - 1
        lo = self._lo
        for _ in range(30):
            if end <= lo:
                break
            start = max(buf.rfind(b"\n", lo, end) + 1, lo)
            text = buf[start:end].decode("utf-8", "replace")[:200]
            t = parse_time(text, self.year)
            if t is not None:
                y = _year_in(text)
                if y:
                    self.year = y
                return t
            end = start - 1
        return self.last_time

    def _first_time_from_head(self, buf: bytes, lo: int, end: int) -> None:
        pos = lo
        for _ in range(50):
            if pos >= end:
                return
            nl = buf.find(b"\n", pos, end)
            nl = end if nl == -1 else nl
            ln = split_line(buf[pos:nl].decode("utf-8", "replace")[:300])
            t = ln.time_override or parse_time(ln.content, self.year)
            if t is not None:
                self.year = _year_in(ln.content) or self.year
                self.first_time = t
                return
            pos = nl + 1

    def _update_time_from_tail(self, buf: bytes, lo: int, end: int) -> None:
        for _ in range(10):
            if end <= lo:
                return
            start = max(buf.rfind(b"\n", lo, end - 1) + 1, lo)
            text = buf[start:end].decode("utf-8", "replace")[:200]
            t = parse_time(text, self.year)
            if t is not None:
                self.year = _year_in(text) or self.year
                self.last_time = t
                if self.first_time is None:
                    self.first_time = t
                return
            end = start


_NP = None


def _bytes_newlines(buf: bytes, a: int, b: int) -> int:
    return buf.count(b"\n", a, b)


def _newlines(buf: bytes, a: int, b: int) -> int:
    """Newlines in buf[a:b]; numpy (5x faster than bytes.count) for all but tiny spans. Used once a
    source has passed 8 MB, so that small logs never pay numpy's import."""
    if b - a < 4096:
        return buf.count(b"\n", a, b)
    global _NP
    if _NP is None:
        import numpy

        _NP = numpy
    return int(_NP.count_nonzero(_NP.frombuffer(buf, _NP.uint8, b - a, a) == 10))


_YEAR = re.compile(r"(?<!\d)(20\d\d)-\d\d-\d\d")
_TS_LEAD = re.compile(r"^\s*\[?\d{4}-\d\d-\d\d[T ][\d:.,]+Z?\]?\s*")


def _one_block(path: str) -> bool:
    try:
        return os.stat(path).st_size <= BLOCK
    except OSError:
        return True  # the reader raises the proper error


def _year_in(text: str) -> int | None:
    m = _YEAR.search(text)
    return int(m.group(1)) if m else None


def _strip_ts(text: str) -> str:
    return _TS_LEAD.sub("", text)


def _exception_lines(bodies: list[str]) -> list[str]:
    """The exception lines of a block (the last non-indented lines of each traceback)."""
    out = []
    for b in bodies:
        s = b.strip()
        if not s or b[:1] in (" ", "\t") or s.startswith(("Traceback (most recent call last)", "File \"")) or _CHAIN.search(s):
            continue
        if _EXC_LINE.match(s) or "error" in s.lower() or "fault" in s.lower() or "killed" in s.lower():
            out.append(s[:500])
    if not out:
        out = [b.strip()[:500] for b in bodies if b.strip()][-2:]
    return out[-4:]
