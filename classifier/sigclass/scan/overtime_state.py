"""Running the ledger's `over_time` rules (ledger/overtime.py, compiled in scan/overtime.py) on one source."""

from __future__ import annotations

from typing import Callable, TYPE_CHECKING

from sigclass.ledger.overtime import TimeRule
from sigclass.ledger.patterns import MATCH_TIMEOUT
from sigclass.records import MAX_LINES_KEPT
from sigclass.scan.overtime import (
    CROSS_BLOCK_LINES, join_open, LOOK_BACK_BYTES, MAX_EVIDENCE, number, OverTime, QUIET_SECONDS, register, RuleState,
    Seen, touch, Where,
)
from sigclass.scan.progress import count_in, Recent, TAIL_BYTES
from sigclass.scan.stall import StallRules
from sigclass.text.lines import Line, split_line
from sigclass.vocab import Method

if TYPE_CHECKING:
    from sigclass.ledger.pack import Ledger
    from sigclass.records import Finding


class OverTimeState(StallRules):
    """The over-time rules' state for one source (a part of `ScanState`)."""

    def __init__(self, ot: OverTime, ledger: Ledger, make: Callable[..., Finding], emit: Callable[[Finding], None],
                 search: Callable, year: Callable[[], int | None], shared: dict) -> None:
        self.ot = ot
        self.ledger = ledger
        self.make = make
        self.emit = emit
        self.search = search
        self.year = year
        self.shared = shared  # (family, worker) -> [its open finding, time of its latest evidence]
        self.states: dict[tuple[int, str | None], RuleState] = {}  # (rule, worker) -> its state
        self.rates = ot.rates  # read-only, shared by every source
        self.progress_pids = ot.progress_pids
        self.recent = Recent(ot.progress_regions)
        self.looked: dict[int, tuple[int, int]] = {}  # progress pattern -> (block, offset) its look-backs reached
        self.live_flagged: dict[str | None, int] = {}  # worker -> its last progress line when reported stalled
        self.recovery_line: dict[str, int] = {}  # family -> the last line of a recovery rule of it (any worker)

    # ------------------------------------------------------------------ feeding
    def block_end(self, buf: bytes, lo: int, n: int, last_lineno: int, serial: int) -> None:
        """A block has been read: keep the latest progress lines of its tail, and count the requests
        served after the last load in it."""
        self.recent.tail(buf[max(lo, n - TAIL_BYTES):n], last_lineno)  # read when a ring is asked for
        for key, st in self.states.items():
            rule = self.rates.get(key[0])
            if rule is not None and st.count_serial == serial:
                limit = None
                if last_lineno - st.last_load > rule.window:
                    # any later load is more than `window` lines on and starts a new count: this one only
                    # decides the end-of-log check, which needs it just up to the ratio's threshold
                    limit = 0 if st.fired is not None or st.load_count < rule.min_count else \
                        max(int(st.load_count / rule.ratio - st.served) + 1, 0)
                if limit != 0:
                    st.served += count_in(self.ot.region[self.ot.pid_of[(id(rule), "per")]], buf, st.count_from,
                                          n, limit)
                st.count_serial = -1

    def hit(self, pids: set[int], ln: Line, lineno: int, iso: Callable[[], str | None], where: Where) -> None:
        seen = None
        # in the ledger's order (a set's order shifts as patterns are added): where two rules of a family fire on one
        # line, the one its file states first (the specific one above the general) is the one the finding names
        for pid in sorted(pids) if len(pids) > 1 else pids:
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

                seen = Seen(lineno, ln, when, where)
            for rule, role in entries:
                # a rate rule counts a whole source (a server's requests and its engine's loads come from two
                # processes), except where a JSON record or a rank prefix names the worker: each rank's are its own
                key = (id(rule), ln.worker)  # each worker's own count (a rate rule's requests: any line between)
                st = self.states.setdefault(key, RuleState())
                getattr(self, f"_{rule.kind}")(rule, role, st, seen, m, where)
        if seen is not None:
            seen._when = None  # the block the line came from is gone after this

    def finish(self) -> None:
        for key, st in self.states.items():
            if key[0] in self.rates:
                self._rate_check(self.rates[key[0]], st)

    def new_unit(self, worker: str | None) -> None:
        """A unit starts on the worker: its rules count from nothing again (what the unit before it printed is
        that unit's evidence)."""
        for key in [k for k in self.states if k[1] == worker]:
            st = self.states.pop(key)
            if key[0] in self.rates:
                self._rate_check(self.rates[key[0]], st)  # the unit before it ends here: judge its count

    def progress_after(self, worker: str | None, line: int, until: int | None = None) -> int:
        """How many recent progress lines of the worker lie below a line, and above `until` (for `recovered`)."""
        return self.recent.after(self.progress_pids, worker, line, until)

    def recovered_after(self, family: str, line: int) -> bool:
        """Whether a recovery rule of the family matched a line below `line` in this source."""
        return self.recovery_line.get(family, 0) > line

    # ------------------------------------------------------------------ recovery
    def _recovery(self, rule: TimeRule, role: str, st: RuleState, seen: Seen, m, where: Where) -> None:
        self.recovery_line[rule.family] = max(self.recovery_line.get(rule.family, 0), seen.lineno)

    # ------------------------------------------------------------------ metric
    def _metric(self, rule: TimeRule, role: str, st: RuleState, seen: Seen, m, where: Where) -> None:
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
        for m in self.ot.stretch[id(rule)].finditer(text, concurrent=False, timeout=MATCH_TIMEOUT):
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

    def _consecutive(self, rule: TimeRule, prev: Seen, seen: Seen, where: Where) -> bool:
        """Whether no step of the same worker between two met steps failed the condition."""
        if prev.serial != where.serial:
            return seen.lineno - prev.lineno <= CROSS_BLOCK_LINES
        gap = where.buf[prev.le:where.ls].decode("utf-8", "replace")
        try:
            return all(rule.met(v, []) for v in self._lines_of(rule, gap, seen.line.worker))
        except TimeoutError:
            return False

    def _history(self, rule: TimeRule, seen: Seen, where: Where) -> list[float]:
        """The values of the same worker's step lines just above a line (for a spike's running median)."""
        text = where.buf[max(where.lo, where.ls - LOOK_BACK_BYTES):where.ls].decode("utf-8", "replace")
        try:
            vals = self._lines_of(rule, text, seen.line.worker)
        except TimeoutError:
            return []
        return [v for v in vals if v == v and abs(v) != float("inf")][-20:]

    # ------------------------------------------------------------------ storm
    def _storm(self, rule: TimeRule, role: str, st: RuleState, seen: Seen, m, where: Where) -> None:
        if st.run and seen.lineno - st.run[-1].lineno > rule.window:
            st.run.clear()
        if not st.run:
            st.first = None
        st.run.append(seen.stamp())
        del st.run[:-max(rule.min_count, MAX_EVIDENCE)]
        if rule.when is not None:
            value = number(m.groupdict().get("value"))
            if value is not None and st.first is None:
                st.first = value
            if value is None or not rule.met(value, [st.first] if rule.when == "fallen" else []):
                return
        if self._extend(st, seen):
            st.run.clear()
        elif len(st.run) >= rule.min_count and self._past_step(rule, seen, where):
            self._fire(rule, st, st.run, seen)

    def _past_step(self, rule: TimeRule, seen: Seen, where: Where) -> bool:
        """Whether the latest step line of the worker above a storm line is at least the rule's `min_step` (True for
        a rule without one; False when no step line is found above it: the storm may be the first steps' warm-up)."""
        if rule.step is None:
            return True
        text = where.buf[max(where.lo, where.ls - LOOK_BACK_BYTES):where.ls].decode("utf-8", "replace")
        try:
            found = list(self.ot.step_rx[id(rule)].finditer(text, concurrent=False, timeout=MATCH_TIMEOUT))
        except TimeoutError:
            return False
        for hit in reversed(found):
            a = text.rfind("\n", 0, hit.start()) + 1
            b = text.find("\n", hit.start())
            ln = split_line(text[a:] if b == -1 else text[a:b])
            if seen.line.worker is not None and ln.worker is not None and ln.worker != seen.line.worker:
                continue
            one = self.search(rule.step, ln.content)
            v = number(one.groupdict().get("value")) if one is not None else None
            if v is not None:
                return v >= rule.min_step
        return False

    # ------------------------------------------------------------------ rate
    def _rate(self, rule: TimeRule, role: str, st: RuleState, seen: Seen, m, where: Where) -> None:
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

    def _rate_check(self, rule: TimeRule, st: RuleState) -> None:
        if st.fired is not None or st.load_count < rule.min_count or st.served < 1:
            return
        if st.load_count / st.served >= rule.ratio:
            self._fire(rule, st, st.loads, st.loads[-1])
            st.fired.count = st.load_count  # type: ignore[union-attr]

    # ------------------------------------------------------------------ findings
    def _extend(self, st: RuleState, seen: Seen) -> bool:
        """Add evidence to the rule's finding; False when there is none or the rule was quiet long enough
        for this to be a new episode."""
        f = st.fired
        if f is None or (seen.time is not None and st.last is not None and seen.time - st.last >= QUIET_SECONDS):
            return False
        if seen.lineno > f.end_line or not f.lines:  # lines come in order: a later line is new evidence
            f.count += 1
            if len(f.lines) < MAX_LINES_KEPT:
                f.lines.append(seen.lineno)
            f.end_line = seen.lineno
        st.last = seen.time if seen.time is not None else st.last
        touch(self.shared, f, seen.iso)
        return True

    def _fire(self, rule: TimeRule, st: RuleState, run: list[Seen], seen: Seen) -> None:
        joined = join_open(self.shared, rule.family, seen.line.worker, [x.lineno for x in run] + [seen.lineno], seen.iso)
        if joined is not None:  # the family already has this fault open on the worker: one finding
            if not joined.facts.get("over_time_rule"):  # a record's finding (a NaN loss line) the rule now sees go on
                joined.facts = {**joined.facts, "over_time_rule": f"{rule.kind} {rule.name}"}
            st.fired, st.last = joined, seen.time
            if rule.kind != "rate":
                run.clear()
            return
        sig = self.ledger[rule.family]
        ev = [s.line.content for s in run[:MAX_EVIDENCE]]
        if seen not in run[:MAX_EVIDENCE]:
            ev.append(seen.line.content)
        st.episodes += 1
        key = [f"{rule.kind} {rule.name}"] + ([f"episode {st.episodes}"] if st.episodes > 1 else [])
        first = run[0]
        f = self.make(sig, ev, 1.0, Method.REGEX, first.lineno, seen.lineno, first.iso, seen.line.worker, seen.line.stream,
                      None, [s.line.body for s in run], key)
        f.count = len(run)
        f.lines = sorted({s.lineno for s in run} | {seen.lineno})
        f.facts = {**f.facts, "over_time_rule": f"{rule.kind} {rule.name}"}
        if rule.note:
            f.caveats = [rule.note, *f.caveats]
        st.fired, st.last = f, seen.time
        register(self.shared, f, seen.iso)
        if rule.kind != "rate":  # loads keep counting against the items served
            run.clear()
        self.emit(f)
