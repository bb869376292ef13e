"""Worker identity read from the text of a failure, and launchers' exit summaries.

A failure's worker usually comes from its line prefix (`[rank3]:`, `(RayWorkerWrapper pid=5)`). Where the
prefix does not say, the message often does: `[Rank 3]`, `[PG 1 Rank 1]`, `rank=5`, `local_rank: 3`, and
the launchers' summaries name the rank they saw fail (`failed (exitcode: -9) local_rank: 3`, the
ChildFailedError table, DeepSpeed's `... exits with return code = -9` (its code; see LAST_STARTED), `srun: error:
node: task 3: Killed`, `mpirun noticed that process rank 3 ... exited on signal 9`). The formats are the
ones those launchers print (torch.distributed.elastic, deepspeed.launcher, accelerate / subprocess,
Slurm's srun and slurmstepd, Open MPI's help texts, vLLM's executors, Ray's raylet).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sigclass.text.lazyre import lazy
from sigclass.text.prefixes import Stream

# SGLang's parallel ranks as its scheduler prefix prints them (`DP1 TP3`, `PP2 ATTN_CP3 TP3 EP3`, `DP1 PP1`)
_SGLANG_ID = r"(?:DP|PP|TP|EP|CP|ATTN_CP|ATTN_DP|ATTN_TP|MOE_DP|MOE_EP|MOE_TP)\d+"
_SGLANG_IDS = _SGLANG_ID + r"(?: " + _SGLANG_ID + r")*"

# a colour code left in a message (Ray's RayTaskError colours the process title): with its ESC byte, or without it as a
# web page keeps it (`[36mray::Trainable.train()[39m (pid=1876`)
_SGR_LEFT = r"(?:\x1b?\[[0-9;]{0,8}m)?"

# Where a failure's own text names its worker, in order of preference (the id is group `w`: digits, or an id as
# printed that `norm_worker` reads).
_IN_MESSAGE = (
    # torchelastic: `failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary`
    r"failed \(exitcode: -?\d+\) local_rank: (?P<w>\d+)",
    # the ChildFailedError table: `rank      : 3 (local_rank: 3)`
    r"^\s*rank\s*: (?P<w>\d+) \(local_rank: \d+\)",
    # Open MPI: `mpirun noticed that process rank 3 with PID 5 on node x exited on signal 9 (Killed).`
    r"noticed that process rank (?P<w>\d+) with PID",
    # srun: `srun: error: node-1: task 3: Killed`, `tasks 1-3: Out Of Memory`
    r"srun: error: [^:\s]+: tasks? (?P<w>\d+)(?:[-,]\d+)*: ",
    # vLLM's executor: `Worker proc VllmWorker-2 died unexpectedly`
    r"Worker proc VllmWorker-(?P<w>\d+) died",
    # torch.multiprocessing.spawn: `process 3 terminated with signal SIGKILL`, and the error it relays:
    # `-- Process 3 terminated with the following error:`
    r"[Pp]rocess (?P<w>\d+) terminated with (?:signal|exit code|the following error)",
    # Open MPI's (and PRRTE's) first failed process: `Process name: [[17665,1],3]`, `[prterun-host-147515@1,3]`
    r"Process name: \[(?:\[[^\]]*\]|[^\],\s]+),(?P<w>\d+)\]",
    # MPICH / Intel MPI (Hydra): `=   RANK 3 PID 27494 RUNNING AT node1`
    r"RANK (?P<w>\d+) PID \d+ RUNNING AT ",
    # vLLM's Ray executor: `RayWorkerProc rank=[3] died unexpectedly`
    r"rank=\[(?P<w>\d+)(?:, \d+)*\] died unexpectedly",
    # SGLang's scheduler prefix (`configure_logger(prefix=...)`: ` DP{dp_rank}`, ` PP{pp_rank}`, ` ATTN_CP{..}`,
    # ` MOE_DP{..}`, ` TP{tp_rank}`, ` EP{moe_ep_rank}`, each only when that size is over 1): `[2025-03-10 12:00:00 TP1] `,
    # `[2025-03-10 12:00:00 DP0 TP3] Scheduler hit an exception`, `[... DP1 PP1] ` (a failure's lines start after the
    # time, which is read as the line's header). The worker is the ids as printed (`norm_worker` reads the TP rank
    # where there is one); its process title `sglang::scheduler_DP1_TP3` names the same in native frames
    r"^(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d )?(?:migrate )?(?P<w>" + _SGLANG_IDS + r")\] ",
    # ProcessGroupNCCL: `[Rank 3]`, `[PG 1 Rank 1]`, `[PG ID 0 PG GUID 0(default_pg) Rank 1]`
    r"\[(?:PG [^\]]{0,60}?)?(?i:Rank) (?P<w>\d+)\]",
    # a launcher's command line: `'--local_rank=0'` (`died with <Signals...>`; not DeepSpeed's `exits with return code`)
    r"--local[_-]rank[= ]'?(?P<w>\d+)",
    # text-generation-inference's launcher: `Shard 1 failed to start`, `Shard 0 crashed`
    r"\bShard (?P<w>\d+) (?:failed to start|crashed)",
    # Ray relays a remote failure with the actor's pid: `ray::RayWorkerWrapper.execute_method() (pid=5826, ip=...)`
    # (RayTaskError prints the process title in cyan: a paste may keep the codes without their ESC byte)
    r"ray::[\w.]+\(\)" + _SGR_LEFT + r" \(pid=(?P<w>\d+)",
    # Xoscar (Xinference's actor pool) relays a remote actor's error with its address and pid:
    # `[address=0.0.0.0:44163, pid=584] cannot import name ...`
    r"\[address=[^,\]\s]+, pid=(?P<w>\d+)\]",
    # the raylet's death notice: `Worker PID: 93658 Worker exit type: SYSTEM_ERROR`
    r"Worker PID: (?P<w>\d+)",
    # Ray's memory monitor names the task it killed
    # (`where the task (actor ID: 1ff7, name=RayWorkerWrapper.__init__, pid=2543, memory used=9.93GB)`)
    r"name=[\w.]+, pid=(?P<w>\d+), memory used=",
    r"(?<![\w-])(?:global_rank|rank)[=:] ?(?P<w>\d+)\b",
    # SGLang's native frames name the scheduler process: `(0x55ba19095c5d in sglang::scheduler_TP0)`
    r"sglang::scheduler_(?P<w>" + _SGLANG_ID + r"(?:_" + _SGLANG_ID + r")*)\b",
    # JAX's coordination service names a task by its path: `/job:jax_worker/replica:0/task:3` (the task it found
    # unhealthy, which the others then stop for)
    r"/job:\w+/replica:\d+/task:(?P<w>\d+)\b",
    # JAX's multi-process runtime: `process_index=3`, `process_id: 3`
    r"(?<![\w-])process_(?:index|id)[=:] ?(?P<w>\d+)\b",
    r"(?<![\w-])local_rank[=:] ?(?P<w>\d+)\b",
    # NCCL's own line prefix (`"%s:%d:%d [%d] "`: host, pid, thread, CUDA device): `node1:6897:7102 [2] NCCL INFO
    # ...`, a warning with its source line first (`node1:6897:7102 [2] misc/nvmlwrap.cc:187 NCCL WARN ...`); the
    # worker is the process, host:pid
    r"^(?P<w>[\w.-]+:\d+):\d+ \[\d+\] (?:[\w./-]+:\d+ )?NCCL (?:INFO|WARN|ERROR|TRACE|ABORT)",
)
IN_MESSAGE: tuple[re.Pattern[str], ...] = tuple(lazy(p) for p in _IN_MESSAGE)
# A remote error relayed by another process names the process it came from: Ray's
# `ray.exceptions.RayTaskError(RuntimeError): ray::CriticModelRayActor.save_checkpoint() (pid=499917, ip=...)`
# printed among the lines of the actor that called it
RELAYED_FROM = lazy(r"ray::(?P<a>[\w.]+)\(\)" + _SGR_LEFT + r" \(pid=(?P<w>\d+)")
# Ray Tune's trial actors that run a trainer or a function and only pass on what its workers raised (Ray Train's
# `TrainTrainable`, `with_parameters`' `_Inner`, a function trainable's `ImplicitFunc`): a relay that names one of
# them names the process that relayed the fault, not the worker where it began
RELAYERS = ("TrainTrainable.", "_Inner.", "ImplicitFunc.")
RELAYER_KINDS = tuple(r.rstrip(".") for r in RELAYERS)  # their own lines' prefix: `(TrainTrainable pid=96138)`


def number_id(digits: str) -> str:
    """A run of digits as an id: leading zeros dropped, ASCII digits, any length (``int`` refuses a string of
    over 4,300 digits, and a log line can hold one)."""
    digits = digits.lstrip("0") or "0"
    return str(int(digits)) if len(digits) <= 1000 else digits


def number_key(s: str) -> tuple[int, str] | None:
    """The sort key of an ASCII run of digits, in numeric order and for any length (no int()); None otherwise."""
    if s.isascii() and s.isdigit():
        d = s.lstrip("0") or "0"
        return (len(d), d)
    return None


_NEEDS: list[tuple[str, ...] | None] = []


def _rules() -> list[tuple[re.Pattern[str], tuple[str, ...] | None]]:
    """Each rule with the plain strings one of which every match of it holds (None: no such set), made once."""
    if not _NEEDS:
        from sigclass.scan.locate import required_literals

        for p in _IN_MESSAGE:
            got = required_literals(p)
            _NEEDS.append(None if got is None else tuple(s.decode("ascii") for s in got))
    return list(zip(IN_MESSAGE, _NEEDS))


def _worker_id(w: str) -> str:
    """An id a message names: digits as a number; SGLang's ranks as the TP rank where there is one (the tensor-parallel
    rank is the GPU worker), else as printed (`DP1 PP1`)."""
    if w.isdigit():
        return number_id(w)
    ids = re.findall(_SGLANG_ID, w)
    tp = next((x[2:] for x in ids if x.startswith("TP")), None)
    return number_id(tp) if tp is not None else " ".join(ids) or w


# DeepSpeed's launcher (deepspeed/launcher/launch.py, `sigkill_handler`) logs `{cmd} exits with return code =
# {last_return_code}` where `cmd` is the command it built last, for its last local rank, whichever process failed:
# the code is the failed process's, the command's `--local_rank=N` only the last process the launcher started
LAST_STARTED = lazy(r"exits with return code = -?\d+")
_CMD_RANK = _IN_MESSAGE.index(r"--local[_-]rank[= ]'?(?P<w>\d+)")


def worker_in_text(lines: list[str]) -> str | None:
    """The worker a failure's own lines name, by the first rule (in table order) that matches any line (DeepSpeed's
    return-code line names no worker: see LAST_STARTED)."""
    text = "\n".join(lines)
    for i, (rx, needs) in enumerate(_rules()):
        if needs is not None and not any(s in text for s in needs):
            continue  # a substring test instead of a search a line: no line holds what a match needs
        for ln in lines:
            if i == _CMD_RANK and LAST_STARTED.search(ln):
                continue
            m = rx.search(ln)
            if m:
                return _worker_id(m["w"])
    return None


# a rank a log record's header names, read where the message's own lines name none: icefall's (k2's) format
# `%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] ({rank}/{world_size}) %(message)s`
# (`2024-01-14 01:03:00,826 WARNING [train.py:1057] (2/4) Grad scale is small: ...`)
_IN_HEADER = lazy(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \[[\w.-]+\.py:\d+\] \((?P<w>\d+)/(?P<n>\d+)\) ")


def worker_in_header(lines: list[str]) -> str | None:
    """The rank the first record header that names one gives (the lines as printed, headers on)."""
    for ln in lines:
        m = _IN_HEADER.match(ln)
        if m and int(m["w"]) < int(m["n"]):
            return number_id(m["w"])
    return None


def worker_of_stream(stream: Stream | None) -> str | None:
    """The worker a line prefix's stream names when the line itself names none (a vLLM or Ray helper
    process `(EngineCore_DP0 pid=5)`, `(WorkerDict pid=7)`): its id, a rank inside it first."""
    if stream is None or stream.in_record or not stream.id:
        return stream.sub[1] if stream is not None and stream.sub else None
    return stream.sub[1] if stream.sub else stream.id


# --------------------------------------------------------------------------- launcher exit summaries

@dataclass(frozen=True, slots=True)
class Exit:
    """A launcher's word that one worker ended: its exit code or signal (negative: killed by that signal)."""

    line: int
    worker: str | None
    code: int | None  # -9: SIGKILL; 137 is normalised to -9, 139 to -11, 134 to -6, 143 to -15
    text: str
    time: str | None = None
    first: bool = False  # the launcher names it its first observed failure (torchelastic's `Root Cause` row)
    last_started: bool = False  # its worker is only the last process the launcher started (DeepSpeed's LAST_STARTED)


