"""Patterns the block pass would run slowly, run only on the lines that hold their required string.

Hyperscan is fast on a pattern when it can start from a plain string; a
pattern that opens with an unbounded class repetition before its first long
string (`[0-9:]+<[0-9:?]+, [^\\]]*(/s|s/[A-Za-z]+)\\]Killed *$`, a tqdm bar
ending in `Killed`) makes it run an automaton over every byte: measured on a
realistic log, that one pattern more than doubled the cost of the whole
database of 600. Such a pattern is *gated*: the block database holds only the
plain strings one of which every match contains (`scan.locate.required_literals`),
and the pattern itself runs on each line where one of them was found.

The answer is the same, line for line: a line without one of the strings has
no match, and a line with one is searched by the pattern itself. Each line is
searched alone, so a gated pattern never matches across a newline (as on the
RE2 and regex engines, which check each line).
"""

from __future__ import annotations

import threading
from typing import Any

from sigclass.scan.locate import hs_literal, parse_pattern, required_literals

GATE_BASE = (1 << 20) + (1 << 19)  # ids of the gate strings in the block database: above the built-in triggers
GATE_MIN = 4  # shortest gate string (shorter ones are too common to narrow anything down)
LEAD_LITERAL = 4  # a run of this many plain characters is a string Hyperscan can start from


def _has_unbounded(seq: Any, c: Any) -> bool:
    """True when the parsed sequence repeats something other than `.` without an upper bound."""
    for op, av in seq:
        if op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
            lo, hi, sub = av
            if hi == c.MAXREPEAT and not (len(sub) == 1 and sub[0][0] is c.ANY):
                return True
            if _has_unbounded(sub, c):
                return True
        elif op is c.SUBPATTERN:
            if _has_unbounded(av[3], c):
                return True
        elif op is c.BRANCH:
            if any(_has_unbounded(b, c) for b in av[1]):
                return True
        elif op is getattr(c, "ATOMIC_GROUP", None):
            if _has_unbounded(av, c):
                return True
    return False


def slow_lead(src: str) -> bool:
    """True when the pattern repeats a class without bound before its first run of LEAD_LITERAL plain
    characters at the top level (or has no such run after one): Hyperscan then has no string to start from."""
    from re import _constants as c  # type: ignore[attr-defined]

    parsed = parse_pattern(src)
    if parsed is None:
        return False
    run = 0
    seen = False
    for op, av in parsed:
        if op is c.LITERAL:
            run += 1
            if run >= LEAD_LITERAL:
                return seen
            continue
        run = 0
        if op is not c.AT and _has_unbounded([(op, av)], c):
            seen = True
    return False


def gate_strings(src: str) -> tuple[bytes, ...] | None:
    """The plain strings that gate a pattern, or None when it is not worth gating (or cannot be)."""
    if not slow_lead(src):
        return None
    got = required_literals(src)
    if not got or min(len(s) for s in got) < GATE_MIN or any(b"\n" in s for s in got):
        return None
    return got


class Gated:
    """The gated patterns of one engine: compiled on first use, run one line at a time."""

    def __init__(self, items: list[tuple[int, bytes]], load: Any) -> None:
        self.items = items  # (pattern id, Hyperscan expression)
        self._load = load  # items -> compiled database (the engine's cache)
        self._db: Any = None
        self._lock = threading.Lock()
        self._local = threading.local()

    def _scratch(self) -> tuple[Any, Any]:
        import hyperscan

        s = getattr(self._local, "scratch", None)
        if s is None:
            with self._lock:
                if self._db is None:
                    self._db = self._load(self.items)
                    self._base = hyperscan.Scratch(self._db)
                s = self._local.scratch = self._base.clone()
        return self._db, s

    def lines_into(self, buf: bytes, ends: list[int], out: dict[int, set[int]]) -> None:
        """Search the gated patterns on each line holding a gate string (ends: where those strings end)."""
        db, scratch = self._scratch()
        n = len(buf)
        seen: set[int] = set()
        for end in ends:
            at = end - 1 if end else 0
            ls = buf.rfind(b"\n", 0, at) + 1
            if ls in seen:
                continue
            seen.add(ls)
            le = buf.find(b"\n", at)
            le = n if le == -1 else le

            def on_match(pid: int, start: int, e: int, flags: int, ctx: object, ls: int = ls) -> None:
                out[ls].add(pid)

            db.scan(buf[ls:le], match_event_handler=on_match, scratch=scratch)


def split(ok: list[tuple[int, bytes, str]]) -> tuple[list[tuple[int, bytes]], list[tuple[int, bytes]]]:
    """(block database items, gated items) from (pattern id, Hyperscan expression, prefilter form) items that
    compile: a gated pattern is replaced in the block database by its gate strings, ids from GATE_BASE."""
    block: list[tuple[int, bytes]] = []
    gated: list[tuple[int, bytes]] = []
    strings: dict[bytes, int] = {}
    for pid, expr, form in ok:
        got = gate_strings(form)
        if got is None:
            block.append((pid, expr))
            continue
        gated.append((pid, expr))
        for s in got:
            if s not in strings:
                strings[s] = GATE_BASE + len(strings)
    block.extend((gid, hs_literal(s)) for s, gid in strings.items())
    return block, gated


__all__ = ["GATE_BASE", "Gated", "gate_strings", "slow_lead", "split"]
