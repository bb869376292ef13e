"""Running the ledger's `over_time` rules (ledger/overtime.py) on one source, per worker.

The scanner asks the prefilter for every rule line (ids from OT_BASE up), so Python only sees step,
load, heartbeat and kill lines, never the whole log. A rule that fires makes one finding; later
evidence adds to it (count, lines) until the rule has been quiet for QUIET_SECONDS, after which the
same fault is a new finding (a stall that comes back an hour later is reported again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
import time as _time
from typing import Callable, TYPE_CHECKING

from sigclass.ledger.overtime import TimeRule
from sigclass.text.lines import Line

if TYPE_CHECKING:
    from sigclass.ledger.pack import Ledger
    from sigclass.records import Finding


OT_BASE = 1 << 19  # prefilter ids of over-time rule lines (ledger patterns sit below, built-in triggers above)


QUIET_SECONDS = 1800.0  # evidence quiet this long ends an episode: the next one is a new finding


MAX_EVIDENCE = 3


LIVE_STALL_FACTOR = 5.0  # --stall auto: a worker silent this many times its usual progress interval ...
LIVE_STALL_MIN = 60.0  # ... and at least this many seconds is reported as a provisional stall


def stall_setting(text: str) -> float | None:
    """Parse --stall: 'auto' (0.0: LIVE_STALL_FACTOR times the worker's usual interval), 'off' (None), or seconds."""
    t = text.strip().lower()
    if t == "auto":
        return 0.0
    if t in ("off", "no", "0"):
        return None
    try:
        v = float(t.rstrip("s"))
    except ValueError:
        raise ValueError(f"--stall takes auto, off or a number of seconds, not {text!r}") from None
    if v != v or v <= 0:
        raise ValueError(f"--stall takes auto, off or a positive number of seconds, not {text!r}")
    return v


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


def number(text: str | None) -> float | None:
    """A metric value as printed (`nan`, `NaN`, `inf`, `-inf`, `1.2E+00`, `0.0`), or None."""
    if text is None:
        return None
    s = text.strip().strip("'\",").lower()
    try:
        return float(s)
    except ValueError:
        return None


class OverTime:
    """The ledger's over-time rules with their prefilter ids: built once per scanner."""

    def __init__(self, ledger: Ledger) -> None:
        self.by_pid: dict[int, list[tuple[TimeRule, str]]] = {}
        self.items: list[tuple[int, str, str]] = []
        self.rules: list[TimeRule] = []
        pid = OT_BASE
        for sig in ledger:
            if not sig.active:
                continue
            for rule in sig.over_time:
                self.rules.append(rule)
                for role, p in rule.lines():
                    self.by_pid[pid] = [(rule, role)]
                    self.items.append((pid, p.source, f"{p.location} ({sig.id} over_time {rule.kind} {role})"))
                    pid += 1

    def __bool__(self) -> bool:
        return bool(self.rules)


@dataclass
class _Seen:
    lineno: int
    line: Line
    time: float | None
    iso: str | None


@dataclass
class _RuleState:
    run: list[_Seen] = field(default_factory=list)  # metric: consecutive met steps; storm: the current run
    history: list[float] = field(default_factory=list)
    progress: list[_Seen] = field(default_factory=list)  # stall: recent progress lines
    alive: list[_Seen] = field(default_factory=list)  # stall: heartbeats since the last progress line
    loads: list[_Seen] = field(default_factory=list)  # rate: the first loads (evidence)
    load_count: int = 0
    served: int = 0
    fired: Finding | None = None
    last: float | None = None  # time of the fired finding's latest evidence
    episodes: int = 0


class OverTimeState:
    """The over-time rules' state for one source (a part of `ScanState`)."""

    def __init__(self, ot: OverTime, ledger: Ledger, make: Callable[..., Finding], emit: Callable[[Finding], None],
                 search: Callable) -> None:
        self.ot = ot
        self.ledger = ledger
        self.make = make
        self.emit = emit
        self.search = search
        self.states: dict[tuple[int, str | None], _RuleState] = {}
        self.progress: dict[str | None, list[int]] = {}  # worker -> lines of its progress (stall rules' progress lines)
        # live pipes: worker -> (rule, last progress line seen, wall-clock arrival times of recent progress lines)
        self.live: dict[str | None, tuple[TimeRule, _Seen, list[float]]] = {}
        self.live_flagged: set[str | None] = set()
        self.clock = _time.monotonic

    def hit(self, pids: set[int], ln: Line, lineno: int, iso: Callable[[], str | None]) -> None:
        for pid in pids:
            for rule, role in self.ot.by_pid.get(pid, ()):
                p = getattr(rule, role)
                m = self.search(p, ln.content)
                if m is None:
                    continue
                st = self.states.setdefault((id(rule), ln.worker), _RuleState())
                t = iso()
                seen = _Seen(lineno, ln, seconds(t), t)
                getattr(self, f"_{rule.kind}")(rule, role, st, seen, m)

    def finish(self) -> None:
        for rule in self.ot.rules:
            if rule.kind != "rate":
                continue
            for (rid, worker), st in list(self.states.items()):
                if rid == id(rule):
                    self._rate_check(rule, st)

    def live_check(self, setting: float | None) -> None:
        """On a live pipe: a worker whose progress lines stopped for `setting` seconds (0.0: LIVE_STALL_FACTOR
        times its usual interval, at least LIVE_STALL_MIN) gets a provisional stall finding. Progress that
        comes back re-arms the check; nothing printed is withdrawn."""
        if setting is None or not self.live:
            return
        now = self.clock()
        for worker, (rule, last, walls) in self.live.items():
            if worker in self.live_flagged:
                continue
            silent = now - walls[-1]
            if setting:
                limit = setting
            else:
                if len(walls) < 3:
                    continue
                gaps = sorted(b - a for a, b in zip(walls, walls[1:]))
                limit = max(LIVE_STALL_FACTOR * gaps[len(gaps) // 2], LIVE_STALL_MIN)
            if silent < limit:
                continue
            self.live_flagged.add(worker)
            who = f"worker {worker}" if worker else "the stream"
            note = (f"provisional: no progress line from {who} for {silent:.0f} s on a live pipe (limit {limit:.0f} s); "
                    "reported while the process may still be running, and not withdrawn if progress resumes")
            f = self.make(self.ledger[rule.family], [last.line.content, f"(no progress for {silent:.0f} s)"], 0.5,
                          "regex", last.lineno, last.lineno, last.iso, worker, last.line.stream, None,
                          [last.line.body], ["live stall", worker or ""])
            f.caveats = [note, *f.caveats]
            f.facts = {**f.facts, "over_time_rule": "stall live"}
            self.emit(f)

    # ------------------------------------------------------------------ kinds
    def _metric(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m) -> None:
        value = number(m.groupdict().get("value"))
        if value is None:
            return
        ok = rule.met(value, st.history) and (rule.where is None or self.search(rule.where, seen.line.content) is not None)
        if value == value and abs(value) != float("inf"):
            st.history.append(value)
            del st.history[:-20]
        if not ok:
            st.run.clear()
            return
        st.run.append(seen)
        if self._extend(st, seen):
            st.run.clear()
        elif len(st.run) >= rule.steps:
            self._fire(rule, st, st.run, seen)

    def _storm(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m) -> None:
        if st.run and seen.lineno - st.run[-1].lineno > rule.window:
            st.run.clear()
        st.run.append(seen)
        del st.run[:-max(rule.min_count, MAX_EVIDENCE)]
        if rule.when is not None:
            value = number(m.groupdict().get("value"))
            if value is None or not rule.met(value, []):
                return
        if self._extend(st, seen):
            st.run.clear()
        elif len(st.run) >= rule.min_count:
            self._fire(rule, st, st.run, seen)

    def _stall(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m) -> None:
        if role == "progress":
            mine = self.progress.setdefault(seen.line.worker, [])
            if not mine or mine[-1] != seen.lineno:
                mine.append(seen.lineno)
                _, _, walls = self.live.get(seen.line.worker, (rule, seen, []))
                walls.append(self.clock())
                del walls[:-21]
                self.live[seen.line.worker] = (rule, seen, walls)
                self.live_flagged.discard(seen.line.worker)
            st.progress.append(seen)
            del st.progress[:-21]
            st.alive.clear()
            if st.fired is not None:
                st.fired, st.last = None, None  # progress resumed: a later stall is a new finding
            return
        if not st.progress:
            return  # no progress yet: start-up, not a stall
        last = st.progress[-1]
        if role == "alive":
            st.alive.append(seen)
            if self._extend(st, seen):
                return
            if len(st.alive) >= rule.min_count and self._silent(rule, st, seen):
                self._fire(rule, st, [last, *st.alive[-2:]], seen)
            return
        # ended_by: an outside kill after a silence far beyond the usual interval
        if not self._extend(st, seen) and self._silent(rule, st, seen, need_times=True):
            self._fire(rule, st, [last, seen], seen)

    def _silent(self, rule: TimeRule, st: _RuleState, seen: _Seen, need_times: bool = False) -> bool:
        """Whether the time since the last progress line is `gap` times the usual interval (and at least
        min_seconds); without timestamps only a heartbeat count can tell, so the answer is yes unless
        need_times."""
        times = [s.time for s in st.progress if s.time is not None]
        if seen.time is None or len(times) < 3:
            return not need_times
        gaps = sorted(b - a for a, b in zip(times, times[1:]) if b >= a)
        usual = gaps[len(gaps) // 2] if gaps else 0.0
        silence = seen.time - times[-1]
        return silence >= max(rule.gap * usual, rule.min_seconds)

    def _rate(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m) -> None:
        if role == "per":
            st.served += 1
        else:
            st.load_count += 1
            if len(st.loads) < max(rule.min_count, MAX_EVIDENCE):
                st.loads.append(seen)
            if self._extend(st, seen):
                return
        self._rate_check(rule, st)

    def _rate_check(self, rule: TimeRule, st: _RuleState) -> None:
        if st.fired is not None or st.load_count < rule.min_count or st.served < 1:
            return
        if st.load_count / st.served >= rule.ratio:
            self._fire(rule, st, st.loads, st.loads[-1])
            st.fired.count = st.load_count  # type: ignore[union-attr]

    # ------------------------------------------------------------------ findings
    def _extend(self, st: _RuleState, seen: _Seen) -> bool:
        """Add evidence to the rule's finding; False when there is none or the rule was quiet long enough
        for this to be a new episode."""
        f = st.fired
        if f is None or (seen.time is not None and st.last is not None and seen.time - st.last >= QUIET_SECONDS):
            return False
        if seen.lineno not in f.lines:
            f.count += 1
            f.lines.append(seen.lineno)
            f.end_line = max(f.end_line, seen.lineno)
        st.last = seen.time if seen.time is not None else st.last
        return True

    def _fire(self, rule: TimeRule, st: _RuleState, run: list[_Seen], seen: _Seen) -> None:
        sig = self.ledger[rule.family]
        ev = [s.line.content for s in run[:MAX_EVIDENCE]]
        if seen not in run[:MAX_EVIDENCE]:
            ev.append(seen.line.content)
        st.episodes += 1
        key = [f"{rule.kind} {rule.name}"] + ([f"episode {st.episodes}"] if st.episodes > 1 else [])
        first = run[0]
        f = self.make(sig, ev, 1.0, "regex", first.lineno, seen.lineno, first.iso, seen.line.worker, seen.line.stream,
                      None, [s.line.body for s in run], key)
        f.count = len(run)
        f.lines = sorted({s.lineno for s in run} | {seen.lineno})
        f.facts = {**f.facts, "over_time_rule": f"{rule.kind} {rule.name}"}
        if rule.note:
            f.caveats = [rule.note, *f.caveats]
        st.fired, st.last = f, seen.time
        if rule.kind != "rate":  # loads keep counting against the items served
            run.clear()
        self.emit(f)