_SIGNALS = {"SIGKILL": 9, "SIGSEGV": 11, "SIGABRT": 6, "SIGTERM": 15, "SIGBUS": 7, "SIGINT": 2}
_SRUN_STATES = {"killed": -9, "out of memory": -9, "segmentation fault": -11, "bus error": -7, "aborted": -6,
                "terminated": -15}

EXIT_LINES: tuple[re.Pattern[str], ...] = (
    lazy(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<w>\d+)"),
    lazy(r"exits with return code = (?P<code>-?\d+)"),
    lazy(r"died with <Signals\.(?P<sig>SIG[A-Z]+): \d+>"),
    lazy(r"srun: error: [^:\s]+: tasks? (?P<ws>\d+(?:[-,]\d+)*): (?:Exited with exit code (?P<code>\d+)|(?P<state>[A-Za-z ]+))"),
    # (Open MPI leaves the node's name empty when it does not know it: `on node  exited on signal 4`)
    lazy(r"noticed that process rank (?P<w>\d+) with PID \d+ on node(?: \S+)? +exited on signal (?P<code>\d+)"),
    # vLLM's executor; without an exit code (or `exit code: None`) the worker still died: code 1 stands for that
    lazy(r"Worker proc VllmWorker-(?P<w>\d+) died unexpectedly(?: \(exit code: (?P<code>-?\d+)\))?"),
    lazy(r"[Pp]rocess (?P<w>\d+) terminated with signal (?P<sig>SIG[A-Z]+)"),
    # torchelastic stopping the siblings of a failed rank (the worker here is a pid)
    lazy(r"Sending process (?P<w>\d+) closing signal (?P<sig>SIG[A-Z]+)"),
    # vLLM's multiprocessing executor before V1: `Worker VllmWorkerProcess pid 3283517 died, exit code: -15`
    # (the pid its `(VllmWorkerProcess pid=3283517)` prefix names)
    lazy(r"Worker \w+ pid (?P<w>\d+) died, exit code: (?P<code>-?\d+)"),
    # Horovod's Gloo launcher: `Process 3 exit with status code 137.`
    lazy(r"^Process (?P<w>\d+) exit with status code (?P<code>-?\d+)"),
    # pdsh's word that a remote host's command failed: `pdsh@node-0: 10.0.0.7: ssh exited with exit code 1`
    lazy(r"pdsh@[\w.-]+: (?P<w>[\w.-]+): ssh exited with exit code (?P<code>\d+)"),
    # vLLM's Ray executor (v2): `RayWorkerProc rank=[3] died unexpectedly, shutting down executor.`
    lazy(r"RayWorkerProc rank=\[(?P<w>\d+)(?:, \d+)*\] died unexpectedly"),
    # text-generation-inference's shard manager: `Shard process was signaled to shutdown with signal 9 rank=1` (the
    # tracing span's fields follow the message)
    # (and its weight download process before: `Download process was signaled to shutdown with signal 7`)
    lazy(r"(?:Shard|Download) process was signaled to shutdown with signal (?P<signum>\d+)(?:.*?\brank=(?P<w>\d+))?"),
    # Lightning's child-process observer (its subprocess launcher): `[rank: 1] Child process with PID 652 terminated
    # with code 1. Forcefully terminating all other processes to avoid zombies 🧟` (then it SIGKILLs the rest)
    lazy(r"(?:\[rank: (?P<w>\d+)\] )?Child process with PID \d+ terminated with code (?P<code>-?\d+)"),
    # PaddlePaddle's launcher: `Container rank 0 status failed cmd [...] code 1 log log/workerlog.0`
    lazy(r"Container rank (?P<w>\d+) status failed cmd .*? code (?P<code>-?\d+) log "),
    # MPICH's (Hydra's) closing word on a process a signal ended: `YOUR APPLICATION TERMINATED WITH THE EXIT STRING:
    # Killed (signal 9)` (no rank: the table above names the pid and host)
    lazy(r"TERMINATED WITH THE EXIT STRING: [^(\n]*\(signal (?P<signum>\d+)\)"),
    # the exit rows of a table, whose worker the row above names (TABLE_RANK): torchelastic's ChildFailedError,
    # Open MPI's `Exit code:    1` under `Process name: [[17665,1],3]`, Hydra's `=   KILLED BY SIGNAL: 9 (Killed)`
    # or `=   EXIT CODE: 139` under `=   RANK 3 PID 27494 RUNNING AT node1`
    lazy(r"^\s*exitcode\s*: (?P<code>-?\d+) \(pid: \d+\)"),
    lazy(r"^\s*Exit code:\s+(?P<code>\d+)\s*$"),
    lazy(r"^=\s+(?:KILLED BY SIGNAL: (?P<signum>\d+)|EXIT CODE: (?P<code>\d+))"),
)
_TABLE_EXITS = EXIT_LINES[-3:]
ELASTIC_FAILED = EXIT_LINES[0]  # torchelastic's `failed (exitcode: N) local_rank: R` (groups `code`, `w`)
_DS_EXIT = EXIT_LINES[1]  # DeepSpeed's `{cmd} exits with return code = N` (LAST_STARTED)
_HYDRA_EXIT = EXIT_LINES[-1]
# the exit lines that name the first worker the launcher saw fail: torchelastic's `failed (exitcode: 1) local_rank:
# 3` (its first failure), Open MPI's `Exit code:` row under `The first process to do so was:`
FIRST_OBSERVED = lazy(r"failed \(exitcode: -?\d+\) local_rank: |^\s*Exit code:")
# torchelastic's ChildFailedError table heads the row of the failure it observed first (`Root Cause (first observed
# failure):`, then `[0]:`, then the row's fields)
ROOT_CAUSE_HEAD = lazy(r"^\s*Root Cause \(first observed failure\):")
# the table row that names the worker of the exit row below it (Hydra's row without `RANK n` names none)
TABLE_RANK = lazy(r"^\s*rank\s*: (?P<w>\d+) \(local_rank: \d+\)"
                        r"|^\s*Process name: \[(?:\[[^\]]*\]|[^\],\s]+),(?P<mpi>\d+)\]"
                        r"|^=\s+(?:RANK (?P<hydra>\d+) )?(?P<hpid>PID) \d+ RUNNING AT ")
