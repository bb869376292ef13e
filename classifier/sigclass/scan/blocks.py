"""The scanner's small records (a shard marker, an open failure block, the result of one source) and byte/text helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
import os
import re

from sigclass.records import Finding, Verdict
from sigclass.scan.reader import BLOCK
from sigclass.scan.triggers import CHAIN, EXC_LINE
from sigclass.text.lines import Line
from sigclass.text.prefixes import Stream
from sigclass.text.workers import Exit


@dataclass
class Marker:
    """A unit start/end marker line (`[shard 17] starting`, `shard=3 done`)."""

    unit: str
    kind: str  # start | ok | failed
    line: int
    time: str | None
    worker: str | None
    stream: Stream | None
    text: str = ""  # the marker line (body), cut to 300 characters


@dataclass
class OpenBlock:
    stream: Stream | None
    worker: str | None
    kind: str  # tb | line | cpp
    phase: str  # frames | exc | msg | chain | chain_wait | cpp_wait | paddle (Paddle's C++ report) | ipython (IPython's frames)
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
    ignored: bool = False  # printed under CPython's word that it was ignored (`Exception ignored in: ...`)
    thread: str | None = None  # printed under threading's word that a thread (not the main one) died of it
    warned: bool = False  # printed under a warning that the program goes on without something (a caught import)
    single: bool = False  # its first line is the whole failure (a check macro's line, then the process exits)


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
    fact_lines: list[tuple[int, str, str, str]] = field(default_factory=list)  # (line, worker, fact, value)
    exits: list[Exit] = field(default_factory=list)  # launchers' words that a worker ended, and how
    verdict: Verdict | None = None  # after the whole input: the cause, its victims, independent faults
    # what a signature matched but the source's end showed to be harmless (scan.exitnoise): not a failure
    quieted: list[Finding] = field(default_factory=list)


_NP = None


def bytes_newlines(buf: bytes, a: int, b: int) -> int:
    return buf.count(b"\n", a, b)


def newlines(buf: bytes, a: int, b: int) -> int:
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


def one_block(path: str) -> bool:
    try:
        return os.stat(path).st_size <= BLOCK
    except OSError:
        return True  # the reader raises the proper error


def year_in(text: str) -> int | None:
    m = _YEAR.search(text)
    return int(m.group(1)) if m else None


def strip_ts(text: str) -> str:
    return _TS_LEAD.sub("", text)


def exception_lines(bodies: list[str]) -> list[str]:
    """The exception lines of a block (the last non-indented lines of each traceback)."""
    out = []
    for b in bodies:
        s = b.strip()
        if not s or b[:1] in (" ", "\t") or s.startswith(("Traceback (most recent call last)", "File \"")) or CHAIN.search(s):
            continue
        if EXC_LINE.match(s) or "error" in s.lower() or "fault" in s.lower() or "killed" in s.lower():
            out.append(s[:500])
    if not out:
        out = [b.strip()[:500] for b in bodies if b.strip()][-2:]
    return out[-4:]
