"""Root attribution, one verdict per log: after the whole input, which fault started it, what it took down, what
else broke (`scan/verdict.py` settles the findings' own roles first: superseded symptoms, late roots, recovered).

File order is not time order (workers' streams interleave; some lines carry no timestamp), so the verdict
never compares line numbers across workers. It ranks every failure by how directly it shows a fault:

  direct    a root-family fault in the worker's own lines (a CUDA error, a segfault, a failed import, ...)
  summary   a fault a launcher reports for a worker that printed nothing itself (exit -9 / 137, -11 / 139,
            srun's `task 3: Out Of Memory`): a rank the OOM killer took says nothing, its launcher does
  unknown   a failure no family explains (with an error line of its own)
  nccl      an NCCL error: most often what the others print when one rank died (an NCCL check that failed in
            the process itself, ncclInternalError or ncclInvalidUsage with no word of a peer, is direct)
  secondary a watchdog timeout, a dead engine or actor: what a victim prints
  unseen    a traceback cut short before its error line
  stopped   a stop signal from outside (a scheduler, a user)
  exited    a launcher's word that a worker exited non-zero, and nothing else
  report    a launcher tearing down the siblings of a failed child, or its ChildFailedError report

then by the time the fault began, where the failure carries a timestamp of its own stream (a watchdog that
"ran for 600012 milliseconds" began waiting ten minutes before it printed), then by its place among its own
worker's failures, then a worker's own lines before a helper process's copy of the same fault (vLLM's EngineCore
re-raises what a worker raised), then, among direct faults of several workers with no time of their own (every
rank printing the same OOM), by which was printed first (so too among the tasks srun or Hydra report ended: they
report each as it happens), then by worker id (a launcher's summary lists the
workers in an order of its own: torchelastic puts the first observed failure last). A weak failure (no
family, an NCCL error) printed after its own process's victim-family line belongs to that cascade. A launcher's
"first observed failure" is evidence, not truth: it is often a victim that exited first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Iterable, Sequence

from sigclass.records import Cause, Finding, Verdict, Victim
from sigclass.scan.shapes import fault_line, TEARDOWN
from sigclass.scan.triggers import LAUNCHER_REPORT
from sigclass.text.lazyre import lazy
from sigclass.text.lines import fingerprint
from sigclass.text.prefixes import NOT_A_WORKER, RANK_KINDS, Stream
from sigclass.text.workers import (EXIT_LINES, FIRST_OBSERVED, RELAYED_FROM, RELAYER_KINDS, RELAYERS, Exit, family_of_exit, norm_worker,
                                   worker_in_text, worker_of_stream)
from sigclass.vocab import CauseBasis, Method, Role, Status, UNKNOWN
from sigclass.text.workers import number_key

# how long a victim had been waiting when it printed (so when its wait began), as the frameworks word it: the NCCL
# watchdog's `ran for 600012 milliseconds before timing out`, its heartbeat monitor's `watchdog got stuck for 480
# seconds`, Gloo's `Timed out waiting 1800000ms for recv operation`, c10d's `The client socket has timed out after
# 1800s`, TCPStore's `Timed out after 1801 seconds waiting for clients`
_RAN_FOR = lazy(r"ran for (?P<ms>\d+) milliseconds|watchdog got stuck for (?P<s>\d+) seconds"
                      r"|Timed out waiting (?P<ms2>\d+)ms|timed out after (?P<s2>\d+)s\b"
                      r"|Timed out after (?P<s3>\d+) seconds waiting for clients")
# the pid the kernel's OOM killer names (`Out of memory: Killed process 5556 (python) total-vm:...`, before 4.x
# `Kill process 5556 (python) score 900 or sacrifice child`, `oom-kill:constraint=CONSTRAINT_NONE,...,task=python,
# pid=5556,uid=1000`): the process it took, whose launcher line (`local_rank: 1 (pid: 5556)`, the ChildFailedError
# table's `exitcode  : -9 (pid: 5556)`) or own prefix (`(RayWorkerWrapper pid=5556)`) names the worker
_KILLED_PID = lazy(r"\bKill(?:ed)? process (?P<p>\d+) \(|\boom-kill:\S*?[,:]pid=(?P<q>\d+)\b")
_PID_OF_EXIT = lazy(r"\(pid: (?P<p>\d+)\)|\bPID (?P<q>\d+)\b")
_KERNEL_OOM = lazy(r"(?i)oom[-_ ]kill|out of memory: kill|Out Of Memory|killed by the cgroup out-of-memory|Killed process \d+")

TIER_DIRECT, TIER_SUMMARY, TIER_UNKNOWN, TIER_NCCL, TIER_UNSEEN, TIER_SECONDARY, TIER_STOPPED, TIER_EXITED, TIER_REPORT = (
    60, 50, 40, 30, 15, 20, 10, 5, 0)
_UNDER_STOP = TIER_STOPPED - 1  # what fails after a stop signal: its victim, ranked just below it
# how sure the verdict is of a cause, by what showed it (a direct fault keeps its own confidence)
_SURE = {_UNDER_STOP: 0.3, TIER_UNKNOWN: 0.5, TIER_NCCL: 0.6, TIER_UNSEEN: 0.35, TIER_SECONDARY: 0.4, TIER_STOPPED: 0.3, TIER_EXITED: 0.3,
         TIER_REPORT: 0.2}
# a stop signal from outside (a scheduler, a user, an agent told to stop); a launcher tearing down the siblings of
# a failed child (`Killing subprocess N`, `Sending process N closing signal SIGTERM`) or its ChildFailedError
# report is not one: those follow a failure, they never start one
_SIGNAL_WORDS = lazy(r"[Rr]eceived (?:signal )?(?:SIG|\d)|death signal|got signal|[Cc]aught SIG|Got SIG"
                           r"|closing signal SIG(?:HUP|INT)"  # the agent forwards a hang-up or Ctrl-C it received
                           r"|Signal \d+ \(SIG|CANCELLED|: Terminated|task \d+: Terminated|KeyboardInterrupt|SignalException"
                           r"|exitcode *: -(?:1|2|15) ")
# stopped from outside: what a launcher's teardown or a scheduler does to every worker (the least telling)
_STOPPED = {"process-killed-by-signal"}
# what a victim says inside an error that no family (or only nccl-error) explains: the watchdog's own
# DistBackendError, a dead engine, a stop signal, and the messages frameworks print when the failure began in
# another process: Horovod's shutdown (`This was caused by an exception on one of the ranks`), c10d's
# monitoredBarrier (`Please check rank 0 logs for faulty rank`), its store client losing the rank that hosts the
# store (`store->get('0') got error: Connection reset by peer`), Gloo's pair (`Connection closed by peer`), an
# aborted communicator, vLLM's and SGLang's pointers to a root cause printed elsewhere (`see root cause above`,
# `please check the stack trace above for the root cause`, `Received sigquit from a child process`), JAX's
# coordination service on a peer that stopped (`Terminating process because the JAX distributed service detected fatal
# errors. This most likely indicates that another task died`, `The following tasks are unhealthy (stopped sending
# heartbeats)`)
_VICTIM_WORDS = lazy(r"Watchdog caught collective operation timeout|watchdog thread terminated with exception: \[Rank \d+\] Watchdog"
                           r"|EngineDeadError|EngineCore encountered an issue|[Rr]eceived SIGTERM|closing signal SIGTERM"
                           r"|death signal|got signal: \d+|SignalException"
                           r"|Horovod has been shut down|caused by an exception on one of the ranks"
                           r"|[Pp]lease check rank \d+ logs for faulty rank|got error: Connection reset by peer"
                           r"|Connection closed by peer \[|communicator was aborted"
                           r"|(?i:see root cause above|for the root cause)|Received sigquit from a child"
                           r"|indicates that another task died|tasks are unhealthy \(stopped sending heartbeats\)")
# NCCL's result codes for a failure of the calling process itself (`NCCL error: internal error`, `ncclInvalidUsage`,
# `invalid argument (run with NCCL_DEBUG=WARN for details)`, a failed ring check) and the words of a peer or link lost
_NCCL_OWN = lazy(r"internal error|ncclInternalError|invalid usage|ncclInvalidUsage|invalid argument|ncclInvalidArgument"
                 r"|NCCL WARN Error : ")
_NCCL_PEER = lazy(r"(?i)remote|peer|network|connection|socket|timed? ?out|abort")
# NCCLCHECK's trace of a call that returned an error (`host:pid:tid [dev] NCCL INFO misc/socket.cc:64 -> 3`), with no
# WARN naming the call: below a watchdog's timeout it is the communicator being aborted (its sockets closing), a
# consequence of the timeout rather than an NCCL failure of its own
_NCCL_TRACE_ONLY = lazy(r"NCCL INFO [\w/.]+\.(?:cc|cu|cpp|h):\d+ -> \d+ *$")
# a launcher's word that a child failed without saying why (exit status 1): a report, not a cause
# an error's own line: without one (a traceback cut short) a failure with no family says little; an error it names
# (an exception, a C++ what(), a segfault, a failed assertion), or an abort
_NAMED = (r"(?:^|[\s:\]>)])[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)(?:\([^)]*\))?(?:\[[^\]]*\])?(?::|$)"
          r"|what\(\):|Segmentation fault|[Aa]ssertion .* failed")
_NAMED_ERROR = lazy(_NAMED)
_ERROR_LINE = lazy(_NAMED + r"|Fatal Python error|Aborted")
# a process that aborted and said nothing else: the signal's report (absl's `*** SIGABRT received at time=...`, glog's,
# Open MPI's `Signal: Aborted (6)`, UCX's `Caught signal 6 (Aborted)`, the shell's `Aborted (core dumped)`, CPython's
# `Fatal Python error: Aborted`) without an error of its own: what a victim's teardown prints (an NCCL watchdog's
# uncaught DistBackendError ends in abort()) as often as a fault
_ABORT_WORDS = lazy(r"SIGABRT|Signal: Aborted|[Ss]ignal 6 \(|Aborted|Fatal Python error: Aborted")
_SURE_SUMMARY = {"host-oom-killed": (0.85, 0.6)}  # (with the kernel's or the scheduler's OOM word, without)
_SURE_SUMMARY_OTHER = 0.7


@dataclass
class _Cand:
    family: str
    worker: str | None
    line: int
    fingerprint: str
    confidence: float
    tier: int
    began: str | None  # when the fault began, from the failure's own timestamp; None: unknown
    time: str | None
    ordinal: int  # its place among its worker's failures (file order is time order within one worker)
    basis: str
    process: str | None = None  # the process whose lines these are (a Ray actor holding a rank is one process)
    first: int = 0  # among equal faults of different workers with no time of their own (direct, unknown, NCCL errors,
    # victims): the first printed (an unknown error every rank raises alike, a KeyError in shared code, or every rank's
    # watchdog timeout with no timestamp: it began where it was printed first, not on the lowest rank)
    helper: bool = False  # printed by a helper process of a worker (vLLM's EngineCore): a copy when a worker shows it too
    killed: str | None = None  # the pid the kernel's OOM killer names in it
    report: bool = False  # a launcher's own report of its failed children (its ChildFailedError), in no worker's lines
    in_order: bool = False  # shown by a launcher that reports its tasks' ends as they happen (srun, Hydra)
    # what another failure of its tier caused, so ranked after it: a KeyboardInterrupt and no word of the signal (what
    # a stop, Ctrl-C's SIGINT, raised), a launcher's word of how a worker ended after that worker's own exception
    symptom: bool = False
    sigint: bool = False  # a KeyboardInterrupt: SIGINT reached it, as Ctrl-C sends it to every process of the group
    late: bool = False  # a victim printed before the root it follows (scan/verdict.py's late roots): no floor below it

    def key(self) -> tuple:
        return (-self.tier, self.symptom, self.began is None, self.began or "", self.ordinal, self.helper, self.first,
                _worker_key(self.worker), self.family, self.fingerprint)


# Ray's ActorDiedError names the dead actor in its details, a tab-indented field a line (`\tclass_name: ...WorkerDict`,
# `\tactor_id: ...`, `\tpid: 2370037`), below the relay of the task that called it (`RayTaskError(ActorDiedError):
# ray::main_task() (pid=2368471, ...)`)
_ACTOR_PID = lazy(r"^\s*pid: (\d+)\s*$")


def _dead_actor_pid(block: Sequence[str]) -> str | None:
    """The pid of the actor whose death a Ray ActorDiedError reports, from its details."""
    seen = False
    for b in block:
        seen = seen or "ActorDiedError" in b or "RayActorError" in b
        if seen and (m := _ACTOR_PID.match(b)):
            return m.group(1)
    return None


def _trace_only(f: Finding, block: Sequence[str]) -> bool:
    """Whether an NCCL failure shows only NCCLCHECK's trace lines (no WARN naming the call that failed)."""
    return bool(f.evidence) and all(map(_NCCL_TRACE_ONLY.search, f.evidence)) and not any("NCCL WARN" in b for b in block)