# Hydra prints a row without a rank (`=   PID 92248 RUNNING AT host`) only for a process that did not exit by itself
# (`!WIFEXITED`, pmiserv's cleanup): the `EXIT CODE` under it is the raw wait status, the signal number (plus 128
# with a core dump), so `EXIT CODE: 9` there is SIGKILL, not exit(9)
RAW_STATUS_ROW = "\x00wait-status"
# the trigger the prefilter runs for all of the above (one alternation)
EXIT_TRIGGER = (r"failed \(exitcode: -?[0-9]+\)|exits with return code = |died with <Signals\.|srun: error: "
                r"|noticed that process rank [0-9]+ with PID|Worker proc VllmWorker-[0-9]+ died|rocess [0-9]+ terminated with signal|closing signal SIG"
                r"|^ *exitcode *: -?[0-9]+ \(pid|^ *rank *: [0-9]+ \(local_rank|RayWorkerProc rank=\[[0-9]+"
                r"|pid [0-9]+ died, exit code: |^Process [0-9]+ exit with status code |: ssh exited with exit code "
                r"|^ *Process name: \[|^ *Exit code: +[0-9]+|PID [0-9]+ RUNNING AT |^= +KILLED BY SIGNAL: |^= +EXIT CODE: "
                r"|process was signaled to shutdown with signal |Container rank [0-9]+ status failed "
                r"|Child process with PID [0-9]+ terminated with code "
                r"|TERMINATED WITH THE EXIT STRING: |Root Cause \(first observed failure\)")


