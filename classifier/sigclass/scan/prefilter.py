"""One multi-pattern pass over large blocks of bytes.

Patterns run in multi-line mode: `^` and `$` are the start and end of a line.

The scanner asks one question of every block: which lines match which
patterns. Engines, fastest first: Hyperscan (block mode, one database),
RE2 (one alternation per block, then a per-line check), and the pure-Python
``regex`` fallback. All give the same answers; a test runs the pack through
each. Patterns an engine cannot compile are run by the ``regex`` module over
the block, with a time limit, so they cost speed but never correctness.
"""

from __future__ import annotations

from collections import defaultdict
import re
import sys
from typing import Iterable
import warnings

import regex

from sigclass.folders import cache_dir
from sigclass.ledger.patterns import BLOCK_MATCH_TIMEOUT, SLOW, within_limit
from sigclass.scan.gate import GATE_BASE, Gated, split as gate_split
from sigclass.scan.tails import trim_tail

CACHE_KEEP = 16  # compiled databases kept in the cache folder


def prefilter_form(src: str) -> str:
    """The pattern as a plain regex the fast engines accept: named groups become plain groups."""
    return re.sub(r"\(\?P<[A-Za-z_]\w*>", "(?:", src)


def _cache_key(kind: str, version: str, items: list[tuple[int, str, str]]) -> str:
    import hashlib

    h = hashlib.sha256(f"{kind}\0{version}".encode())
    for pid, src, _ in items:
        h.update(f"\0{pid}\0{src}".encode())
    return f"{kind}-{h.hexdigest()[:24]}.db"


def _cache_read(key: str) -> bytes | None:
    d = cache_dir()
    if d is None:
        return None
    try:
        return (d / key).read_bytes()
    except OSError:
        return None


def _cache_write(key: str, data: bytes) -> None:
    """Best effort: a read-only home just means compiling again next time."""
    import os
    import tempfile

    d = cache_dir()
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, d / key)
        # keep the newest few databases (one per ledger variant in use)
        kind = key.split("-")[0]
        old = sorted(d.glob(f"{kind}-*.db"), key=lambda p: p.stat().st_mtime, reverse=True)[CACHE_KEEP:]
        for p in old:
            p.unlink(missing_ok=True)
    except OSError:
        pass


class _Engine:
    name = "base"

    def scan(self, buf: bytes, nl=None) -> dict[int, set[int]]:
        """Line start offset -> pattern ids; nl, when given, holds the offsets of the block's newlines.
        Safe to call from several threads at once."""
        raise NotImplementedError


def _line_start(buf: bytes, pos: int) -> int:
    return buf.rfind(b"\n", 0, pos) + 1


class _SlowPatterns:
    """Patterns run one by one with the regex module (with a timeout)."""

    def __init__(self, items: list[tuple[int, str, str]]) -> None:
        self.items = []
        for pid, src, label in items:
            try:
                self.items.append((pid, regex.compile(src.encode() if isinstance(src, str) else src, regex.MULTILINE), label))
            except regex.error as exc:
                warnings.warn(f"{label}: pattern does not compile and is skipped: {exc}", stacklevel=2)
        self.disabled: set[int] = set()

    @staticmethod
    def _run(rx, pid: int, buf: bytes, out: dict[int, set[int]]) -> bool:
        """All matches of one pattern in buf into out; False when the pattern itself is too slow."""
        def once() -> None:
            for m in rx.finditer(buf, timeout=BLOCK_MATCH_TIMEOUT):
                out[_line_start(buf, m.start())].add(pid)
                if m.end() == m.start():
                    break

        return within_limit(once, BLOCK_MATCH_TIMEOUT) is not SLOW

    def scan_into(self, buf: bytes, out: dict[int, set[int]]) -> None:
        for pid, rx, label in self.items:
            if pid in self.disabled:
                continue
            if self._run(rx, pid, buf, out):
                continue
            self.disabled.add(pid)
            warnings.warn(
                f"{label}: pattern took over {BLOCK_MATCH_TIMEOUT}s on one block and is switched off for this scan; "
                "rewrite it without nested repetition",
                stacklevel=2,
            )


_PID_BITS = 21  # pattern ids (ledger ids, and the built-in triggers at 1 << 20) fit in this many bits