def _before(c: _Cand, stop: _Cand) -> bool:
    """Whether c's own time says it began before the stop was printed (both timestamps of the log's clock)."""
    return c.began is not None and stop.time is not None and c.began < stop.time


def _worker_key(w: str | None) -> tuple:
    """Numbers in numeric order, then names, then no worker."""
    k = number_key(w) if w is not None else None
    return (0, *k) if k else (1, 0, w) if w is not None else (2, 0, "")


def _began(time: str | None, block: Sequence[str]) -> str | None:
    if time is None:
        return None
    for ln in block:
        m = _RAN_FOR.search(ln)
        if m:
            ms = m["ms"] or m["ms2"]
            try:
                waited = int(ms) if ms else 1000 * int(m["s"] or m["s2"] or m["s3"])
                t = datetime.strptime(time, "%Y-%m-%dT%H:%M:%S.%fZ") - timedelta(milliseconds=waited)
            except (ValueError, OverflowError):  # a duration no clock holds: the time it was printed
                return time
            return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return time


def _process_of(stream: Stream | None, worker: str | None) -> str | None:
    """The process a failure's lines come from: the outer prefix of a nested one (`(RayTrainWorker pid=5) [rank0]:`)."""
    if stream is not None and not stream.in_record and stream.id:
        return f"{stream.kind}:{stream.id}"
    return worker


