"""Progress and request lines, read only where a verdict needs them.

Step lines and request lines are the most common lines of a run log, so they are not prefilter
patterns (the per-line Python work would cost more than the whole scan). Instead the rules read them
from the block of bytes at hand: the tail of every block (the latest progress before whatever comes
next), the stretch above a heartbeat or a kill (the progress it follows), and the stretch between
two loads (the requests they served).
"""

from __future__ import annotations


import time as _time
from typing import Any

import regex

from sigclass.ledger.patterns import MATCH_TIMEOUT
from sigclass.scan.locate import LineMatcher, required_literals
from sigclass.text.lazyre import lazy
from sigclass.text.lines import Line, parse_time, split_line


RING = 64  # recent progress lines kept per pattern

TAIL_BYTES = 16 << 10  # the end of every block read for its latest progress lines


def _compile(src: str) -> Any:
    return regex.compile(src, regex.V0 | regex.MULTILINE)


class Region:
    """A rule line pattern compiled for searching a stretch of lines (`^`/`$` at line ends), with the
    plain strings one of which each match holds (scan/locate.py): lines without one are never decoded.
    A line matches when the regex matches within it. Other attributes are the compiled regex's."""

    __slots__ = ("src", "_rx", "_locator")

    def __init__(self, src: str) -> None:
        self.src = src
        self._rx: Any = None
        self._locator: Any = False

    @property
    def rx(self) -> Any:
        """Compiled when first used: a scan that never reads a stretch pays nothing at start-up."""
        if self._rx is None:
            self._rx = _compile(self.src)
        return self._rx

    @property
    def locator(self) -> LineMatcher | None:
        if self._locator is False:
            lits = required_literals(self.src)
            self._locator = LineMatcher(self.src, self.rx, _compile, lits) if lits else None
        return self._locator

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rx, name)


def region_rx(src: str) -> Region:
    """A rule line pattern compiled for searching a stretch of lines."""
    return Region(src)


def lines_in(rx: Any, buf: bytes, start: int, end: int, last_lineno: int) -> list[tuple[int, str]]:
    """(line number, line) of the lines of buf[start:end] the regex matches; last_lineno is the number of
    the last line of the stretch (the one buf[end-1] belongs to)."""
    return _lines_of_bytes(rx, buf[start:end], last_lineno)


def _lines_of_bytes(rx: Any, data: bytes, last_lineno: int) -> list[tuple[int, str]]:
    """What _lines_of gives for the decoded bytes, reading only the lines that hold a required string."""
    locator = getattr(rx, "locator", None)
    if locator is None:
        return _lines_of(getattr(rx, "rx", rx), data.decode("utf-8", "replace"), last_lineno)
    if not data:
        return []
    first = last_lineno - data.count(b"\n") + (1 if data.endswith(b"\n") else 0)  # the number of the first line
    out: list[tuple[int, str]] = []
    prev, seen_nl = 0, 0
    for ls, _le, text in locator.lines(data, MATCH_TIMEOUT * 4):
        seen_nl += data.count(b"\n", prev, ls)
        prev = ls
        no = first + seen_nl
        if text.startswith("[sc:"):  # a JSON-lines record: its number, as in _lines_of
            m2 = _RECORD_NO.match(text)
            no = int(m2.group(1)) if m2 else no
        out.append((no, text))
    return out


def lines_back(rx: Any, buf: bytes, start: int, end: int, last_lineno: int, enough: int) -> list[tuple[int, str]]:
    """What lines_in gives for buf[start:end] (end at a line start) as far as the newest `enough` lines
    go: the stretch is read backwards in growing chunks cut at line starts, and the chunks above the
    newest `enough` matching lines are not read (a ring that keeps the newest lines cannot take them)."""
    out: list[tuple[int, str]] = []
    stop, step = end, COUNT_CHUNK // 4
    while stop > start and len(out) < enough:
        lo = max(start, stop - step)
        if lo > start:
            cut = buf.find(b"\n", lo, stop)
            lo = cut + 1 if cut != -1 and cut + 1 < stop else start
        chunk = buf[lo:stop]
        out = _lines_of_bytes(rx, chunk, last_lineno) + out
        last_lineno -= chunk.count(b"\n") if lo > start else 0
        stop, step = lo, step * 4
    return out


_RECORD_NO = lazy(r"\[sc:[^\]\n]*?;l=(\d+)\]:")  # the JSON-lines adapter's prefix (text.prefixes.jsonl_prefix)


def _lines_of(rx: Any, text: str, last_lineno: int) -> list[tuple[int, str]]:
    if not text:
        return []
    total = text.count("\n") + (0 if text.endswith("\n") else 1)
    out: list[tuple[int, str]] = []
    prev_a, seen_nl = 0, 0  # newlines before prev_a, counted as the matches move down
    try:
        for m in rx.finditer(text, concurrent=False, timeout=MATCH_TIMEOUT * 4):
            a = text.rfind("\n", 0, m.start()) + 1
            if out and a == prev_a:
                continue
            seen_nl += text.count("\n", prev_a, a)
            prev_a = a
            b = text.find("\n", m.start())
            b = len(text) if b == -1 else b
            no = last_lineno - total + 1 + seen_nl
            if text.startswith("[sc:", a):  # a JSON-lines record: its number, as every other part of the scan
                m2 = _RECORD_NO.match(text, a)
                no = int(m2.group(1)) if m2 else no
            out.append((no, text[a:b]))
    except TimeoutError:
        pass
    return out