# a line after which a Python traceback is never its own: a C++ glog record (`[E1120 14:47:16.100
# ProcessGroupNCCL.cpp:616] ...`, the watchdog's) is followed by C++ frames, not by a Python traceback, so a traceback
# printed next is another process's (a launcher's teardown line is not one: torchelastic raises its own
# SignalException right after `Sending process N closing signal SIGTERM` when it was told to stop)
RAISES_NO_TRACEBACK = lazy(r"^\[?[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +(?:\d+ )?[\w/.-]+\.(?:cpp|cc|cu|cxx|h|hpp):\d+\]")


def rank_of_row(m: re.Match[str]) -> str | None:
    """The worker a TABLE_RANK row names (None: a row that names none, which ends the previous row's)."""
    w = m["w"] or m["mpi"] or m["hydra"]
    return RAW_STATUS_ROW if w is None and m["hpid"] else w


def _norm_code(code: int) -> int:
    """A shell's 128+N for a process killed by signal N is -N, as Python reports it (137 -> -9)."""
    return -(code - 128) if 128 < code < 160 else code


def _ids(spec: str) -> list[str]:
    """'1-3,7' -> ['1', '2', '3', '7'] (srun's task lists); a range of more than 512 keeps its ends."""
    out: list[str] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        lo, hi = int(a), int(b) if b else int(a)
        out.extend(str(x) for x in (range(lo, hi + 1) if hi - lo <= 512 else (lo, hi)))
    return out