def _after_teardown(f: Finding, block: Sequence[str]) -> list[_Cand]:
    """A launcher's teardown line (`Sending process 7788 closing signal SIGTERM`) runs on into the unprefixed
    traceback printed after it, which is the launcher's own only when it says so (its SignalException, its
    ChildFailedError): an error of another kind there is a worker's, printed without its prefix."""
    for i, ln in enumerate(block[1:], 1):
        if _ERROR_LINE.search(ln) and not (_SIGNAL_WORDS.search(ln) or LAUNCHER_REPORT.search(ln)
                                           or _VICTIM_WORDS.search(ln) or _is_summary([ln])):
            tail = list(block[i:i + 5])
            return [_Cand(UNKNOWN, norm_worker(worker_in_text(tail)), f.line + i, fingerprint([UNKNOWN, ln.strip()]),
                          0.0, TIER_UNKNOWN, None, f.time, 0, CauseBasis.OWN_LINES, None)]
    return []


def _killed_pid(block: Sequence[str]) -> str | None:
    """The pid the kernel's OOM killer names in a failure's lines (the last, when it took several)."""
    found = None
    for ln in block:
        m = _KILLED_PID.search(ln)
        if m:
            found = m["p"] or m["q"]
    return found


_NOT_PID_KINDS = ("", *RANK_KINDS, "host", "w", "jsonl")  # streams whose id is a rank or a host, not a pid


