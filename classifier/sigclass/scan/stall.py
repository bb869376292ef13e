"""Stall rules: progress stops while the process lives (heartbeats go on, or a kill ends a long silence),
and on a live pipe, a provisional stall when a worker's progress lines stop (`--stall`)."""

from __future__ import annotations

from sigclass.ledger.overtime import TimeRule
from sigclass.scan.overtime import LOOK_BACK_BYTES, RuleState, Seen, seconds, Where
from sigclass.scan.progress import Entry, lines_back, RING
from sigclass.text.lines import split_line
from sigclass.vocab import Method

IDLE_LOOK_BACK = 16384  # bytes above a kill read for the worker's last progress or idle line


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


class StallRules:
    """The stall part of `OverTimeState`."""

    def _stall(self, rule: TimeRule, role: str, st: RuleState, seen: Seen, m, where: Where) -> None:
        pid = self.ot.pid_of[(id(rule), "progress")]
        start = max(where.lo, where.ls - LOOK_BACK_BYTES)
        done = self.looked.get(pid)
        if done is not None and done[0] == where.serial and done[1] <= where.ls:
            # this block was read up to an earlier heartbeat: what lies above it is in the ring already, or
            # lies below RING newer progress lines and cannot enter it
            start = max(start, done[1])
        self.recent.add(pid, lines_back(self.ot.region[pid], where.buf, start, where.ls, seen.lineno - 1, RING))
        self.looked[pid] = (where.serial, where.ls)
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
        first = Seen(last.lineno, last.line, None, iso=last.own_time(year))
        if role == "alive":
            st.alive = [a for a in st.alive if a.lineno > last.lineno] + [seen]
            if len(st.alive) >= rule.min_count and self._silent(rule, prog, seen, year):
                self._fire(rule, st, [first, *st.alive[-2:]], seen)
                st.fired_at = last.lineno
            return
        # ended_by: an outside kill after a silence far beyond the usual interval (not after the worker said it
        # had nothing left to do: a server idle until its job's time limit)
        if self._silent(rule, prog, seen, year, need_times=True) and not self._idle_before(rule, seen, where):
            self._fire(rule, st, [first, seen], seen)
            st.fired_at = last.lineno

    @staticmethod
    def _idle_before(rule: TimeRule, seen: Seen, where: Where) -> bool:
        """Whether the worker's last line above the kill that is progress or idle (rule.idle) is idle."""
        if rule.idle is None or rule.progress is None:
            return False
        tail = where.buf[max(where.lo, where.ls - IDLE_LOOK_BACK):where.ls].decode("utf-8", "replace")
        worker = seen.line.worker
        idle, progress = rule.idle.compiled, rule.progress.compiled
        for text in reversed(tail.splitlines()):
            said_idle = idle.search(text) is not None
            if not said_idle and progress.search(text) is None:
                continue
            if split_line(text).worker == worker:
                return said_idle
        return False

    def _silent(self, rule: TimeRule, prog: list[Entry], seen: Seen, year: int | None, need_times: bool = False) -> bool:
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
        f = self.make(self.ledger[family], [ln.content, f"(no progress for {silent:.0f} s)"], 0.5, Method.REGEX,
                      last.lineno, last.lineno, last.own_time(self.year()), worker, ln.stream, None, [ln.body],
                      ["live stall", worker or ""])
        f.caveats = [note, *f.caveats]
        f.facts = {**f.facts, "over_time_rule": "stall live"}
        self.emit(f)