def count_in(rx: Any, buf: bytes, start: int, end: int, limit: int | None = None) -> int:
    """How many lines of buf[start:end] the regex matches; with a limit, the count stops there (the
    answer is then `limit` when at least that many match)."""
    if end <= start or (limit is not None and limit <= 0):
        return 0
    if limit is not None and end - start > COUNT_CHUNK:
        # read a few lines at a time (cut at line ends): the limit is usually met near the start
        n, pos, step = 0, start, COUNT_CHUNK
        while pos < end and n < limit:
            stop = min(end, pos + step)
            if stop < end:
                cut = buf.rfind(b"\n", pos, stop)
                stop = cut + 1 if cut != -1 else end
            n += _count_bytes(rx, buf[pos:stop], limit - n)
            pos, step = stop, step * 4
        return n
    return _count_bytes(rx, buf[start:end], limit)


def _count_bytes(rx: Any, data: bytes, limit: int | None) -> int:
    """What _count_text gives for the decoded bytes, reading only the lines that hold a required string."""
    locator = getattr(rx, "locator", None)
    if locator is None:
        return _count_text(getattr(rx, "rx", rx), data.decode("utf-8", "replace"), limit)
    return locator.count(data, limit, MATCH_TIMEOUT * 4)


COUNT_CHUNK = 64 << 10


def _count_text(rx: Any, text: str, limit: int | None) -> int:
    n, prev_a = 0, -1
    try:
        for m in rx.finditer(text, concurrent=False, timeout=MATCH_TIMEOUT * 4):
            a = text.rfind("\n", 0, m.start()) + 1
            if a == prev_a:
                continue  # another match on the same line
            prev_a = a
            n += 1
            if limit is not None and n >= limit:
                break
    except TimeoutError:
        pass
    return n


class Entry:
    __slots__ = ("lineno", "text", "wall", "_line")

    def __init__(self, lineno: int, text: str, wall: float) -> None:
        self.lineno, self.text, self.wall = lineno, text[:2000], wall
        self._line: Line | None = None

    @property
    def line(self) -> Line:
        if self._line is None:
            self._line = split_line(self.text)
        return self._line

    @property
    def worker(self) -> str | None:
        return self.line.worker

    def own_time(self, year: int | None) -> str | None:
        """The line's own timestamp (no look-back: the lines around it may be gone)."""
        return self.line.time_override or parse_time(self.line.content, year)


PENDING_TAILS = 64  # block tails kept unread before the oldest are settled


class Recent:
    """The recent progress lines of one source, per pattern id.

    Block tails (`tail`) are kept as bytes and read only when a ring is asked for (`flush`), newest
    first: once the newer tails hold RING lines of a pattern, the older ones cannot reach its ring and
    are never decoded. The rings are then what reading every tail at once would have made."""

    def __init__(self, regions: dict[int, Any] | None = None) -> None:
        self._rings: dict[int, list[Entry]] = {}
        self.clock = _time.monotonic
        self.regions = regions or {}  # pattern id -> its region regex (for the tails)
        self.pending: list[tuple[bytes, int]] = []  # (tail bytes, number of its last line), oldest first

    def tail(self, data: bytes, last_lineno: int) -> None:
        """The end of a block, to be read for its progress lines when they are asked for."""
        if not data or not self.regions:
            return
        self.pending.append((data, last_lineno))
        if len(self.pending) >= PENDING_TAILS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        for pid, rx in self.regions.items():
            found: list[list[tuple[int, str]]] = []
            have = 0
            for data, last in reversed(pending):
                got = _lines_of_bytes(rx, data, last)
                found.append(got)
                have += len(got)
                if have >= RING:
                    break  # every line of an older tail lies above these
            for got in reversed(found):
                self.add(pid, got)

    @property
    def rings(self) -> dict[int, list[Entry]]:
        self.flush()
        return self._rings

    def add(self, pid: int, found: list[tuple[int, str]]) -> None:
        if not found:
            return
        wall = self.clock()
        ring = self._rings.setdefault(pid, [])
        have = {e.lineno for e in ring}
        new = [Entry(no, text, wall) for no, text in found if no not in have]
        if not new:
            return
        ring.extend(new)
        ring.sort(key=lambda e: e.lineno)
        del ring[:-RING]

    def of(self, pid: int, worker: str | None, before: int | None = None) -> list[Entry]:
        """The recent lines of a pattern from one worker (lines without a worker prefix count for every
        worker), optionally only those above a line."""
        return [e for e in self.rings.get(pid, ()) if (before is None or e.lineno < before)
                and (e.worker is None or worker is None or e.worker == worker)]

    def after(self, pids: set[int], worker: str | None, line: int, until: int | None = None) -> int:
        """How many of the recent lines of any of the patterns, from the worker, lie below a line (and above
        `until`); a line two patterns match is one line."""
        return len({e.lineno for pid in pids for e in self.rings.get(pid, ())
                    if line < e.lineno and (until is None or e.lineno < until)
                    and (e.worker is None or worker is None or e.worker == worker)})