def _workers_by_pid(cands: Sequence[_Cand], exits: Sequence[Exit]) -> dict[str, str]:
    """Worker ids by pid, as this log names them: a launcher's exit line or table row naming both
    (`failed (exitcode: -9) local_rank: 1 (pid: 5556)`), a process prefix whose id is the pid of a worker
    (`(RayWorkerWrapper pid=5556, ip=...)`)."""
    out: dict[str, str] = {}
    for e in exits:
        m = _PID_OF_EXIT.search(e.text)
        w = norm_worker(e.worker)
        if m and w is not None:
            out.setdefault(m["p"] or m["q"], w)
    pid_named = False
    for c in cands:
        kind, _, pid = (c.process or "").rpartition(":")
        if c.worker is not None and pid == c.worker and kind not in _NOT_PID_KINDS:
            out.setdefault(c.worker, c.worker)
            pid_named = True
    if pid_named:  # workers named by their pids (Ray's actors): the pid the kernel took is a worker's id
        for c in cands:
            if c.killed is not None:
                out.setdefault(c.killed, c.killed)
    return out


# a worker named by its process as NCCL's lines print it: `host:pid` (from `host:pid:tid [dev] NCCL WARN ...`)
# (a container's host name may start with a digit: `92c90024c028:157`)
_HOST_PID = lazy(r"(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]*:(?P<pid>\d{2,8})")


def _aliases(cands: Sequence[_Cand], by_pid: dict[str, str]) -> dict[str, str]:
    """The worker a launcher's exit line names (`local_rank: 2 (pid: 69966)`) for a worker whose own lines name it
    by host and pid (`hetml-a100:69966`): one process under two names."""
    out: dict[str, str] = {}
    for c in cands:
        m = _HOST_PID.fullmatch(c.worker) if c.worker else None
        if m is not None and m["pid"] in by_pid and by_pid[m["pid"]] != c.worker:
            out[c.worker] = by_pid[m["pid"]]
    return out


def _only_teardown(block: Sequence[str], torn_down: set[str]) -> bool:
    """Whether every launcher exit line of a failure is one of its teardown kills (and no kernel's word of memory)."""
    said = [ln.strip()[:300] for ln in block if any(rx.search(ln) for rx in EXIT_LINES)]
    return bool(said) and all(any(t in x for t in torn_down) for x in said) and not any(_KERNEL_OOM.search(x) for x in block)


def _is_summary(lines: Iterable[str]) -> bool:
    return any(rx.search(ln) for ln in lines for rx in EXIT_LINES)


def abort_only(said: list[str]) -> bool:
    """Whether a failure no family explains shows only that its process aborted: its telling lines (`said`) are the
    abort's report, none an error of its own. It then says less than a victim's own words (a watchdog's timeout)."""
    return all(_ABORT_WORDS.search(x) and not _NAMED_ERROR.search(x) for x in said)


