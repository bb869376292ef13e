"""Running the ledger's `over_time` rules (ledger/overtime.py) on one source, per worker.

The scanner asks the prefilter for every rule line (ids from OT_BASE up), so Python only sees step,
load, heartbeat and kill lines, never the whole log. A rule that fires makes one finding; later
evidence adds to it (count, lines) until the rule has been quiet for QUIET_SECONDS, after which the
same fault is a new finding (a stall that comes back an hour later is reported again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, TYPE_CHECKING

from sigclass.ledger.overtime import TimeRule
from sigclass.ledger.patterns import MATCH_TIMEOUT
from sigclass.scan.progress import count_in, Entry, lines_in, Recent, region_rx, TAIL_BYTES
from sigclass.text.lines import Line, split_line

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
        self.trigger: dict[int, object] = {}
        for pid_, entries in self.by_pid.items():
            rule, role = entries[0]
            self.trigger[pid_] = self._trigger_pattern(rule, role)

    @staticmethod
    def _triggers(rule: TimeRule) -> list[tuple[str, str]]:
        if rule.kind == "metric":
            if rule.where is not None:
                return [("where", rule.where.source)]
            if rule.when in ("nan", "inf", "nonfinite") and nonfinite_form(rule.pattern.source):
                return [("nonfinite", nonfinite_form(rule.pattern.source))]
            return [("pattern", rule.pattern.source)]
        return [(role, p.source) for role, p in rule.lines()]

    @staticmethod
    def _trigger_pattern(rule: TimeRule, role: str):
        if role == "nonfinite":
            from sigclass.ledger.patterns import Pattern

            return Pattern(-1, rule.family, "over_time.nonfinite", nonfinite_form(rule.pattern.source), None,
                           rule.location)
        return getattr(rule, role)

    def __bool__(self) -> bool:
        return bool(self.rules)


class _Seen:
    """A line a rule looked at. Its time is worked out only when a rule keeps the line (`stamp`), while the
    scanner still holds the line's block: most step lines never need one."""

    __slots__ = ("lineno", "line", "time", "iso", "_when", "serial", "ls", "le")

    def __init__(self, lineno: int, line: Line, when: Callable[[], str | None] | None, where: Where | None = None,
                 iso: str | None = None) -> None:
        self.lineno, self.line, self._when = lineno, line, when
        self.iso = iso
        self.time: float | None = seconds(iso)
        self.serial, self.ls, self.le = (where.serial, where.ls, where.le) if where is not None else (-1, 0, 0)

    def stamp(self) -> "_Seen":
        if self._when is not None:
            self.iso = self._when()
            self.time = seconds(self.iso)
            self._when = None
        return self


@dataclass
class _RuleState:
    run: list[_Seen] = field(default_factory=list)  # metric: consecutive met steps; storm: the current run
    history: list[float] = field(default_factory=list)  # metric read on every step: earlier values
    alive: list[_Seen] = field(default_factory=list)  # stall: heartbeats since the last progress line
    loads: list[_Seen] = field(default_factory=list)  # rate: the first loads (evidence)
    load_count: int = 0
    last_load: int = 0
    served: int = 0  # rate: requests served since the first load
    count_from: int = 0  # rate: where in block `count_serial` the requests are not counted yet
    count_serial: int = -1
    fired: Finding | None = None
    fired_at: int | None = None  # stall: the last progress line before the stall it fired for
    last: float | None = None  # time of the fired finding's latest evidence
    episodes: int = 0