def exits_in_line(text: str, line: int, table_rank: str | None, time: str | None = None) -> list[Exit]:
    """The exits a launcher's summary line reports (srun names several tasks at once)."""
    raw = table_rank == RAW_STATUS_ROW
    if raw:
        table_rank = None
    for rx in EXIT_LINES:
        m = rx.search(text)
        if not m:
            continue
        g = m.groupdict()
        code: int | None = None
        if g.get("code") is not None:
            code = int(g["code"])
            if "signal (?P<code>" in rx.pattern or (raw and rx is _HYDRA_EXIT and 0 < code < 128):
                code = -code
            code = _norm_code(code)
        elif g.get("signum"):
            code = -int(g["signum"])
        elif g.get("sig"):
            code = -_SIGNALS.get(g["sig"], 0) or None
        elif g.get("state"):
            code = _SRUN_STATES.get(g["state"].strip().lower())
        elif "died unexpectedly" in rx.pattern:
            code = 1
        if g.get("ws"):
            workers: list[str | None] = list(_ids(g["ws"]))
        else:
            w = g.get("w")
            if w is None and rx in _TABLE_EXITS:
                w = table_rank
            if w is None and rx is _DS_EXIT:
                cmd = IN_MESSAGE[_CMD_RANK].search(text)
                w = cmd["w"] if cmd else None
            elif w is None:
                w = worker_in_text([text])
            workers = [number_id(w) if w is not None and w.isdigit() else w]
        last = rx is _DS_EXIT and workers != [None]
        return [Exit(line, w, code, text.strip()[:300], time, last_started=last) for w in workers]
    return []