def decide(source: str, findings: Sequence[Finding], exits: Sequence[Exit] = ()) -> Verdict:
    """The verdict on one source from all its findings (unfolded, as found) and its launchers' exit lines."""
    if not findings and not exits:
        return Verdict(source, None)
    exits = _last_started_named(findings, exits)
    cands: list[_Cand] = []
    per_worker: dict[str | None, int] = {}
    kernel_oom = any(_KERNEL_OOM.search(e.text) for e in exits)
    # a kill the ledger names on a launcher's own exit line that is its teardown (Hydra's `KILLED BY SIGNAL: 9`
    # after another rank failed) is that teardown, whatever family the line's words alone would say
    teardown = _teardown(exits)
    torn = {e.line for e in exits} & teardown
    torn_down = {e.text for e in exits if e.line in teardown}
    failed_at = min((e.line for e in exits if _IN_TIME_ORDER.search(e.text) and e.code not in _NOT_FAILED), default=None)
    dead = _dead_workers(findings)
    watchdog_at = min((f.line for f in findings if f.family == "nccl-watchdog-timeout"), default=None)
    for f in findings:
        if f.status == Status.RECOVERED:
            continue  # progress went on after it (scan/verdict.py): not what stopped the run
        if f.line in torn:
            continue  # the exit candidates below make it a victim of the launcher's teardown
        # the head and the tail of a failure say what it is (a long traceback's middle is frames)
        whole = list(f.block or f.evidence or ())
        block = whole if len(whole) <= 40 else whole[:5] + whole[-35:]
        found = [m for m in map(RELAYED_FROM.search, block) if m]
        relays = [m["w"] for m in found if not m["a"].startswith(RELAYERS)]
        relayed = relays[-1] if relays else None
        if f.family == "ray-actor-died" and (relayed is not None or (f.worker is None and f.stream is None)) \
                and (died := _dead_actor_pid(block)):
            # a driver printed the relay of the task that called the actor (or no prefix names who printed it): the
            # actor whose death the error reports is where it began (a worker that raised it in its own lines keeps it)
            relayed = died
        relayer = relayed is None and bool(found)
        if relayer:
            # relayed by a trial actor only: the worker it came from is the one Ray reported dead, if one was
            relayed = dead.get(f.line) or found[-1]["w"]
        # an error relayed from another process is that process's fault, whoever printed it (a chain of relays
        # prints the outermost first: the last names the process where it began)
        worker = norm_worker(relayed) or norm_worker(f.worker)
        # a helper process of a worker (vLLM's EngineCore) re-raises what a worker raised: a copy of the fault, not
        # its origin, when a worker's own lines show the same
        helper = worker is None and f.stream is not None and f.stream.kind.startswith(NOT_A_WORKER)
        # so does a Ray Tune trial actor (its own lines, or a relay that names only it): a copy of a train worker's fault
        helper = helper or (relayer and f.line not in dead) or (
            f.stream is not None and f.stream.kind.startswith(RELAYER_KINDS) and relayed is None)
        worker = worker or norm_worker(worker_of_stream(f.stream)) or norm_worker(worker_in_text(block))
        # a process no prefix names that re-raised a worker's exception word for word (scan/verdict.py made it
        # that worker's victim): a copy too
        helper = helper or (worker is None and f.role == Role.SECONDARY and bool(f.root)
                            and f.root.get("family") == f.family and f.root.get("worker") is not None)
        summary = _is_summary(block)
        text = "\n".join(block)
        if f.family in _STOPPED:
            tier = TIER_STOPPED if _SIGNAL_WORDS.search(text) else TIER_REPORT
            if tier == TIER_STOPPED and f.stream is None and failed_at is not None and f.line > failed_at \
                    and not _STOP_REASON.search(text):
                tier = TIER_REPORT  # srun cancelling its step because a task failed (`--kill-on-bad-exit`)
        elif f.family_role == Role.SECONDARY:
            tier = TIER_SECONDARY
        elif f.family in _KILL_FAMILIES and f.role == Role.SECONDARY and f.family_role == Role.ROOT:
            tier = TIER_REPORT  # a kill scan/verdict.py found to be a launcher's teardown (SGLang's tree kill)
        elif f.family == UNKNOWN:
            if summary or LAUNCHER_REPORT.search(text) or _VICTIM_WORDS.search(text):
                tier = TIER_SECONDARY
            elif said := [x for x in block if _ERROR_LINE.search(x) or fault_line(x)]:
                tier = TIER_UNSEEN if abort_only(said) else TIER_UNKNOWN
            elif f.stream is None and any(TEARDOWN.search(x) for x in block):
                # a traceback cut short while its launcher was already killing the workers (`Killing subprocess N`
                # printed among its frames): one of the tracebacks of that teardown, not what started it
                tier = TIER_REPORT
            else:
                tier = TIER_UNSEEN
        elif f.family == "nccl-error" and (_VICTIM_WORDS.search(text) or (
                watchdog_at is not None and watchdog_at < f.line and _trace_only(f, block))):
            tier = TIER_SECONDARY
        elif f.method == Method.LEARNED and not any(_ERROR_LINE.search(x) for x in block):
            tier = TIER_UNSEEN  # the model's guess at a traceback cut short before its error line: a weak sign
        elif f.method == Method.LEARNED and _VICTIM_WORDS.search(text):
            tier = TIER_SECONDARY  # the model's family for an error whose own words say it began elsewhere
        elif summary and f.family in _KILL_FAMILIES and _only_teardown(block, torn_down):
            tier = TIER_REPORT  # the kills a launcher reports after a task already failed: its teardown
        elif summary:
            tier = TIER_SUMMARY
        elif f.family == "nccl-error":
            # an NCCL check that failed in this process (ncclInternalError, ncclInvalidUsage, ncclInvalidArgument) is
            # its own fault, unless its words say a peer or the network went away
            tier = TIER_DIRECT if _NCCL_OWN.search(text) and not _NCCL_PEER.search(text) else TIER_NCCL
        else:
            tier = TIER_DIRECT
        kernel_oom = kernel_oom or any(_KERNEL_OOM.search(x) for x in block)
        began = _began(f.time, block) if f.timed else None
        cands.append(_Cand(f.family, worker, f.line, f.fingerprint, float(f.confidence or 0.0), tier, began, f.time,
                           0, CauseBasis.LAUNCHER_SUMMARY if summary else CauseBasis.OWN_LINES,
                           _process_of(f.stream, worker), helper=helper, killed=_killed_pid(block),
                           report=f.stream is None and relayed is None and LAUNCHER_REPORT.search(text) is not None,
                           in_order=summary and _IN_TIME_ORDER.search(text) is not None,
                           symptom=tier == TIER_STOPPED and _interrupted_only(text),
                           sigint=tier == TIER_STOPPED and "KeyboardInterrupt" in text,
                           late=f.role == Role.SECONDARY and bool(f.root) and (f.root.get("line") or 0) > f.line))
        if f.family in _STOPPED and f.stream is None:
            cands.extend(_after_teardown(f, whole))
    # a launcher's exit lines name the worker of a fault whose own lines did not: the exit with the code the
    # family implies, else the one worker the launcher saw fail
    failed = sorted({norm_worker(e.worker) for e in exits
                     if e.worker is not None and e.code not in _NOT_FAILED and e.line not in teardown})
    # several failed: the one the launcher saw fail first (evidence, not truth, but all there is for these lines)
    first_seen = {norm_worker(e.worker) for e in exits
                  if e.worker is not None and e.code not in _NOT_FAILED and (e.first or FIRST_OBSERVED.search(e.text))}
    by_pid = _workers_by_pid(cands, exits)
    alias = _aliases(cands, by_pid)
    for c in cands:
        if c.killed is not None and c.killed in by_pid and (c.report or c.worker in (None, by_pid[c.killed])):
            # the process the OOM killer took, as its launcher or its prefix names it: the kernel's own word on
            # that worker, above a launcher's list of the workers that exited -9 (the others its teardown)
            c.worker = by_pid[c.killed]
            c.tier = max(c.tier, TIER_DIRECT) if c.tier == TIER_SUMMARY else c.tier
            continue
        if c.report:
            # the report's worker: the row whose exit code its family implies (a SIGSEGV row: segfault), else the
            # failure it saw first, not its table's first row
            codes = family_of_exit_codes(c.family)
            rows = {norm_worker(e.worker) for e in exits if e.worker is not None and codes and e.code in codes}
            if len(rows) == 1:
                c.worker = next(iter(rows))
            elif len(first_seen) == 1:
                c.worker = next(iter(first_seen))
        if c.worker is not None or c.tier < TIER_UNSEEN:
            continue
        codes = family_of_exit_codes(c.family)
        near = sorted((e for e in exits if e.worker is not None and e.code in codes), key=lambda e: abs(e.line - c.line))
        if near:
            c.worker = norm_worker(near[0].worker)
        elif len(failed) == 1:
            c.worker = failed[0]
        elif len(first_seen) == 1:
            c.worker = next(iter(first_seen))
    _own_error_first(cands, kernel_oom, alias)
    # an exit and no failure of that worker: a candidate of its own (a telling code: how sure, see _SURE;
    # exit 1: it failed, why is not said)
    seen_workers = {c.worker for c in cands if c.worker is not None and c.tier >= TIER_UNSEEN}
    for e in exits:
        w = norm_worker(e.worker)
        if w is None or w in seen_workers or e.code in (None, 0):
            continue
        fam = family_of_exit(e.code)
        if fam is None:
            fam, tier = UNKNOWN, TIER_EXITED
        elif e.line in teardown:
            fam, tier = "process-killed-by-signal", TIER_REPORT  # killed by its launcher, after another failed
        elif fam in _STOPPED:
            tier = TIER_STOPPED if _SIGNAL_WORDS.search(e.text) else TIER_REPORT
        else:
            tier = TIER_SUMMARY
        seen_workers.add(w)
        cands.append(_Cand(fam, w, e.line, fingerprint([fam, e.text]), 0.0, tier, None, e.time, 0, CauseBasis.EXIT_CODE,
                           w, in_order=_IN_TIME_ORDER.search(e.text) is not None))
    # an exit whose worker no line names (Hydra's `PID n RUNNING AT host` row, a launcher's line without a rank)
    # still says what ended a process: a candidate of its own when its code tells a family no failure here shows
    shown = {c.family for c in cands}
    for e in exits:
        fam = family_of_exit(e.code) if e.worker is None else None
        if fam is None or fam in shown or fam in _STOPPED:
            continue
        shown.add(fam)
        cands.append(_Cand(fam, None, e.line, fingerprint([fam, e.text]), 0.0, TIER_SUMMARY, None, e.time, 0,
                           CauseBasis.EXIT_CODE, None))
    if not cands:
        return Verdict(source, None)
    # within one worker, the order of its own lines is the order of time: a weak failure (no family, or an
    # NCCL error) after that worker's own victim-family line is part of the same cascade, never above it. A
    # launcher's words (its teardown, its report of an exit) are not the worker's own lines, and lines without a
    # worker prefix in a log that names workers come from several processes (the launcher's, a rank printing
    # unprefixed): neither says anything of one worker's order. A stop signal the launcher itself received (an
    # unprefixed `Received 2 death signal, shutting down workers`) stops every worker: what fails after it, anywhere,
    # is the shutdown; so does Ctrl-C, which a worker's KeyboardInterrupt shows (SIGINT goes to the whole group)
    floor: dict[str | None, _Cand] = {}
    everyone: _Cand | None = None
    several = any(c.worker is not None for c in cands)
    weak = (TIER_UNKNOWN, TIER_NCCL, TIER_UNSEEN)
    for c in sorted(cands, key=lambda c: c.line):
        launcher = c.tier in (TIER_REPORT, TIER_EXITED)
        c.ordinal = 0 if launcher else per_worker.get(c.worker, 0)
        if c.tier in (TIER_DIRECT, TIER_UNKNOWN, TIER_NCCL, TIER_SECONDARY) or (c.tier == TIER_SUMMARY and c.in_order):
            # a launcher's summary lists workers in its own order (torchelastic's root cause last); srun and Hydra
            # report each task's end as it happens, so the one they report first ended first
            c.first = c.line
            if c.tier in (TIER_UNKNOWN, TIER_NCCL, TIER_SECONDARY) and alias.get(c.worker, c.worker) in first_seen:
                # failures no family explains (or NCCL errors), alike on several workers, one of them the launcher's
                # first observed (torchelastic's Root Cause row, printed after the others): its word is all that
                # tells them apart
                c.first = -1
        if not launcher:
            per_worker[c.worker] = c.ordinal + 1
        # (a victim whose own time says it began before the stop, a watchdog that waited ten minutes, is not one)
        if everyone is not None and (c.tier in weak or c.tier == TIER_SECONDARY) and not _before(c, everyone):
            c.tier = _UNDER_STOP  # a victim of the stop (a watchdog, a dead engine included)
        if c.process is None and several:
            if c.tier == TIER_STOPPED and everyone is None:
                everyone = c
            continue
        if c.sigint and everyone is None:
            everyone = c  # Ctrl-C reached every worker: what they print after it is what the stop did
        below = floor.get(c.process)
        if below is not None and (c.tier in weak or (c.tier == TIER_SECONDARY and below.tier == TIER_STOPPED
                                                      and not _before(c, below))):
            # a weak failure after the worker's own victim line; anything a victim says after the worker was
            # told to stop
            c.tier = min(c.tier, below.tier) if below.tier != TIER_STOPPED else _UNDER_STOP
        if c.tier in (TIER_SECONDARY, TIER_STOPPED) and not c.late and (below is None or c.tier < below.tier):
            floor[c.process] = c
    _cut_short_by_interrupt(cands)
    ranked = sorted(cands, key=_Cand.key)
    top = ranked[0]
    cause = Cause(top.family, top.worker, top.line, top.fingerprint, _confidence(top, kernel_oom), top.time, top.basis)
    victims: dict[tuple, Victim] = {}
    independent: dict[tuple, Cause] = {}
    for c in ranked[1:]:
        same_worker = c.worker is not None and c.worker == top.worker
        if (same_worker or c.worker is None) and c.family == top.family:
            continue  # the same fault again (its summary, a repeat; with no worker named, nothing says another struck)
        if c.helper and c.family == top.family and not same_worker:
            k = (c.family, c.worker)
            if k not in victims:
                victims[k] = Victim(c.family, c.worker, c.line)  # a copy of the cause that a helper process printed
            continue
        if not same_worker and (c.tier == TIER_DIRECT or (c.tier == top.tier == TIER_SUMMARY and c.family == top.family)):
            k = (c.family, c.worker)
            if k not in independent:
                independent[k] = Cause(c.family, c.worker, c.line, c.fingerprint, _confidence(c, kernel_oom), c.time, c.basis)
            continue
        k = (c.family, c.worker)
        if k not in victims:
            victims[k] = Victim(c.family, c.worker, c.line)
    by_worker = lambda x: (_worker_key(x.worker), x.family or "", x.line)  # noqa: E731
    return Verdict(source, cause, tuple(sorted(victims.values(), key=by_worker)),
                   tuple(sorted(independent.values(), key=by_worker)))


