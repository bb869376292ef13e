"""The ledger's `over_time` rules (ledger/overtime.py) compiled for the scanner, and what running them needs.

The scanner asks the prefilter for each rule's trigger (ids from OT_BASE up), so Python only sees NaN
steps, loads, heartbeats and kills, never the whole log; progress and request lines are read from the
block at hand (scan/progress.py). A rule that fires makes one finding; later evidence adds to it
(count, lines) until the rule has been quiet for QUIET_SECONDS, after which the same fault is a new
finding (a stall that comes back an hour later is reported again). The rules run in
scan/overtime_state.py (metric, storm, rate) and scan/stall.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, TYPE_CHECKING

from sigclass.ledger.overtime import TimeRule
from sigclass.records import MAX_LINES_KEPT
from sigclass.scan.progress import region_rx
from sigclass.text.lines import Line

if TYPE_CHECKING:
    from sigclass.ledger.pack import Ledger
    from sigclass.records import Finding


OT_BASE = 1 << 19  # prefilter ids of over-time rule lines (ledger patterns sit below, built-in triggers above)

QUIET_SECONDS = 1800.0  # evidence quiet this long ends an episode: the next one is a new finding

MAX_EVIDENCE = 3


def seconds(t: str | None) -> float | None:
    """Epoch seconds of an ISO-8601 time the scanner produced, or None."""
    if not t:
        return None
    try:
        return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def quiet_spell(before: str | None, now: str | None) -> bool:
    """Whether two evidence times are QUIET_SECONDS or more apart (False when either is unknown)."""
    a, b = seconds(before), seconds(now)
    return a is not None and b is not None and b - a >= QUIET_SECONDS


def join_open(registry: dict, family: str, worker: str | None, lines: list[int], iso: str | None) -> Finding | None:
    """The family's finding still open on the worker (no quiet spell since its latest evidence), with the
    new evidence lines added; None when there is none. Counted patterns and over-time rules of one family
    share it, so one fault is one finding however many of its rules see it."""
    entry = registry.get((family, worker))
    if entry is None or quiet_spell(entry[1], iso):
        return None
    f = entry[0]
    near = entry[2] if len(entry) > 2 else None
    if near is not None and lines and min(lines) - max(f.end_line, *f.lines) > near:
        return None  # a record's finding: evidence far below it is another occurrence of the fault, not this one
    have = set(f.lines)
    new = sorted({no for no in lines if no not in have})
    if new:
        f.lines = sorted([*f.lines, *new])[:MAX_LINES_KEPT]
        f.count += len(new)
        f.end_line = max(f.end_line, *new)
    entry[1] = iso or entry[1]
    return f


def register(registry: dict, f: Finding, iso: str | None, near: int | None = None) -> None:
    """Record a counted or over-time finding as its family's open finding on its worker; with `near`, a log
    record's finding, which takes only evidence at most that many lines below its own last line."""
    registry[(f.family, f.worker)] = [f, iso] if near is None else [f, iso, near]


def touch(registry: dict, f: Finding, iso: str | None) -> None:
    """New evidence for a registered finding: it stays open from this time."""
    entry = registry.get((f.family, f.worker))
    if entry is not None and entry[0] is f and iso:
        entry[1] = iso


def number(text: str | None) -> float | None:
    """A metric value as printed (`nan`, `NaN`, `inf`, `-inf`, `1.2E+00`, `0.0`), or None."""
    if text is None:
        return None
    s = text.strip().strip("'\",").lower()
    try:
        return float(s)
    except ValueError:
        return None


CROSS_BLOCK_LINES = 200  # met steps in two different read blocks count as consecutive when this close

LOOK_BACK_BYTES = 256 << 10  # a spike's running median is read from the step lines this far above it

_NONFINITE = r"(?P<value>[-+]?(?:nan|NaN|NAN|inf|Inf|INF|Infinity))"


def nonfinite_form(src: str) -> str | None:
    """The pattern with its value group narrowed to NaN/inf: the prefilter then hands over only the
    steps that can meet a nan/inf/nonfinite condition. None when the group cannot be found."""
    start = src.find("(?P<value>")
    if start == -1:
        return None
    depth, i, in_class = 0, start, False
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return src[:start] + _NONFINITE + src[i + 1:]
        i += 1
    return None


class Where:
    """Where a line sits in the block being read: for gap checks and look-backs, valid during one feed."""

    __slots__ = ("buf", "ls", "le", "lo", "serial")

    def __init__(self, buf: bytes, ls: int, le: int, lo: int, serial: int) -> None:
        self.buf, self.ls, self.le, self.lo, self.serial = buf, ls, le, lo, serial