def family_of_exit(code: int | None) -> str | None:
    """What an exit code says on its own: -9 host-oom-killed (a candidate), -11 segfault, -15 a victim's stop."""
    return {-9: "host-oom-killed", -11: "segfault", -7: "shm-exhausted", -15: "process-killed-by-signal",
            -2: "process-killed-by-signal"}.get(code)  # type: ignore[arg-type]


_ID_WORDS = ("local_rank", "global_rank", "rank", "task", "pid", "worker", "gpu", "default")
_HOST_RANK = lazy(r"^\[?(?P<host>[A-Za-z][\w.-]*):(?P<w>\d{1,4})\]?:?$")
# Open MPI's `[jobid,rank]` (its `--tag-output` prefix `[1,12]<stderr>:`, since 5.0 also with the whole namespace,
# `[prterun-node01-4242@1,12]`) and its process name `[[jobfamily,job],rank]` (`Process name: [[29973,1],3]`): the rank
_MPI_ID = lazy(r"^\[?(?:\[\d+,\d+\]|(?:[\w.-]+@)?\d+),(\d+)\]?(?:<std(?:out|err)>:?)?$")
_NCCL_ID = lazy(r"^(?P<host>[\w.-]+):(?P<pid>\d+):\d+ ?\[\d+\]:?$")
# UCX's `[host:pid  :thread:tid]`: the process
_UCX_ID = lazy(r"^\[?(?P<host>[\w.-]+):(?P<pid>\d+) *:\d+:\d+\]?:?$")
# icefall's (k2's) record header names the rank over the world size: `(2/4)` is rank 2
_OF_WORLD = lazy(r"^\(?(\d{1,5})/\d{1,5}\)?:?$")
_ID_AFTER = lazy(r"(?i)(?:local_rank|rank|task|pid|worker|gpu|(?<!\w)default|(?<!\w)TP|^process)[\s_=:-]*(\d+)(?![\d.])")


