"""The state of one source being scanned: lines in, failure blocks assembled per stream, findings out."""

from __future__ import annotations

from typing import Callable, TYPE_CHECKING

import time as _time

from sigclass.ledger.signature import Signature
from sigclass.records import Finding, MAX_LINES_KEPT
from sigclass.scan.blocks import bytes_newlines, exception_lines, Marker, newlines, OpenBlock, strip_ts
from sigclass.scan.clock import SourceClock
from sigclass.scan.counted import CountedEvidence
from sigclass.scan.overtime import join_open, register, Where
from sigclass.scan.overtime_state import OverTimeState
from sigclass.scan.deferred import DeferredSideHits, Heads, line_counter, PendingFacts
from sigclass.scan import exitnoise
from sigclass.scan.explained import as_unknown, own_cause, startup_report_only, teardown_kills
from sigclass.scan.reader import SourceState
from sigclass.scan.shapes import (
    ACCESS_LOGS, client_error, emit_reports, fault_lines, one_line_fault, RAY_CREATION_TASK, Report, report_of, starts_fault, TEARDOWN,
)
from sigclass.scan.verdict import recurrence, settle, TREE_KILL
from sigclass.scan.triggers import (
    BLOCK_STARTERS, CHAIN, CONDA_NOT_INIT, CPP_CONT, EXC_LINE, FALLBACK_WARNING, THREAD_DIED, G_ABORT, G_CPP, G_EXC, G_FATAL, G_MARK, G_REPORT,
    G_SHAPE, GAP_AFTER_EXC, GAP_LINES, LIVE_QUIET, caught_import, logged_as_warning,
    IGNORED, IPYTHON_FRAME, IPYTHON_HEAD, MAX_BLOCK_LINES, MAX_MSG_LINES, NEW_RECORD, PADDLE_REPORT, PAYLOAD,
    SHELL_STOP, TERMINATE, tracker_noise,
)
from sigclass.text.lazyre import lazy
from sigclass.text.lines import fingerprint, header_tag, Line, parse_time, split_line
from sigclass.text.workers import Exit, RAISES_NO_TRACEBACK, worker_in_header, worker_in_text
from sigclass.vocab import MarkerKind, Method, Role, SignatureMode, Status, UNKNOWN
from sigclass.text.prefixes import COMPOSE_SERVICE, Stream

if TYPE_CHECKING:
    from sigclass.scan.scanner import Scanner


SPLIT_KEEP = 256  # lines of the current buffer kept split for look-backs (they reach 60 lines up)
KEEP_PER_KIND = 8  # findings of one kind (worker, family, fingerprint) kept whole for the source's verdict


PADDLE_HEAD = "C++ Traceback (most recent call last)"  # Paddle's report (triggers.PADDLE_REPORT)
# the lines of torchelastic's ChildFailedError table (torch/distributed/elastic/multiprocessing/errors:
# _MSG_FORMAT_TEMPLATE and _FAILURE_FORMAT_TEMPLATE): its rules, title, headings and each failure's rows
ELASTIC_ROW = lazy(r"(?:={20,}|-{20,}|\S+ FAILED|Failures:|  <NO_OTHER_FAILURES>|Root Cause \(first observed failure\):"
                   r"|\[\d+\]:|  (?:time|host|rank|exitcode|error_file|traceback) *: )")
ELASTIC_ENTRY = lazy(r"\[\d+\]:\s*$")  # the head of one failure's rows


def _under_child_failed(blk: "OpenBlock") -> bool:
    """Whether the block's exception is torchelastic's ChildFailedError (asked of table-shaped lines only)."""
    return any("ChildFailedError" in x.body for _, x in blk.lines[-80:])


RECORD_JOIN_LINES = 50  # a record's finding takes more evidence of its fault only this close below its last line
SLURMSTEPD = "slurmstepd: "  # Slurm's step daemon, speaking for the step rather than for a task
STATE_DICT_ROW = "size mismatch for "  # load_state_dict's list of parameters, a line each: one failure however long


def _frames_phase(head: str) -> str:
    """The phase a traceback's header line starts: Paddle's C++ report, IPython's frames, or Python's."""
    if head.startswith(PADDLE_HEAD):
        return "paddle"
    return "ipython" if IPYTHON_HEAD.match(head) else "frames"


# Docker Compose's service column before a line (the prefix text/prefixes.py reads)
COMPOSE_LINE = lazy(COMPOSE_SERVICE)


def _at_exception(blk: OpenBlock) -> bool:
    """A traceback's exception line reached: the block is a failure by its shape; its message lines follow."""
    blk.phase, blk.shaped, blk.msg_lines = "exc", True, 0
    return True