def by_line(ends: list[tuple[int, int]], nl, out: dict[int, set[int]]) -> None:
    """Group (match end, pattern id) pairs by the start of their line, from the block's newline offsets:
    one vectorised pass instead of a search for each match's line."""
    import numpy as np

    a = np.array(ends, dtype=np.int64).reshape(-1, 2)
    at = np.maximum(a[:, 0] - 1, 0)  # the match's last byte
    i = nl.searchsorted(at)  # newlines before it
    starts = np.where(i > 0, nl[np.maximum(i - 1, 0)] + 1, 0)
    mask = (1 << _PID_BITS) - 1
    keys = np.sort((starts << _PID_BITS) | a[:, 1])
    if len(keys) > 1:
        # the distinct keys, in order: what np.unique gives, without its hash table (numpy 2.3+: ~10x slower
        # here) and without importing numpy.ma (~15 ms), which it does to look for a mask
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    for key in keys.tolist():
        out[key >> _PID_BITS].add(key & mask)


def _hs_form(src: str) -> bytes:
    """A pattern as the Hyperscan database holds it: plain groups, its trailing repetition trimmed."""
    return trim_tail(prefilter_form(src)).encode()


def cached_database(kind: str, exprs: list[bytes], ids: list[int]):
    """A multi-line Hyperscan block database of the expressions, from the cache folder when it was compiled
    before; raises when Hyperscan refuses one of them."""
    import hyperscan

    key = _cache_key(kind, getattr(hyperscan, "__version__", "?"), [(i, e.decode("latin-1"), "") for i, e in zip(ids, exprs)])
    cached = _cache_read(key)
    if cached is not None:
        try:
            return hyperscan.loadb(cached, mode=hyperscan.HS_MODE_BLOCK)
        except Exception:
            pass  # a stale or foreign cache file: compile again
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=ids, flags=[hyperscan.HS_FLAG_MULTILINE] * len(exprs))
    try:
        _cache_write(key, hyperscan.dumpb(db))
    except Exception:
        pass
    return db


def _gated_database(items: list[tuple[int, bytes]]):
    """The database of the gated patterns (scan.gate)."""
    return cached_database("hs-gated", [e for _, e in items], [pid for pid, _ in items])


class HyperscanEngine(_Engine):
    name = "hyperscan"

    def __init__(self, items: list[tuple[int, str, str]]) -> None:
        import hyperscan
        import threading

        self._local = threading.local()
        self._lock = threading.Lock()
        self._small_ids = all(pid >> _PID_BITS == 0 for pid, _, _ in items)  # by_line packs ids into bits
        self.has_db = False
        self.gated: Gated | None = None
        key = _cache_key("hs-g", getattr(hyperscan, "__version__", "?"), items)
        cached = _cache_read(key)
        if cached is not None:
            try:
                meta, blob = cached.split(b"\n", 1)
                slow_part, _, gated_part = meta.partition(b";")
                slow_ids = {int(x) for x in slow_part.split(b",") if x}
                gated_ids = {int(x) for x in gated_part.split(b",") if x}
                self.db = hyperscan.loadb(blob, mode=hyperscan.HS_MODE_BLOCK)
                self.db.scratch = hyperscan.Scratch(self.db)
                self.db.scan(b"warm-up line\n", match_event_handler=lambda *a: None)
                self.has_db = True
                self.slow = _SlowPatterns([it for it in items if it[0] in slow_ids])
                self._set_gated([(pid, _hs_form(src)) for pid, src, _ in items if pid in gated_ids])
                return
            except Exception:
                pass  # a stale or foreign cache file: rebuild
        ok: list[tuple[int, bytes, str]] = []
        slow: list[tuple[int, str, str]] = []
        for pid, src, label in items:
            # trimmed: a line matches as before, with one match end where `[0-9]+` gave one per digit
            form = prefilter_form(src)
            expr = trim_tail(form).encode()
            try:
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                db.compile(expressions=[expr], ids=[pid], flags=[hyperscan.HS_FLAG_MULTILINE])
                ok.append((pid, expr, form))
            except Exception:  # hyperscan.error: unsupported construct
                slow.append((pid, src, label))
        # patterns Hyperscan would run slowly over whole blocks: their plain strings instead (scan.gate)
        block, gated = gate_split(ok) if all(pid < GATE_BASE for pid, _, _ in items) else ([(pid, e) for pid, e, _ in ok], [])
        self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.has_db = bool(block)
        if block:
            self.db.compile(expressions=[e for _, e in block], ids=[i for i, _ in block],
                            flags=[hyperscan.HS_FLAG_MULTILINE] * len(block))
            try:
                meta = (",".join(str(pid) for pid, _, _ in slow) + ";" + ",".join(str(pid) for pid, _ in gated)).encode()
                _cache_write(key, meta + b"\n" + hyperscan.dumpb(self.db))
            except Exception:
                pass
        self.slow = _SlowPatterns(slow)
        self._set_gated(gated)

    def _set_gated(self, gated: list[tuple[int, bytes]]) -> None:
        self.gated = Gated(gated, _gated_database) if gated else None

    def scan(self, buf: bytes, nl=None) -> dict[int, set[int]]:
        ends: list[tuple[int, int]] = []
        append = ends.append
        gate_ends: list[int] = []
        gate_append = gate_ends.append

        def on_match(pid: int, start: int, end: int, flags: int, ctx: object) -> None:
            if pid >= GATE_BASE:
                gate_append(end)
            else:
                append((end, pid))

        if self.has_db:
            scratch = getattr(self._local, "scratch", None)
            if scratch is None:  # one scratch space per thread
                import hyperscan

                with self._lock:
                    base = getattr(self.db, "scratch", None) or hyperscan.Scratch(self.db)
                    scratch = self._local.scratch = base.clone()
            self.db.scan(buf, match_event_handler=on_match, scratch=scratch)
        out: dict[int, set[int]] = defaultdict(set)
        if gate_ends and self.gated is not None:
            self.gated.lines_into(buf, gate_ends, out)
        if nl is not None and len(ends) > 64 and self._small_ids:
            by_line(ends, nl, out)
            self.slow.scan_into(buf, out)
            return out
        ls, le = 0, -1  # the current line [ls, le)
        n = len(buf)
        for end, pid in ends:
            at = end - 1 if end else 0
            if not (ls <= at < le):
                ls = buf.rfind(b"\n", 0, at) + 1
                le = buf.find(b"\n", at)
                le = n if le == -1 else le
            out[ls].add(pid)
        self.slow.scan_into(buf, out)
        return out