# why a scheduler stopped a step, where it says (`CANCELLED AT ... DUE TO TIME LIMIT`, `DUE TO PREEMPTION`, `DUE TO
# NODE FAILURE`): a stop from outside, whatever failed before it
_STOP_REASON = lazy(r"DUE TO |[Cc]ancelled by (?:user|UID)|TIME LIMIT|PREEMPT")
# the families a kill alone shows (a SIGKILL, a SIGTERM): a launcher's teardown kills read as one of them
_KILL_FAMILIES = ("host-oom-killed", "process-killed-by-signal")
_NOT_FAILED = (None, 0, -15, -2, -1)  # no exit code, success, or stopped from outside

# launchers that report their tasks' ends as they happen (srun's `task 3: Exited with exit code 1` and then
# `tasks 0-2: Killed`; Hydra's BAD TERMINATION blocks, one a process): their order is time order
_IN_TIME_ORDER = lazy(r"srun: error: |^=\s+(?:KILLED BY SIGNAL|EXIT CODE): ")


def _dead_workers(findings: Sequence[Finding]) -> dict[int, str]:
    """The worker Ray reported dead (`A worker died or was killed ... Worker PID: 1942`) before the failure it is a
    victim of (scan/verdict.py's late roots), by the line of that failure."""
    out: dict[int, str] = {}
    for f in findings:
        if f.family == "ray-actor-died" and f.worker is not None and f.root and f.root.get("line") is not None:
            out.setdefault(f.root["line"], f.worker)
    return out