class OverTime:
    """The ledger's over-time rules with their prefilter ids: built once per scanner.

    Each rule line gets a trigger, the narrowest pattern that still sees every line the rule needs:
    a nan/inf metric only its NaN/inf steps, a metric with `where` only the lines `where` matches.
    Progress and request lines (`progress`, `per`) are no prefilter patterns: they are read from
    stretches of the block at hand (scan/progress.py)."""

    def __init__(self, ledger: Ledger | tuple) -> None:
        self.by_pid: dict[int, list[tuple[TimeRule, str]]] = {}
        self.fast: set[int] = set()  # progress and request lines: read from stretches of a block
        self.pid_of: dict[tuple[int, str], int] = {}
        self.family_of: dict[int, str] = {}
        self.items: list[tuple[int, str, str]] = []
        self.rules: list[TimeRule] = []
        pid = OT_BASE
        known: dict[tuple[str, bool], int] = {}
        self.region: dict[int, object] = {}  # progress and request patterns, read from stretches of a block
        for sig in ledger:
            if not sig.active:
                continue
            for rule in sig.over_time:
                self.rules.append(rule)
                for role, src in self._triggers(rule):
                    fast = role in ("progress", "per")
                    key = (src, fast)
                    if key not in known:  # one id and one confirming search per distinct pattern
                        known[key] = pid
                        if fast:
                            self.region[pid] = region_rx(src)
                        else:
                            self.items.append((pid, src, f"{rule.location} ({sig.id} over_time {rule.kind} {role})"))
                        pid += 1
                    tid = known[key]
                    self.pid_of[(id(rule), role)] = tid
                    self.family_of.setdefault(tid, rule.family)
                    if fast:
                        self.fast.add(tid)
                    else:
                        self.by_pid.setdefault(tid, []).append((rule, role))
        # each metric's value pattern for reading a stretch of lines (gap checks, running medians)
        self.stretch = {id(r): region_rx(r.pattern.source) for r in self.rules if r.kind == "metric"}
        # ... and each storm's step pattern, for the step above a storm (`min_step`)
        self.step_rx = {id(r): region_rx(r.step.source) for r in self.rules if r.step is not None}
        self.trigger: dict[int, object] = {}
        for pid_, entries in self.by_pid.items():
            rule, role = entries[0]
            self.trigger[pid_] = self._trigger_pattern(rule, role)
        # what every source's state starts from, made once here rather than per source
        self.rates = {id(r): r for r in self.rules if r.kind == "rate"}
        self.progress_pids = frozenset(self.pid_of[(id(r), "progress")] for r in self.rules if r.kind == "stall")
        self.progress_regions = {p: self.region[p] for p in sorted(self.progress_pids)}

    @staticmethod
    def _triggers(rule: TimeRule) -> list[tuple[str, str]]:
        if rule.kind == "metric":
            if rule.where is not None:
                return [("where", rule.where.source)]
            if rule.when in ("nan", "inf", "nonfinite") and nonfinite_form(rule.pattern.source):
                return [("nonfinite", nonfinite_form(rule.pattern.source))]
            return [("pattern", rule.pattern.source)]
        # a storm's step lines are read from the block above it when it would fire, never handed over one by one
        return [(role, p.source) for role, p in rule.lines() if role != "step"]

    @staticmethod
    def _trigger_pattern(rule: TimeRule, role: str):
        if role == "nonfinite":
            from sigclass.ledger.patterns import Pattern

            return Pattern(-1, rule.family, "over_time.nonfinite", nonfinite_form(rule.pattern.source), None,
                           rule.location)
        return getattr(rule, role)

    def __bool__(self) -> bool:
        return bool(self.rules)


class Seen:
    """A line a rule looked at. Its time is worked out only when a rule keeps the line (`stamp`), while the
    scanner still holds the line's block: most step lines never need one."""

    __slots__ = ("lineno", "line", "time", "iso", "_when", "serial", "ls", "le")

    def __init__(self, lineno: int, line: Line, when: Callable[[], str | None] | None, where: Where | None = None,
                 iso: str | None = None) -> None:
        self.lineno, self.line, self._when = lineno, line, when
        self.iso = iso
        self.time: float | None = seconds(iso)
        self.serial, self.ls, self.le = (where.serial, where.ls, where.le) if where is not None else (-1, 0, 0)

    def stamp(self) -> "Seen":
        if self._when is not None:
            self.iso = self._when()
            self.time = seconds(self.iso)
            self._when = None
        return self


@dataclass
class RuleState:
    run: list[Seen] = field(default_factory=list)  # metric: consecutive met steps; storm: the current run
    first: float | None = None  # storm: the value its current run started from (`when: fallen`)
    history: list[float] = field(default_factory=list)  # metric read on every step: earlier values
    alive: list[Seen] = field(default_factory=list)  # stall: heartbeats since the last progress line
    loads: list[Seen] = field(default_factory=list)  # rate: the first loads (evidence)
    load_count: int = 0
    last_load: int = 0
    served: int = 0  # rate: requests served since the first load
    count_from: int = 0  # rate: where in block `count_serial` the requests are not counted yet
    count_serial: int = -1
    fired: Finding | None = None
    fired_at: int | None = None  # stall: the last progress line before the stall it fired for
    last: float | None = None  # time of the fired finding's latest evidence
    episodes: int = 0
