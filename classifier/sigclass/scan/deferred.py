"""Side hits resolved when they are needed, not on every line that might matter.

A fact is last-value-wins per (fact name, worker): of all the lines that
might set one, only the last that does counts. So fact lines are kept as raw
bytes, per (fact name, worker), and the fact regexes run only when a finding,
the learned model or the end of the source asks for the facts. The worker of
a line without a prefix is known from its bytes alone (every worker prefix
starts with `[`, `(` or a digit); only the others are split.

`key=value` fields (`worker=`, `rank=`, `gpu=`) are first-value-wins per key:
a line whose fields, read from its raw bytes, are all known already is
skipped without being decoded.
"""

from __future__ import annotations

from bisect import bisect_left
import re
from typing import Callable

from sigclass.scan.triggers import G_KV, KV
from sigclass.text.lines import Line, split_line

# the first byte of every worker prefix (text.prefixes); a test checks the prefix table against it
PREFIX_FIRST = frozenset(b"[(0123456789")

# every key=value field a decoded line could yield, and possibly more (no separator needed before the key)
KV_BYTES = re.compile(rb"(worker|rank|gpu)=[A-Za-z0-9_.-]")

PENDING_CAP = 32  # lines kept per (fact name, worker) before that key is resolved on the spot


# the prefixes whose first byte may be a letter (text.prefixes), or more: a host before a rank prefix
# (`node1: [rank3]: `, LEAD), pdsh's host before torchrun's tee prefix (`gpu187:2: `) and alone (`worker-1: `),
# srun's padded and heterogeneous-job labels (` 3: `, `P1 3: `), Docker Compose's service column (`vllm-1  | `),
# colour codes in caret notation (`^[[36m`)
HOST_FIRST = re.compile(rb"[A-Za-z0-9][\w.-]*: \[(?:rank|default)[0-9]|[A-Za-z][\w-]*:[0-9]{1,4}: "
                        rb"|[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+: | {1,2}[0-9]{1,2}: |P[0-9]{1,3} +[0-9]{1,4}: "
                        rb"|[A-Za-z][\w.-]{1,62}  +\| |\^\[\[")


def unprefixed(raw: bytes) -> bool:
    """True when the line's first bytes start no worker prefix (raw is not empty)."""
    return raw[0] not in PREFIX_FIRST and HOST_FIRST.match(raw) is None


def plain(raw: bytes) -> bool:
    """True when a line has no worker prefix, known from its bytes: split_line would leave it whole."""
    return bool(raw) and unprefixed(raw) and b"\x1b" not in raw and b"\r" not in raw


def decode(raw: bytes) -> Line:
    return split_line(raw.decode("utf-8", "replace"))


def content_of(raw: bytes | Line, heads: "Heads") -> str:
    """A line's content (what the fact regexes read: the line less its worker prefix), split only when its
    bytes cannot tell."""
    if isinstance(raw, Line):
        return raw.content
    if raw and b"\x1b" not in raw and b"\r" not in raw:
        if unprefixed(raw):
            return raw.decode("utf-8", "replace")
        if raw[0] == 0x28:
            h = heads.head(raw)
            if h is not None and (len(raw) <= h[0] or raw[h[0]] not in PREFIX_FIRST):
                return raw[h[0]:].decode("utf-8", "replace") if h[1] else raw.decode("utf-8", "replace")
    return decode(raw).content


class PendingFacts:
    """Fact lines not yet run through their regexes: (fact name, worker) -> [(order, pattern, line)]."""

    __slots__ = ("lines", "seq", "heads")

    def __init__(self, heads: "Heads | None" = None) -> None:
        self.lines: dict[tuple[str, str], list[tuple[int, object, bytes | Line]]] = {}
        self.seq = 0
        self.heads = heads if heads is not None else Heads()

    def add(self, pat, worker: str, line: bytes | Line, facts: dict[str, dict[str, str]],
            search: Callable) -> None:
        key = (pat.fact, worker)
        self.seq += 1
        got = self.lines.get(key)
        if got is None:
            self.lines[key] = [(self.seq, pat, line)]
            return
        got.append((self.seq, pat, line))
        if len(got) >= PENDING_CAP:
            # later lines of one key overwrite earlier ones: resolving it now gives what resolving it later would
            self._resolve_key(key, self.lines.pop(key), facts, search)

    def resolve(self, facts: dict[str, dict[str, str]], search: Callable) -> None:
        """Apply every pending fact line, keys in the order their first line came."""
        if not self.lines:
            return
        pending, self.lines = self.lines, {}
        for key, items in sorted(pending.items(), key=lambda kv: kv[1][0][0]):
            self._resolve_key(key, items, facts, search)

    def _resolve_key(self, key: tuple[str, str], items: list, facts: dict[str, dict[str, str]], search: Callable) -> None:
        name, worker = key
        for _, pat, line in reversed(items):
            m = search(pat, content_of(line, self.heads))
            value = pat.fact_value(m) if m is not None else None
            if value is not None:
                facts.setdefault(worker, {})[name] = value
                return