def _own_error_first(cands: Sequence[_Cand], kernel_oom: bool, alias: dict[str, str]) -> None:
    """A launcher's word of how a worker ended (`failed (exitcode: -9) local_rank: 3`, `exitcode : -6`) when that
    worker printed an exception of its own is how the exception ended it, not a second cause: it ranks with that
    exception, after it (the launcher reports an exit after the worker printed, whatever the file order). A kill the
    kernel's OOM killer owned to is the kernel's word, not the launcher's: it keeps its rank. A worker's own lines
    may name it by its process (NCCL's `host:pid:tid`) where the launcher names its rank: `alias` joins the two."""
    own: dict[str, _Cand] = {}
    for c in cands:
        if c.worker is not None and c.basis == CauseBasis.OWN_LINES and c.tier in (TIER_UNKNOWN, TIER_NCCL):
            w = alias.get(c.worker, c.worker)
            best = own.get(w)
            if best is None or c.tier > best.tier:
                own[w] = c
    for c in cands:
        mine = own.get(c.worker) if c.worker is not None else None
        if mine is None or (kernel_oom and c.family == "host-oom-killed"):
            continue
        # the shell's word of the kill in the worker's own lines (`[0]<stderr>:Killed`) after its exception, too
        if c.tier == TIER_SUMMARY or (c.tier == TIER_DIRECT and c.family in _KILL_FAMILIES and c.line > mine.line
                                      and c.process == mine.process):
            c.tier, c.symptom = mine.tier, True