class Re2Engine(_Engine):
    name = "re2"

    def __init__(self, items: list[tuple[int, str, str]]) -> None:
        import re2

        self.single: list[tuple[int, object]] = []
        slow: list[tuple[int, str, str]] = []
        opts = re2.Options()
        opts.max_mem = 64 << 20
        opts.never_nl = False
        for pid, src, label in items:
            try:
                self.single.append((pid, re2.compile(b"(?m)" + prefilter_form(src).encode(), opts)))
            except Exception:
                slow.append((pid, src, label))
        self.combined = None
        if self.single:
            alt = b"(?m)" + b"|".join(b"(?:" + prefilter_form(src).encode() + b")" for pid, src, _ in items if pid in {p for p, _ in self.single})
            self.combined = re2.compile(alt, opts)
        self.slow = _SlowPatterns(slow)

    def scan(self, buf: bytes, nl=None) -> dict[int, set[int]]:
        out: dict[int, set[int]] = defaultdict(set)
        if self.combined is not None:
            pos = 0
            n = len(buf)
            while pos < n:
                m = self.combined.search(buf, pos)
                if m is None:
                    break
                ls = _line_start(buf, m.start())
                le = buf.find(b"\n", m.start())
                le = n if le == -1 else le
                line = buf[ls:le]
                for pid, rx in self.single:
                    if rx.search(line):
                        out[ls].add(pid)
                pos = le + 1
        self.slow.scan_into(buf, out)
        return out


class RegexEngine(_Engine):
    """Pure-Python fallback: the regex module, one pattern at a time over the block."""

    name = "regex"

    def __init__(self, items: list[tuple[int, str, str]]) -> None:
        self.slow = _SlowPatterns([(pid, prefilter_form(src), label) for pid, src, label in items])

    def scan(self, buf: bytes, nl=None) -> dict[int, set[int]]:
        out: dict[int, set[int]] = defaultdict(set)
        self.slow.scan_into(buf, out)
        return out


ENGINES = {"hyperscan": HyperscanEngine, "re2": Re2Engine, "regex": RegexEngine}


def _hyperscan_platform() -> bool:
    return sys.platform.startswith("linux") or sys.platform == "darwin"


def available_engines() -> list[str]:
    names = []
    if _hyperscan_platform():
        try:
            import hyperscan  # noqa: F401

            names.append("hyperscan")
        except ImportError:
            pass
    try:
        import re2  # noqa: F401

        names.append("re2")
    except ImportError:
        pass
    names.append("regex")
    return names


def build(items: Iterable[tuple[int, str, str]], engine: str | None = None) -> _Engine:
    """Compile (pattern id, regex source, label) items with the best (or the named) engine."""
    items = list(items)
    # without a named engine, the first that builds wins (the later ones are not even imported)
    names = [engine] if engine else [n for n in ENGINES if n != "hyperscan" or _hyperscan_platform()]
    last: Exception | None = None
    for name in names:
        try:
            return ENGINES[name](items)
        except ImportError as exc:
            last = exc
            continue
    raise RuntimeError(f"no prefilter engine could be built: {last}")


__all__ = ["build", "available_engines", "prefilter_form"]