class Heads:
    """What a `(name pid=N) ` process prefix at the head of a line makes of it, memoised by the head's bytes.

    The process prefixes match no `)` before their own closing `) `, so whether a line starting with `(` has
    one, and whose it is, is decided by its bytes up to the first `)` and the byte after: split_line on that head
    alone gives the same prefix as on the whole line."""

    __slots__ = ("memo",)

    MAX = 4096

    def __init__(self) -> None:
        self.memo: dict[bytes, tuple[bool, str]] = {}

    def head(self, raw: bytes) -> tuple[int, bool, str] | None:
        """(end of the head, is it a prefix, its worker or ''), or None when the line needs a full split."""
        cut = raw.find(b")")
        if cut == -1:
            return None
        end = cut + 2
        got = self.memo.get(raw[:end])
        if got is None:
            ln = split_line(raw[:end].decode("utf-8", "replace"))
            got = (ln.content == "" and ln.prefix_kind is not None, ln.worker or "")
            if len(self.memo) >= self.MAX:
                self.memo.clear()
            self.memo[raw[:end]] = got
        return end, got[0], got[1]

    def worker(self, raw: bytes) -> str | None:
        """A line's worker ('' for none) from its bytes, or None when only a full split can tell."""
        if not raw or b"\x1b" in raw or b"\r" in raw:
            return None
        c = raw[0]
        if unprefixed(raw):
            return ""
        if c != 0x28:  # `(`
            return None
        h = self.head(raw)
        if h is None:
            return None
        end, is_prefix, worker = h
        if not is_prefix:
            return ""
        if len(raw) > end and raw[end] in PREFIX_FIRST:
            return None  # a second prefix may follow
        return worker

    def kv_known(self, raw: bytes, kv: dict[str, str]) -> bool:
        """True when no key=value field the decoded line would yield is a new key (nothing could change)."""
        if b"\x1b" in raw or b"\r" in raw:
            return False
        h = None
        for m in KV_BYTES.finditer(raw):
            if m.group(1).decode() in kv:
                continue
            # a new key: fine only when it sits in a process prefix, which is stripped before fields are read
            if raw[:1] != b"(":
                return False
            if h is None:
                h = self.head(raw)
            if h is None or not h[1] or m.start() >= h[0]:
                return False
        return True


NL_ARRAY_MAX = 1 << 19  # newline offsets kept per block; a block of more, shorter lines is counted on demand
NL_PIECE = 64 << 10


def newline_offsets(buf: bytes):
    """The offsets of the newlines of a block, as a sorted numpy array (None for a block of very many
    lines). Computed one block ahead in the prefilter thread (numpy's loops run without the GIL), in pieces
    small enough that their temporaries never grow the heap."""
    import numpy as np

    a = np.frombuffer(buf, np.uint8)
    parts = []
    total = 0
    for i in range(0, len(a), NL_PIECE):
        got = np.flatnonzero(a[i : i + NL_PIECE] == 10)
        total += len(got)
        if total > NL_ARRAY_MAX:
            return None
        parts.append(got + i if i else got)
    return np.concatenate(parts) if parts else np.zeros(0, np.intp)


def line_counter(buf: bytes, nl, fallback: Callable[[bytes, int, int], int]) -> Callable[[int, int], int]:
    """Newlines in buf[a:b]: from the block's newline offsets when the prefilter thread gave them, else counted
    in the bytes."""
    if nl is None:
        return lambda a, b: fallback(buf, a, b)
    offsets: list[int] = []

    def count(a: int, b: int) -> int:
        if a >= b:
            return 0
        if not offsets and len(nl):
            offsets.extend(nl.tolist())  # bisect on a list: numpy's per-call overhead is ~20x a lookup
        return bisect_left(offsets, b) - bisect_left(offsets, a)

    return count


class DeferredSideHits:
    """Side hits of lines that can only be facts or key=value fields (a part of `ScanState`)."""

    def _lazy_line(self, raw: bytes, pids: set[int]) -> None:
        """A line no open block needs and that starts none: it can only set facts or key=value fields."""
        ln: Line | None = None
        heads: Heads = self.heads
        fact_pat = self.sc.fact_pat
        worker = None
        for pid in pids:
            fp = fact_pat.get(pid)
            if fp is None:
                continue
            if worker is None:
                worker = heads.worker(raw)
                if worker is None:
                    ln = decode(raw)
                    worker = ln.worker or ""
            self.pending_facts.add(fp, worker, ln if ln is not None else raw, self.facts, self.sc.guard.search)
        if G_KV in pids and not heads.kv_known(raw, self.kv):
            if ln is None:
                ln = decode(raw)
            self._kv_fields(ln)

    def _kv_fields(self, ln: Line) -> None:
        for m in KV.finditer(ln.content):
            self.kv.setdefault(m["key"], m["val"])

    def _fact_line(self, ln: Line, pid: int) -> None:
        """A fact pattern's line that was split already (it went through the block logic)."""
        self.pending_facts.add(self.sc.fact_pat[pid], ln.worker or "", ln, self.facts, self.sc.guard.search)

    def resolve_facts(self) -> dict[str, dict[str, str]]:
        """The source's facts so far, every pending fact line applied."""
        self.pending_facts.resolve(self.facts, self.sc.guard.search)
        return self.facts