INTERRUPT_STORM_LINES = 200  # how far above the first KeyboardInterrupt the tracebacks of the same Ctrl-C may begin


def _cut_short_by_interrupt(cands: Sequence[_Cand]) -> None:
    """Ctrl-C makes every worker print a traceback at once, and their lines interleave: the tracebacks whose own
    KeyboardInterrupt line landed elsewhere (glued to another's line) are cut short. A traceback with no error line
    of its own near or after the first KeyboardInterrupt is one of them: a victim of the stop, not a failure."""
    first = min((c.line for c in cands if c.sigint), default=None)
    if first is None:
        return
    for c in cands:
        if c.tier == TIER_UNSEEN and c.line >= first - INTERRUPT_STORM_LINES:
            c.tier = _UNDER_STOP


def _interrupted_only(text: str) -> bool:
    """Whether a stop's only word of a signal is the KeyboardInterrupt it raised (SIGINT's handler in CPython): the
    traceback of a victim of the stop, which the line saying who sent it (`Received 2 death signal`, `Main process
    received SIGINT`) tells better."""
    return "KeyboardInterrupt" in text and _SIGNAL_WORDS.search(text.replace("KeyboardInterrupt", "")) is None


def _last_started_named(findings: Sequence[Finding], exits: Sequence[Exit]) -> list[Exit]:
    """DeepSpeed's `{cmd} exits with return code = N` names the last process its launcher started, not the one that
    failed: its code is evidence of how a process ended, its worker only when no other worker is named at all (one
    process, or the only one anything here names)."""
    if not any(e.last_started for e in exits):
        return list(exits)
    named = {norm_worker(f.worker) for f in findings if f.worker is not None}
    named |= {norm_worker(e.worker) for e in exits if e.worker is not None and not e.last_started}
    named.discard(None)
    out = []
    for e in exits:
        if e.last_started and named - {norm_worker(e.worker)}:
            e = replace(e, worker=None, last_started=False)
        out.append(e)
    return out


def _teardown(exits: Sequence[Exit]) -> set[int]:
    """The lines of kills a launcher reports after it already reported a failed task: srun and Hydra kill the
    remaining tasks when one fails (`--kill-on-bad-exit`, Hydra's cleanup), so a later SIGKILL or SIGTERM with no
    word of memory is the teardown, not a fault of its own (srun says `Out Of Memory` for the cgroup's kills)."""
    out: set[int] = set()
    failed_before = False
    for e in sorted(exits, key=lambda e: e.line):
        if not _IN_TIME_ORDER.search(e.text):
            continue
        if failed_before and e.code in (-9, -15) and not _KERNEL_OOM.search(e.text):
            out.add(e.line)
        if e.code not in _NOT_FAILED:
            failed_before = True
    return out


def family_of_exit_codes(family: str) -> tuple[int, ...]:
    return {"host-oom-killed": (-9,), "segfault": (-11,), "shm-exhausted": (-7,)}.get(family, ())


def _confidence(c: _Cand, kernel_oom: bool) -> float:
    if c.tier == TIER_DIRECT:
        return round(c.confidence or 1.0, 3)
    if c.tier == TIER_SUMMARY:
        if c.family in _SURE_SUMMARY:
            yes, no = _SURE_SUMMARY[c.family]
            return yes if kernel_oom else no
        return _SURE_SUMMARY_OTHER
    return _SURE[c.tier]