def _no_message(blk: OpenBlock) -> bool:
    """Whether a traceback's exception line said nothing after its name (`SystemError: `): Paddle's report follows."""
    last = next((ln.body.rstrip() for _, ln in reversed(blk.lines) if ln.body.strip()), "")
    return last.endswith(":") and EXC_LINE.match(last.lstrip()) is not None


class ScanState(SourceClock, CountedEvidence, DeferredSideHits):
    """The state of one source being scanned."""

    def __init__(self, scanner: Scanner, state: SourceState, on_finding: Callable[[Finding], None] | None) -> None:
        self.sc = scanner
        self.state = state
        self.on_finding = on_finding
        self.lineno = 0  # lines fully consumed so far
        self.open: dict[Stream | None, OpenBlock] = {}
        # the findings kept for the source's verdict and the result: the first KEEP_PER_KIND of each kind (worker,
        # family, fingerprint); later ones are folded into the last kept (count, lines), so memory does not grow
        # with repeats however long the source (`on_finding` still sees every one)
        self.findings: list[Finding] = []
        self.kinds: dict[tuple, tuple[int, Finding]] = {}
        # the latest root fault per worker (None: a root no worker owns) with its order, for attribution
        self.roots: dict[str | None, tuple[int, Finding]] = {}
        self.last_root: Finding | None = None
        self.root_seq = 0
        self.markers: list[Marker] = []
        self.kv: dict[str, str] = {}
        self.facts: dict[str, dict[str, str]] = {}  # complete only after resolve_facts()
        self.fact_lines: list[tuple[int, str, str, str]] = []  # unit-scope facts: (line, worker, fact, value), in order
        self.heads = Heads()
        self.pending_facts = PendingFacts(self.heads)
        self.unit_fact_ids, self.lazy_ids = scanner.fact_id_sets()
        self.counters: dict[tuple[str, str | None], Finding] = {}
        self.pending: list[Finding] = []
        self.held: list[Finding] = []  # a line that is noise at a normal exit, until the source ends or goes on failing
        self.quieted: list[Finding] = []  # ... and those the source's end showed to be noise
        self.exits: list[Exit] = []  # launchers' exit lines (counted.py)
        self.reports: list[Report] = []  # words that something failed, for the end of the source (scan/shapes.py)
        self._shape_seen: Line | None = None  # the last line a fault shape was asked about, and the answer
        self._shape_ok = False
        self.table_rank: str | None = None  # the rank row of a ChildFailedError table, for its exitcode row
        self.table_first = False  # under a ChildFailedError table's `Root Cause (first observed failure):` head
        self._lo = 0  # where the current span starts: look-backs stop there
        self._hits: dict[int, set[int]] = {}
        self._cur: tuple[bytes, int, Line] | None = None
        self._split: dict[int, Line] = {}
        self.bytes_seen = 0
        self.counts: dict[tuple[str, str | None], list] = {}
        self.family_open: dict[tuple, list] = {}  # counted and over-time findings still open, per family and worker
        self.last_emitted: dict[str | None, Finding] = {}  # each worker's latest finding
        self.counted_last: dict[int, str | None] = {}  # counted evidence: time of its finding's latest line
        self.episodes: dict[tuple, int] = {}  # counted evidence: findings made per key (episodes)
        self.recurring: dict[tuple, list] = {}  # published failures: when each was last seen, and its episode
        self.declined: set[tuple[str, str | None]] = set()  # counted evidence the learned model abstained on
        self.last_time: str | None = None
        self.first_time: str | None = None
        self.year: int | None = None
        self.live_clock = _time.monotonic
        self.over_time = OverTimeState(scanner.over_time, scanner.ledger, self._make, self._emit, scanner.guard.search,
                                       lambda: self.year, self.family_open)
        self._serial = 0  # blocks fed so far: over-time rules compare lines within one block

    # ------------------------------------------------------------------ feeding
    def feed(self, buf: bytes, start: int = 0, end: int | None = None, hits: dict[int, set[int]] | None = None,
             nl=None) -> None:
        """Process the whole lines in buf[start:end] (the rest of buf is not looked at); hits, when
        given, are the prefilter's answer for the whole of buf, nl the offsets of its newlines."""
        n = len(buf) if end is None else end
        self._lo = start
        if hits is None:
            hits = self.sc.engine.scan(buf)
        if start or n != len(buf):
            hits = {k: v for k, v in hits.items() if start <= k < n}
        self._hits = hits
        self._split = {}  # offsets of this buffer's lines split by _line -> their Line
        if self.first_time is None and self.lineno < 50:
            self._first_time_from_head(buf, start, n)
        self.bytes_seen += n - start
        self._serial += 1
        starts = sorted(hits)
        pos = start
        hi = 0
        lineno = self.lineno  # the lines before `counted`
        counted = start
        nstarts = len(starts)
        count = line_counter(buf, nl, newlines if self.bytes_seen > (8 << 20) else bytes_newlines)
        lazy = self.lazy_ids
        tail = 0  # 1 when the span ends in a line without a newline that was handled without counting
        while pos < n:
            if not self.open:
                while hi < nstarts and starts[hi] < pos:
                    hi += 1
                if hi >= nstarts:
                    break
                target = starts[hi]
                pids = hits[target]
                if pids <= lazy:
                    # facts and key=value fields only: no line number, no block logic (scan.deferred)
                    le = buf.find(b"\n", target, n)
                    le = n if le == -1 else le
                    self._lazy_line(buf[target:le], pids)
                    tail = le == n
                    pos = le + 1
                    continue
                lineno += count(counted, target)
                pos = target
            tail = 0
            le = buf.find(b"\n", pos, n)
            le = n if le == -1 else le
            pids = hits.get(pos)
            self._line(buf, pos, le, lineno + 1, pids)
            lineno += 1
            pos = counted = le + 1
        if counted < n:
            lineno += count(counted, n) + tail
        self.lineno = lineno
        if self.sc.over_time:
            self.over_time.block_end(buf, start, n, lineno, self._serial)
        if self.state.live and self.open:
            # on a live pipe, a failure whose exception line has been seen ends when its stream goes quiet,
            # even while other workers keep writing
            now = self.live_clock()
            for stream, blk in list(self.open.items()):
                if blk.phase not in ("frames", "chain") and now - blk.wall > LIVE_QUIET:
                    self._close(stream)
            self._release()
        if self.state.live:
            self.over_time.live_check(self.sc.live_stall)  # one worker may stop while others go on
        self._update_time_from_tail(buf, start, n)

    def idle(self) -> None:
        """A live pipe went quiet: every open block has ended (and a worker's progress may have stopped)."""
        for stream in list(self.open):
            self._close(stream)
        self.over_time.live_check(self.sc.live_stall)
        self._release()

    def finish(self) -> None:
        self.over_time.finish()
        for stream in list(self.open):
            self._close(stream)
        self._release()
        self.resolve_facts()
        held, self.held = self.held, []
        for f in held:
            if startup_report_only(f):
                self._out(as_unknown(f))
            elif exitnoise.work_finished({**self.facts.get("", {}), **self.facts.get(f.worker or "", {})}):
                self.quieted.append(f)
            else:
                self._out(f)
        emit_reports(self)
        settle(self.findings, self.sc.ledger, self._progress_in_unit, self.over_time.recovered_after,
               [r.line for r in self.reports if r.shape in ACCESS_LOGS and client_error(r.text)],
               [e.line for e in self.exits if TREE_KILL.search(e.text)])

    def _progress_in_unit(self, worker: str | None, line: int) -> int:
        """Progress lines of the worker below a line and above the next unit's start marker: the next unit's
        progress does not make the failure of the one before it `recovered`."""
        nxt = next((m.line for m in self.markers if m.line > line and m.kind == MarkerKind.START
                    and (m.worker is None or worker is None or m.worker == worker)), None)
        return self.over_time.progress_after(worker, line, nxt)

    # ------------------------------------------------------------------ per line
    def _line(self, buf: bytes, ls: int, le: int, lineno: int, pids: set[int] | None) -> None:
        raw = buf[ls:le].decode("utf-8", "replace")
        ln = split_line(raw)
        split = self._split
        if len(split) >= SPLIT_KEEP:
            split.clear()
        split[ls] = ln  # for a look-back from a failure a few lines below (_frames_above)
        if ln.line_override is not None:
            lineno = ln.line_override
        self._cur = (buf, ls, ln)  # for time_of: timestamps are parsed only where a record needs one
        if pids:
            self._side_hits(ln, lineno, pids)
            if G_REPORT in pids:
                rep = report_of(ln, lineno, self._cur_time())
                if rep is not None:
                    self.reports.append(rep)
            if G_MARK in pids and self.markers and self.markers[-1].line == lineno \
                    and self.markers[-1].kind == MarkerKind.START:
                self._new_unit(ln.stream, ln.worker)
            if self.sc.over_time:
                self.over_time.hit(pids, ln, lineno, self._cur_time, Where(buf, ls, le, self._lo, self._serial))
        # expire blocks of other streams that have been quiet for too long
        op = self.open
        if len(op) > 1 or (op and ln.stream not in op):
            for stream, blk in list(op.items()):
                if stream != ln.stream and lineno - blk.last > (GAP_LINES if blk.phase == "frames" else GAP_AFTER_EXC):
                    self._close(stream)
        blk = op.get(ln.stream)
        if blk is not None:
            if self._continues(blk, ln, pids):
                blk.lines.append((lineno, ln))
                blk.line_pids.append(pids)
                blk.last = lineno
                blk.wall = self.live_clock()
                if pids:
                    blk.pids |= pids
                if len(blk.lines) >= MAX_BLOCK_LINES:
                    self._close(ln.stream)
                return
            self._close(ln.stream)
        if pids and self._starts_block(ln, pids):
            self._open(buf, ls, ln, lineno, pids)

    def _new_unit(self, stream: Stream | None, worker: str | None) -> None:
        """A unit starts here: the failure block, counted evidence and open over-time findings of the unit
        before it on this worker do not run on into it."""
        self._close(stream)
        self.over_time.new_unit(worker)
        for reg in (self.family_open, self.counters, self.counts):
            for k in [k for k in reg if len(k) > 1 and k[1] == worker]:
                del reg[k]

    def _starts_block(self, ln: Line, pids: set[int]) -> bool:
        if PAYLOAD.match(ln.body):
            return False  # a request's quoted prompt
        for p in pids:
            if p in BLOCK_STARTERS:
                if p == G_EXC and not EXC_LINE.match(ln.body.lstrip()):
                    continue
                if p == G_SHAPE and not self._starts_fault(ln):
                    continue
                return True
            if p in self.sc.any_family and p not in self.sc.counted:
                return True
        return False

    def _starts_fault(self, ln: Line) -> bool:
        """scan/shapes.starts_fault, once per line (a line that starts a block is asked twice)."""
        if self._shape_seen is not ln:
            self._shape_seen, self._shape_ok = ln, starts_fault(ln)
        return self._shape_ok

    def _open(self, buf: bytes, ls: int, ln: Line, lineno: int, pids: set[int]) -> None:
        body = ln.body
        if "Traceback (most recent call last)" in body:
            kind, phase = "tb", _frames_phase(body.lstrip())
        elif RAY_CREATION_TASK in body:  # Ray prints the constructor's frames and its exception below this line
            kind, phase = "tb", "frames"
        elif G_CPP in pids or CPP_CONT.match(body.lstrip()):
            kind, phase = "cpp", "msg"
        else:
            kind, phase = "line", "msg"
        blk = OpenBlock(ln.stream, ln.worker, kind, phase, header_tag(ln.header), ln.header, lineno, lineno,
                     self.time_of(buf, ls, ln), ln.unit, [], [], set(pids), 0, self.live_clock())
        blk.own_time = bool(ln.time_override) or parse_time(ln.content, self.year) is not None
        blk.single = kind == "line" and G_SHAPE in pids and one_line_fault(ln)
        blk.shaped = kind in ("tb", "cpp") or bool(pids & {G_FATAL, G_ABORT}) or (
            G_EXC in pids and bool(EXC_LINE.match(body.lstrip()))) or (G_SHAPE in pids and self._starts_fault(ln))
        if kind != "tb":
            # a headless traceback: take the frame lines just above the exception line
            above = self._frames_above(buf, ls, ln, lineno)
            blk.lines.extend((no, x) for no, x, _ in above)
            blk.line_pids.extend(lp for _, _, lp in above)
            if blk.lines:
                blk.start = blk.lines[0][0]
                blk.shaped = blk.shaped or G_EXC in pids
            else:
                blk.ignored, blk.warned, blk.thread = self._ignored_above(buf, ls, ln)
        else:
            blk.ignored, blk.warned, blk.thread = self._ignored_above(buf, ls, ln)
        blk.lines.append((lineno, ln))
        blk.line_pids.append(pids)
        self.open[ln.stream] = blk

    def _ignored_above(self, buf: bytes, ls: int, ln: Line) -> tuple[bool, bool, str | None]:
        """Whether the line above a failure's first line, of the same stream, is CPython's word that the
        exception was ignored (triggers.IGNORED), whether it is a warning that the program goes on without
        something (triggers.FALLBACK_WARNING: a logger's warning with the caught exception's traceback below), and
        the name of the thread it says died of it (triggers.THREAD_DIED), if it says so."""
        if ls - 1 <= self._lo:
            return False, False, None
        start = max(buf.rfind(b"\n", self._lo, ls - 1) + 1, self._lo)
        prev = self._split.get(start) or split_line(buf[start:ls - 1].decode("utf-8", "replace"))
        if prev.stream != ln.stream:
            return False, False, None
        body = prev.body.lstrip()
        died = THREAD_DIED.match(body) if body.startswith("Exception in thread ") else None
        said = prev.content  # the warning level may be in the record's header (vLLM's `WARNING 06-25 16:32:09 [...] `)
        return (IGNORED.match(body) is not None, "WARN" in said and FALLBACK_WARNING.search(said) is not None,
                died["name"][:80] if died else None)

    def _frames_above(self, buf: bytes, ls: int, ln: Line, lineno: int) -> list[tuple[int, Line, set[int] | None]]:
        out: list[tuple[int, Line, set[int] | None]] = []
        end = ls - 1
        back = 0
        lo = self._lo
        split = self._split
        while end > lo and back < 60 and len(out) < 40:
            start = max(buf.rfind(b"\n", lo, end) + 1, lo)
            prev = split.get(start)
            if prev is None:  # kept for the next failure's look-back, which often reaches the same lines
                prev = split[start] = split_line(buf[start:end].decode("utf-8", "replace"))
            back += 1
            if prev.stream != ln.stream:
                end = start - 1
                continue
            b = prev.body
            # a JSON-lines record keeps its own number for every line its message holds
            no = prev.line_override if prev.line_override is not None else lineno - back
            if b.startswith((" ", "\t")) and b.strip() and not NEW_RECORD.match(b.lstrip()):
                # (an indented log record, as rich's logging handler prints one under the last one's time column,
                # is a record of its own, not a frame of the exception below)
                out.append((no, prev, self._hits.get(start)))
                end = start - 1
                continue
            if "Traceback (most recent call last)" in b:
                out.append((no, prev, self._hits.get(start)))
            break
        out.reverse()
        return out

    def _continues(self, blk: OpenBlock, ln: Line, pids: set[int] | None) -> bool:
        if blk.single:
            return False  # the process exited after its one line: what follows is someone else's
        body = ln.body
        if pids and G_SHAPE in pids and "Failed" in body and one_line_fault(ln):
            return False  # a check macro's line is a failure of its own, whatever was printed just above it
        stripped = body.strip()
        same_record = not ln.header or ln.header == blk.header or (":" in blk.tag and header_tag(ln.header) == blk.tag)
        if blk.kind == "tb" and (blk.phase == "paddle" or stripped.startswith(PADDLE_HEAD)
                                 or (blk.phase == "chain_wait" and stripped[:10] == "-" * 10 and _no_message(blk))):
            # Paddle's report: its rules, frames and heading, then the error line it summarises
            if not stripped or PADDLE_REPORT.match(stripped):
                blk.phase = "paddle"
                return True
            return _at_exception(blk)
        if blk.kind == "tb" and blk.phase == "ipython":
            # IPython's frames until its exception line; then the message, as after any exception line
            if not stripped or body[:1] in (" ", "\t") or IPYTHON_FRAME.match(stripped):
                return True
            return _at_exception(blk)
        if blk.kind == "tb" and blk.phase in ("frames", "chain"):
            if not stripped:
                return True
            if body[:1] in (" ", "\t") or "Traceback (most recent call last)" in body or CHAIN.search(body):
                if "Traceback (most recent call last)" in body:
                    blk.phase = _frames_phase(stripped)
                return True
            if blk.phase == "chain":
                return False
            if TEARDOWN.search(body):
                return False  # a cut traceback, then its launcher killing the workers: not the exception line it lacks
            return _at_exception(blk)
        # after the exception line, or in a one-line / C++ block
        if "Traceback (most recent call last)" in body:
            if blk.kind == "tb" and body.lstrip().startswith("Original Traceback"):
                # torch re-raises a DataLoader worker's exception with the worker's traceback in its message
                blk.phase = "frames"
                return True
            if blk.kind != "tb":  # `ERROR ... failed: X` (or kernel assertion lines) then its traceback: one failure
                if RAISES_NO_TRACEBACK.search(blk.lines[0][1].content):
                    return False  # a C++ record: the traceback is another process's
                blk.kind, blk.phase = "tb", "frames"
                return True
            if blk.kind == "tb" and blk.phase == "chain_wait":
                blk.phase = _frames_phase(stripped)
                return True
            return False
        if CHAIN.search(body):
            blk.phase = "chain" if blk.kind == "tb" else blk.phase
            return blk.kind == "tb"
        if not stripped:
            if blk.kind == "tb":
                blk.phase = "chain_wait"
                return True
            if blk.kind == "cpp":  # a paste that doubled its line breaks: `what():` may come after a blank line
                blk.phase = "cpp_wait"
                return True
            return False
        if blk.phase == "chain_wait":
            return False
        if blk.phase == "cpp_wait":
            if not CPP_CONT.match(stripped) or stripped.startswith(TERMINATE):
                return False  # (another abort after the blank line is a failure of its own)
            blk.phase = "msg"
        if SHELL_STOP.match(stripped) and (blk.kind == "tb" or EXC_LINE.match(blk.lines[0][1].body.lstrip())):
            return False  # an exception's failure, then the shell's or the scheduler's word of the stop: two findings
        if stripped.startswith(TERMINATE) and (blk.kind == "tb" or blk.lines[0][1].body.lstrip().startswith('File "')):
            return False  # a C++ exception thrown after the Python one was printed (at teardown): a failure of its own
        if CPP_CONT.match(stripped) or stripped.startswith(STATE_DICT_ROW):
            return True
        if pids and G_EXC in pids and blk.phase in ("exc", "msg") and blk.kind in ("tb", "line") \
                and EXC_LINE.match(stripped) and self._another_family(blk, pids):
            return False  # an exception line of another family below an exception's message: another failure
        if ELASTIC_ROW.match(body) and _under_child_failed(blk):
            # torchelastic's failure table: the launcher's report, through its first failure's rows; each further
            # failure (`[1]:` and its rows) is another worker's, a finding of its own where its rows name a family
            return not (ELASTIC_ENTRY.match(body) and any(ELASTIC_ENTRY.match(x.body) for _, x in blk.lines[-80:]))
        if not same_record or NEW_RECORD.match(stripped):
            return False
        if blk.msg_lines >= MAX_MSG_LINES:
            return False
        blk.msg_lines += 1
        return True

    def _another_family(self, blk: OpenBlock, pids: set[int]) -> bool:
        """Whether a line names a family and the open block names none of the same (an OOM's message, a stray line,
        then an illegal memory access: two failures; NCCL's `ncclSystemError: ...` under its DistBackendError: one)."""
        fam = self.sc.any_family
        new = {fam[p] for p in pids if p in fam}
        if not new:
            return False
        have = {fam[p] for p in blk.pids if p in fam}
        return bool(have) and not (new & have)

    # ------------------------------------------------------------------ closing
    def _close(self, stream: Stream | None) -> None:
        blk = self.open.pop(stream, None)
        if blk is None:
            return
        # drop trailing blank lines
        while blk.lines and not blk.lines[-1][1].body.strip():
            blk.lines.pop()
        if not blk.lines:
            return
        texts = [ln.content for _, ln in blk.lines]
        self.resolve_facts()
        bodies = [ln.body for _, ln in blk.lines]
        # no prefix named the worker: the failure's own text may (`[PG 1 Rank 1]`, `local_rank: 3`, srun's task)
        worker = blk.worker if blk.worker is not None else (worker_in_text(bodies) or worker_in_header(texts[:3]))
        if blk.worker is not None and stream is not None and stream.kind == "tee" and bodies[0].startswith(SLURMSTEPD):
            # slurmstepd's own word (`slurmstepd: error: Detected 1 oom_kill event in StepId=...`) under the tag
            # `srun --label` gave the stream it came through: the step's, no task's (srun's line names the task)
            worker, stream = worker_in_text(bodies), None
        elif blk.worker is not None and stream is not None and stream.kind == "host" \
                and COMPOSE_LINE.match(blk.lines[0][1].raw):
            # Docker Compose's service column names a container; a rank its process prints in its own record header
            # (SGLang's `sglang  | [2025-06-06 10:23:37 TP1] Scheduler hit an exception`) names the process in it
            worker = worker_in_text(texts[:3]) or worker

        def fact(name: str) -> str | None:
            for key in (worker or "", ""):
                v = self.facts.get(key, {}).get(name)
                if v is not None:
                    return v
            for d in self.facts.values():
                if name in d:
                    return d[name]
            return None

        timed = blk.own_time  # False: its time is inherited from a line above, perhaps another worker's
        if not blk.own_time:
            # the failure's own first timestamp beats the one inherited from another stream's line above
            for _, x in blk.lines[:20]:
                t = parse_time(x.content, self.year)
                if t is not None:
                    blk.time, timed = t, True
                    break
        res = self.sc.classify_block(texts, blk.pids, fact, blk.line_pids)
        caused = False  # a secondary family's block whose own exception explains it: no secondary family for it
        if res is not None and res[0].role == Role.SECONDARY and own_cause(res[0], bodies, self.sc.guard.hit):
            res, caused = None, True  # the exception the block holds is the failure; the family is what it caused (scan/explained.py)
        if res is not None and teardown_kills(res[0], bodies, self.sc.guard.hit):
            # the step's teardown killed the tasks: the block is what else it says (the stop), not host-oom-killed
            sig_id = res[0].id
            res = self.sc.classify_block(texts, {p for p in blk.pids if self.sc.any_family.get(p) != sig_id}, fact,
                                         blk.line_pids)
        if res is None and blk.ignored:
            return  # an exception CPython says it ignored (a finalizer's, an exit function's): no failure of the run
        if res is None and tracker_noise(bodies):
            return  # multiprocessing's resource tracker failing its own bookkeeping at exit
        if res is None and logged_as_warning(texts):
            return  # an exception a logger reported at its warning level, caught: the program went on
        if res is None and bodies[0].lstrip().startswith(CONDA_NOT_INIT):
            return  # `conda activate` in a shell conda was never set up in: the batch script went on
        if blk.warned and (res is None or res[0].id in ("import-error", "cuda-env-mismatch")) and caught_import(bodies):
            # an optional import that failed (its own module, or a CUDA library it links: `ImportError: libnvrtc.so.13:
            # cannot open shared object file`), logged under the warning that the program goes on without it
            return
        end_line = blk.lines[-1][0]
        unit = blk.unit
        if res is not None:
            sig, ev, conf = res
            key_lines = [strip_ts(e) for e in ev[-1:]]
            # a condition over time (a NaN loss), not an event (a recovery rule only says when a warning was got past)
            joinable = not blk.shaped and any(r.kind != "recovery" for r in sig.over_time)
            if joinable and self._joins(sig.id, worker, key_lines, end_line, blk.time):
                return  # a record of a fault the family has open on this worker (a NaN loss each step): one finding
            f = self._make(sig, ev[:5], conf, Method.REGEX, blk.start, end_line, blk.time, worker, stream, unit, bodies, key_lines)
            f.timed = timed
            self._emit(self._in_thread(f, blk))
            if joinable:  # an over-time rule, counted evidence or the next record of it near it joins this finding
                register(self.family_open, f, blk.time, near=RECORD_JOIN_LINES)
            return
        if self.sc.learned is not None and (blk.shaped or self.sc.signatures == SignatureMode.LEARNED):
            guess = self._ask_learned(bodies, worker)
            if guess is not None:
                fid, prob = guess
                sig = self.sc.ledger.signatures.get(fid)
                if (sig is not None and not (caused and sig.role == Role.SECONDARY)
                        and not (sig.none and self.sc.ruled_out(sig, texts))):
                    ev = exception_lines(bodies)
                    f = self._make(sig, ev, prob, Method.LEARNED, blk.start, end_line, blk.time, worker, stream, unit, bodies,
                                   [strip_ts(e) for e in ev[:1]])
                    f.timed = timed
                    self._emit(self._in_thread(f, blk))
                    return
        if not blk.shaped:
            return
        ev = exception_lines(bodies)
        if G_SHAPE in blk.pids:
            ev = fault_lines(texts, ev)
        f = Finding(
            family=UNKNOWN, title="Failure no signature explains", role=Role.ROOT, status=Status.UNKNOWN,
            confidence=0.0, method=Method.NONE, source=self.state.name, line=blk.start, end_line=end_line,
            time=blk.time, worker=worker, evidence=ev, fingerprint=fingerprint([UNKNOWN, *ev[-2:]]),
            mitigation="", family_role=Role.ROOT, unit=unit, stream=stream, block=bodies, timed=timed,
        )
        self._emit(self._in_thread(f, blk))

    @staticmethod
    def _in_thread(f: Finding, blk: OpenBlock) -> Finding:
        """A failure printed under threading's word that a thread died of it carries that thread's name (a fact):
        the process may go on without the thread (scan/verdict.py)."""
        if blk.thread is not None:
            f.facts = {**f.facts, "thread": blk.thread}
        return f

    def _ask_learned(self, bodies: list[str], worker: str | None) -> tuple[str, float] | None:
        """The learned callback's guess; one that wants facts also gets the source's facts for the worker."""
        learned = self.sc.learned
        assert learned is not None
        if learned.wants_facts:
            self.resolve_facts()
        facts = {**self.facts.get("", {}), **self.facts.get(worker or "", {})} if learned.wants_facts else None
        return learned(bodies, facts)

    def _make(self, sig: Signature, ev: list[str], conf: float, method: str, line: int, end: int, t: str | None,
              worker: str | None, stream: Stream | None, unit: str | None, bodies: list[str], key_lines: list[str]) -> Finding:
        facts = {}
        self.resolve_facts()
        for d in (self.facts.get("", {}), self.facts.get(worker or "", {})):
            facts.update(d)
        return Finding(
            family=sig.id, title=sig.title, role=sig.role, status=sig.status, confidence=round(conf, 3),
            method=method, source=self.state.name, line=line, end_line=end, time=t, worker=worker,
            evidence=[e.strip() for e in ev], fingerprint=fingerprint([sig.id, *key_lines]),
            mitigation=sig.mitigation, probes=list(sig.probes), caveats=list(sig.caveats),
            supersedes=[{"id": s.id, "note": s.note} for s in sig.supersedes],
            superseded_by=[{"id": s.id, "note": s.note} for s in sig.superseded_by],
            family_role=sig.role, unit=unit, stream=stream, block=bodies, facts=facts,
        )

    def _joins(self, family: str, worker: str | None, key_lines: list[str], line: int, t: str | None) -> bool:
        """Whether a record's failure joins the family's finding open on the worker: the same record again (the
        fingerprint of its key lines, made only when the cheaper tests leave it to decide), or one an over-time rule
        has seen go on (a NaN train loss, then a NaN validation loss), with no quiet spell since its last evidence
        and no other failure of the worker since it (a Ctrl-C's traceback between two of a launcher's kill records
        makes the second a failure of its own)."""
        entry = self.family_open.get((family, worker))
        if entry is None or self.last_emitted.get(worker) is not entry[0]:
            return False
        if not entry[0].facts.get("over_time_rule") and entry[0].fingerprint != fingerprint([family, *key_lines]):
            return False  # another record of the family (the launcher's word of the signal after its kill lines)
        return join_open(self.family_open, family, worker, [line], t) is not None

    def _emit(self, f: Finding) -> None:
        """Queue a finding; it is released once no earlier-starting block is still open."""
        self.last_emitted[f.worker] = f
        self.pending.append(f)
        self._release()

    def _release(self) -> None:
        if not self.pending:
            return
        floor = min((b.start for b in self.open.values()), default=None)
        self.pending.sort(key=lambda f: f.line)
        while self.pending and (floor is None or self.pending[0].line < floor):
            self._publish(self.pending.pop(0))

    def _keep(self, f: Finding) -> None:
        kind = (f.worker, f.family, f.fingerprint)
        n, last = self.kinds.get(kind, (0, f))
        if n < KEEP_PER_KIND:
            self.findings.append(f)
            self.kinds[kind] = (n + 1, f)
            return
        last.count += f.count
        room = MAX_LINES_KEPT - len(last.lines)
        if room > 0:
            last.lines.extend(f.lines[:room])
        last.end_line = max(last.end_line, f.end_line)

    def _publish(self, f: Finding) -> None:
        if self.held:
            held, self.held = self.held, []
            for h in held:  # the run failed on after it: the engine monitor's line was no exit noise
                self._out(h)
        recurrence(self.recurring, f)
        if f.family_role == Role.SECONDARY:
            # the latest root of the same worker (or of no worker); else, as in a distributed job, the latest root
            if f.worker is None:
                root = self.last_root
            else:
                mine, nobody = self.roots.get(f.worker), self.roots.get(None)
                best = max((x for x in (mine, nobody) if x is not None), key=lambda x: x[0], default=None)
                root = best[1] if best is not None else self.last_root
            if root is not None:
                f.role = Role.SECONDARY
                f.root = root.pointer()
            else:
                f.role = Role.ROOT
        else:
            f.role = Role.ROOT
            self.root_seq += 1
            self.roots[f.worker] = (self.root_seq, f)
            self.last_root = f
        f.lines = [f.line] if not f.lines else f.lines
        if f.role == Role.ROOT and (exitnoise.monitor_only(f) or startup_report_only(f)) and not self.findings:
            # the engine monitor at a normal exit, perhaps (scan.exitnoise), or an engine that did not start with
            # nothing above it that says why (scan.explained): decided at the end
            self.held.append(f)
            return
        self._out(f)

    def _out(self, f: Finding) -> None:
        self._keep(f)
        if self.on_finding is not None:
            self.on_finding(f)