def norm_worker(w: object) -> str | None:
    """A worker id to compare: 'rank3' == '[rank3]:' == '[default3]:' == '3' == 'task 3' == 'VllmWorker-3' == '1,3' (Open MPI's
    job,rank); 'gpu187:2' stays;
    'WorkerDict pid=2421' == '2421', SGLang's 'TP3' == '3', icefall's '(2/4)' == '2', torch.multiprocessing.spawn's 'process 0' == '0' (the
    first id a rank, task, pid, worker, gpu, TP or leading process word names)."""
    if w is None:
        return None
    s = str(w).strip()
    nccl = _NCCL_ID.match(s)
    if nccl is not None:  # NCCL's `host:pid:tid [dev]`: the process
        return norm_worker(f"{nccl['host']}:{nccl['pid']}")
    ucx = _UCX_ID.match(s)
    if ucx is not None:  # UCX's `[host:pid  :thread:tid]`: the process
        return norm_worker(f"{ucx['host']}:{ucx['pid']}")
    mpi = _MPI_ID.match(s)
    if mpi is not None:
        return number_id(mpi.group(1))
    of_world = _OF_WORLD.match(s)
    if of_world is not None:
        return number_id(of_world.group(1))
    host = _HOST_RANK.match(s)
    if host is not None and host["host"].lower() not in _ID_WORDS:  # pdsh's host in front of a local rank: `gpu187:2` is not `gpu187:0`
        return f"{host['host']}:{number_id(host['w'])}"
    m = _ID_AFTER.search(s)
    if m:
        return number_id(m.group(1))
    s = s.strip("[]():").strip().lower()
    return number_id(s) if s.isascii() and s.isdigit() else (s or None)