class OverTimeState:
    """The over-time rules' state for one source (a part of `ScanState`)."""

    def __init__(self, ot: OverTime, ledger: Ledger, make: Callable[..., Finding], emit: Callable[[Finding], None],
                 search: Callable, year: Callable[[], int | None]) -> None:
        self.ot = ot
        self.ledger = ledger
        self.make = make
        self.emit = emit
        self.search = search
        self.year = year
        self.states: dict[tuple[int, str | None], _RuleState] = {}
        self.recent = Recent()
        self.progress_pids = {self.ot.pid_of[(id(r), "progress")] for r in ot.rules if r.kind == "stall"}
        self.live_flagged: dict[str | None, int] = {}  # worker -> its last progress line when reported stalled

    # ------------------------------------------------------------------ feeding
    def block_end(self, buf: bytes, lo: int, n: int, last_lineno: int, serial: int) -> None:
        """A block has been read: keep the latest progress lines of its tail, and count the requests
        served after the last load in it."""
        for pid in self.progress_pids:
            self.recent.add(pid, lines_in(self.ot.region[pid], buf, max(lo, n - TAIL_BYTES), n, last_lineno))
        for rule in self.ot.rules:
            if rule.kind == "rate":
                st = self.states.get((id(rule), None))
                if st is not None and st.count_serial == serial:
                    st.served += count_in(self.ot.region[self.ot.pid_of[(id(rule), "per")]], buf, st.count_from, n)
                    st.count_serial = -1

    def hit(self, pids: set[int], ln: Line, lineno: int, iso: Callable[[], str | None], where: Where) -> None:
        seen = None
        for pid in pids:
            entries = self.ot.by_pid.get(pid)
            if not entries:
                continue
            m = self.search(self.ot.trigger[pid], ln.content)
            if m is None:
                continue
            if seen is None:
                memo: list[str | None] = []

                def when() -> str | None:
                    if not memo:
                        memo.append(iso())
                    return memo[0]

                seen = _Seen(lineno, ln, when, where)
            for rule, role in entries:
                key = (id(rule), None if rule.kind == "rate" else ln.worker)
                st = self.states.setdefault(key, _RuleState())
                getattr(self, f"_{rule.kind}")(rule, role, st, seen, m, where)
        if seen is not None:
            seen._when = None  # the block the line came from is gone after this

    def finish(self) -> None:
        for rule in self.ot.rules:
            if rule.kind == "rate":
                st = self.states.get((id(rule), None))
                if st is not None:
                    self._rate_check(rule, st)

    def progress_after(self, worker: str | None, line: int) -> int:
        """How many recent progress lines of the worker lie below a line (for `recovered`)."""
        return self.recent.after(self.progress_pids, worker, line)

    # ------------------------------------------------------------------ metric
    def _metric(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m, where: Where) -> None:
        if role != "pattern":
            m = self.search(rule.pattern, seen.line.content)
            if m is None:
                return
        value = number(m.groupdict().get("value"))
        if value is None:
            return
        if rule.when == "spike":
            history = st.history if role == "pattern" else self._history(rule, seen, where)
        else:
            history = []
        ok = rule.met(value, history) and (
            role == "where" or rule.where is None or self.search(rule.where, seen.line.content) is not None)
        if role == "pattern" and value == value and abs(value) != float("inf"):
            st.history.append(value)
            del st.history[:-20]
        if not ok:
            if role == "pattern":
                st.run.clear()  # this rule reads every step: a step that does not meet it breaks the run
            return
        if st.run and role != "pattern" and not self._consecutive(rule, st.run[-1], seen, where):
            st.run.clear()
        st.run.append(seen.stamp())
        if self._extend(st, seen):
            st.run.clear()
        elif len(st.run) >= rule.steps:
            self._fire(rule, st, st.run, seen)

    def _lines_of(self, rule: TimeRule, text: str, worker: str | None) -> list[float]:
        """The values of the rule's pattern on the lines of a stretch of text, of one worker."""
        out = []
        for m in rule.pattern.compiled.finditer(text, timeout=MATCH_TIMEOUT):
            a = text.rfind("\n", 0, m.start()) + 1
            b = text.find("\n", m.start())
            ln = split_line(text[a:] if b == -1 else text[a:b])
            if worker is not None and ln.worker is not None and ln.worker != worker:
                continue
            one = self.search(rule.pattern, ln.content)
            v = number(one.groupdict().get("value")) if one is not None else None
            if v is not None:
                out.append(v)
        return out

    def _consecutive(self, rule: TimeRule, prev: _Seen, seen: _Seen, where: Where) -> bool:
        """Whether no step of the same worker between two met steps failed the condition."""
        if prev.serial != where.serial:
            return seen.lineno - prev.lineno <= CROSS_BLOCK_LINES
        gap = where.buf[prev.le:where.ls].decode("utf-8", "replace")
        try:
            return all(rule.met(v, []) for v in self._lines_of(rule, gap, seen.line.worker))
        except TimeoutError:
            return False

    def _history(self, rule: TimeRule, seen: _Seen, where: Where) -> list[float]:
        """The values of the same worker's step lines just above a line (for a spike's running median)."""
        text = where.buf[max(where.lo, where.ls - LOOK_BACK_BYTES):where.ls].decode("utf-8", "replace")
        try:
            vals = self._lines_of(rule, text, seen.line.worker)
        except TimeoutError:
            return []
        return [v for v in vals if v == v and abs(v) != float("inf")][-20:]

    # ------------------------------------------------------------------ storm
    def _storm(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m, where: Where) -> None:
        if st.run and seen.lineno - st.run[-1].lineno > rule.window:
            st.run.clear()
        st.run.append(seen.stamp())
        del st.run[:-max(rule.min_count, MAX_EVIDENCE)]
        if rule.when is not None:
            value = number(m.groupdict().get("value"))
            if value is None or not rule.met(value, []):
                return
        if self._extend(st, seen):
            st.run.clear()
        elif len(st.run) >= rule.min_count:
            self._fire(rule, st, st.run, seen)

    # ------------------------------------------------------------------ stall
    def _stall(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m, where: Where) -> None:
        pid = self.ot.pid_of[(id(rule), "progress")]
        self.recent.add(pid, lines_in(self.ot.region[pid], where.buf, max(where.lo, where.ls - LOOK_BACK_BYTES), where.ls,
                                      seen.lineno - 1))
        prog = self.recent.of(pid, seen.line.worker, before=seen.lineno)
        if not prog:
            return  # no progress yet: start-up, not a stall
        last = prog[-1]
        seen.stamp()
        if st.fired is not None and st.fired_at != last.lineno:
            st.fired = None  # progress came back since: this is a new stall
        if st.fired is not None and self._extend(st, seen):
            return
        year = self.year()
        first = _Seen(last.lineno, last.line, None, iso=last.own_time(year))
        if role == "alive":
            st.alive = [a for a in st.alive if a.lineno > last.lineno] + [seen]
            if len(st.alive) >= rule.min_count and self._silent(rule, prog, seen, year):
                self._fire(rule, st, [first, *st.alive[-2:]], seen)
                st.fired_at = last.lineno
            return
        # ended_by: an outside kill after a silence far beyond the usual interval
        if self._silent(rule, prog, seen, year, need_times=True):
            self._fire(rule, st, [first, seen], seen)
            st.fired_at = last.lineno

    def _silent(self, rule: TimeRule, prog: list[Entry], seen: _Seen, year: int | None, need_times: bool = False) -> bool:
        """Whether the time since the last progress line is `gap` times the usual interval (and at least
        min_seconds). Progress lines need timestamps of their own for this; without them only a heartbeat
        count can tell, so the answer is yes unless need_times."""
        times = [t for t in (seconds(e.own_time(year)) for e in prog[-21:]) if t is not None]
        if seen.time is None or len(times) < 3:
            return not need_times
        gaps = sorted(b - a for a, b in zip(times, times[1:]) if b >= a)
        usual = gaps[len(gaps) // 2] if gaps else 0.0
        return seen.time - times[-1] >= max(rule.gap * usual, rule.min_seconds)

    def live_check(self, setting: float | None) -> None:
        """On a live pipe: a worker whose progress lines stopped for `setting` seconds (0.0: LIVE_STALL_FACTOR
        times its usual interval, at least LIVE_STALL_MIN) gets a provisional stall finding. Progress that
        comes back re-arms the check; nothing printed is withdrawn."""
        if setting is None:
            return
        now = self.recent.clock()
        for pid in self.progress_pids:
            by_worker: dict[str | None, list[Entry]] = {}
            for e in self.recent.rings.get(pid, ()):
                by_worker.setdefault(e.worker, []).append(e)
            for worker, mine in by_worker.items():
                last = mine[-1]
                if self.live_flagged.get(worker, -1) >= last.lineno:
                    continue  # already reported for this silence (by this or another progress pattern)
                silent = now - last.wall
                if setting:
                    limit = setting
                elif len(mine) < 3:
                    continue
                else:
                    gaps = sorted(b.wall - a.wall for a, b in zip(mine, mine[1:]))
                    limit = max(LIVE_STALL_FACTOR * gaps[len(gaps) // 2], LIVE_STALL_MIN)
                if silent < limit:
                    continue
                self.live_flagged[worker] = last.lineno
                self._provisional(self.ot.family_of[pid], last, worker, silent, limit)

    def _provisional(self, family: str, last: Entry, worker: str | None, silent: float, limit: float) -> None:
        who = f"worker {worker}" if worker else "the stream"
        note = (f"provisional: no progress line from {who} for {silent:.0f} s on a live pipe (limit {limit:.0f} s); "
                "reported while the process may still be running, and not withdrawn if progress resumes")
        ln = last.line
        f = self.make(self.ledger[family], [ln.content, f"(no progress for {silent:.0f} s)"], 0.5, "regex",
                      last.lineno, last.lineno, last.own_time(self.year()), worker, ln.stream, None, [ln.body],
                      ["live stall", worker or ""])
        f.caveats = [note, *f.caveats]
        f.facts = {**f.facts, "over_time_rule": "stall live"}
        self.emit(f)

    # ------------------------------------------------------------------ rate
    def _rate(self, rule: TimeRule, role: str, st: _RuleState, seen: _Seen, m, where: Where) -> None:
        if st.load_count and seen.lineno - st.last_load > rule.window:
            st.loads, st.load_count, st.served = [], 0, 0  # loads that far apart: a new count
            st.fired = None
        if st.load_count:
            start = st.count_from if st.count_serial == where.serial else where.lo
            st.served += count_in(self.ot.region[self.ot.pid_of[(id(rule), "per")]], where.buf, start, where.ls)
        st.count_from, st.count_serial, st.last_load = where.le, where.serial, seen.lineno
        st.load_count += 1
        if len(st.loads) < max(rule.min_count, MAX_EVIDENCE):
            st.loads.append(seen.stamp())
        if st.fired is not None and self._extend(st, seen.stamp()):
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
