"""Worker prefixes: the one table of line prefixes that name a rank, an MPI or Horovod task or a Ray / vLLM process.

Line splitting (`text.lines.split_line`, on decoded lines the prefilter
picked) and the byte census of a combined log (`runs.sources`, one pass over
raw bytes) both derive from `PREFIXES`. A new prefix format is one entry here.

Each pattern names the worker id in a group ``w`` (and, for a process
prefix, the process name in ``name``). ``census`` is the form the byte census
looks for, when it differs from the line form (None: not counted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


# Docker Compose's service column (`vllm-1  | `): a name padded past the longest service's, then a bar
COMPOSE_SERVICE = r"(?P<w>[A-Za-z][\w.-]{1,62}+)  ++\| "


@dataclass(frozen=True)
class Prefix:
    kind: str  # the stream kind: "rank", "mpi", "ray", "tee" ("jsonl": the JSON-lines adapter's own prefix)
    pattern: str  # matched at the start of a decoded line (after ANSI removal)
    census: str | None  # the byte census form (None: not counted); "=" means the line form
    names_rank: bool = False  # the id is a rank of a distributed job


# (A repeated group is made possessive as an atomic group, `(?>(?:...)*)`, not as `(?:...)*+`: the `re` of early
# CPython 3.11 releases (Debian 12's 3.11.2 among them) fails a possessive group repeat that must match nothing
# when the group holds a look-ahead, and so missed every Ray and vLLM process prefix; tests/test_prefix_regex.py.)
# the parallel ranks in a process title (`TP1`, `PP1_TP0`, `DP0`): vLLM's multiprocessing worker decorates its logs
# with `VllmWorker {PP<n>}{_}{TP<n>}` (each part only when that size is over 1)
PARALLEL_RANK = r"(?:TP|DP|PP|EP)\d{1,5}+(?>(?:_(?:TP|DP|PP|EP)\d{1,5}+)*)"

PREFIXES: tuple[Prefix, ...] = (
    # the JSON-lines adapter's own prefix (see `jsonl_prefix`)
    Prefix("jsonl", r"\[sc:w=(?P<w>[^;\]]*);u=(?P<u>[^;\]]*);t=(?P<t>[^;\]]*);l=(?P<l>\d+)\]:", None),
    Prefix("rank", r"\[(?:rank|default)(?P<w>\d+)\]: ?", r"\[(?:rank|default)(?P<w>\d+)\]:", names_rank=True),
    # Open MPI's `--tag-output` (`--output tag` since 5.0, PMIx's `"[%s,%s]<%s>: "` with the job id after the `@`
    # of its namespace): `[1,3]<stderr>:`; `--output tag-fullname` keeps the whole namespace
    # (`[prterun-node01-4242@1,3]<stderr>:`), `--output tag-detailed` adds host and pid (`[1,3][node01:4242]<stderr>:`)
    Prefix("mpi", r"\[(?:[\w.-]{1,200}+@)?\d+,(?P<w>\d+)\](?:\[[\w.-]{1,200}+:\d+\])?<std(?:out|err)>:", "=",
           names_rank=True),
    # Horovod's Gloo launcher: `[3]<stderr>:` (horovodrun without mpirun)
    Prefix("mpi", r"\[(?P<w>\d+)\]<std(?:out|err)>:", "=", names_rank=True),
    # Ray actors and vLLM helper processes: `(RayWorkerWrapper pid=1234, ip=10.0.0.2)`, `(EngineCore_DP0 pid=5)`,
    # `(VllmWorker rank=2 pid=5640)`, and vLLM's worker titled by its parallel ranks (`(VllmWorker TP1 pid=721)`,
    # `(VllmWorker PP1_TP0 pid=722)`); the census counts a name directly followed by the pid, or a bare pid (not a
    # prefix with a rank before its pid). The key=value pairs and rank words before the pid, none of them a pid, are
    # possessive: a line that is not a prefix fails in time linear in its length
    Prefix("ray", r"\((?P<name>[A-Za-z_][\w.:/-]*+)(?>(?:[ ,]++(?!pid=)(?:[A-Za-z_]\w*+=[\w.:-]++|" + PARALLEL_RANK
                  + r"(?=[ ,])))*)[ ,]++pid=(?P<w>\d+)(?:, ip=[\d.:a-f]+)?\) ",
           r"\((?:(?P<name>[A-Za-z_][\w.:/-]*)[ ,]+)?pid=(?P<w>\d+)(?:, ip=[\d.:a-f]+)?\) "),
    Prefix("ray", r"\(pid=(?P<w>\d+)(?:, ip=[\d.:a-f]+)?\) ", None),
    Prefix("tee", r"(?P<w>\d{1,4}): ", "=", names_rank=True),
    # srun's `--label` pads the task id to the width of the largest (`"%*d: "`): ` 3: ` among 10 or more tasks,
    # `  3: ` among 100 or more; a label is two or three characters wide there (a Rust backtrace's `   0: ` frame
    # number is four). A heterogeneous job's label names its component: `P1  3: ` (the worker is component:task)
    Prefix("tee", r"(?=[ \d]{2,3}: ) {1,2}(?P<w>\d{1,2}): ", None, names_rank=True),
    Prefix("tee", r"(?P<host>P\d{1,3}) +(?P<w>\d{1,4}): ", None),
    # pdsh's host in front of torchrun's `--tee` prefix: `gpu187:2: ` (the worker is host:local rank)
    Prefix("tee", r"(?P<host>[A-Za-z][\w-]*):(?P<w>\d{1,4}): ", None),
    # Open MPI's own lines about a process (opal's output and signal handler, `[%s:%05d] `): `[node01:04211] ***
    # Process received signal ***`, `[gpu-3:123456] Signal: Segmentation fault (11)`; the worker is host:pid (the pid
    # is printed with at least five digits, so a `[file.cpp:88] ` source location is not one)
    Prefix("host", r"\[(?P<w>[A-Za-z][\w.-]*:\d{5,7})\] ", None),
    # UCX's log and fatal-signal lines (ucs/debug/log.c, `[%s:%-5d:%d:%d] `: host, pid padded to five, thread index,
    # thread id), which Open MPI, NCCL's net plugins and vLLM's workers print through: `[92c90024c028:157  :4:419]
    # Caught signal 11 (Segmentation fault: ...)`; the worker is host:pid
    Prefix("host", r"\[(?P<w>[A-Za-z0-9][\w.-]*:\d{1,8}) *:\d{1,4}:\d{1,8}\] ", None),
    # `kubectl logs --prefix` (`[pod/pytorchjob-worker-3/pytorch] `): the pod is the worker
    Prefix("host", r"\[pod/(?P<w>[a-z0-9][a-z0-9.-]*)/[\w.-]+\] ", None),
    # Docker Compose's service column (`vllm-1  | `, `inference_engine  | `): the name padded past the longest
    # service's, so at least two spaces before the bar (a table's `epoch | loss` row has one); the service is the worker
    Prefix("host", COMPOSE_SERVICE, None),
    # pdsh's host alone (DeepSpeed's and Accelerate's multi-node launchers): `10.0.0.7: `, `worker-1: `; a host
    # name needs a hyphen and a digit, so `python3: can't open file` or `RuntimeError: ` stay lines of their own
    # (a shard marker, `shard-17: done`, is not a host: the run contract's marker spelling wins; nor is Slurm's step
    # daemon naming its node, `slurmstepd-gpu20-15: error: ...`)
    Prefix("host", r"(?P<w>(?![Ss]hard-\d|slurmstepd-)(?=[\w-]*\d)[A-Za-z][A-Za-z0-9_]*+(?>(?:-[A-Za-z0-9_]++)+)"
                   r"|\d{1,3}(?:\.\d{1,3}){3}): (?!\d)", None),
    # ... and a bare host name of letters then digits (`gpu1504: `, `node01: `, Slurm's and pdsh's usual names): not a
    # program's own name before its message (`python3: can't open file`, `pip3: `) nor a word a log counts with
    # (`step100: `, `epoch3: `, `rank0: `), and not a word in capitals (`ERROR1: `); or a cluster's
    # cabinet/rack/node name, letters and numbers in turn (`c05r2n11: `, `r1i0n3: `, Cray's `x1000c0s0b0n0: `)
    Prefix("host", r"(?P<w>(?!(?:python|pip|bash|sh|zsh|perl|ruby|java|gcc|nvcc|cuda|rank|step|epoch|iter|layer"
                   r"|stage|block|line|shard|http|https|tcp|udp|test|case|job|task|loss|lr|gpt|llama|qwen|t5|bert)\d)"
                   r"[a-z][a-z]{1,15}\d{1,5}|[a-z]\d{1,4}(?:[a-z]\d{1,4}){2,4}): (?!\d)", None),
)

# What may stand before a rank prefix, and is read past: a timestamp (`2024-11-20 14:37:16 [rank3]: `), the
# host pdsh puts in front of a multi-node launcher's lines (`node-2: [rank9]: `), a paste's line number
# (`[80746] [rank0]:`). Only ever in front of a worker prefix (the look-ahead), so no other line changes.
# A timestamp (`kubectl logs --timestamps`, `docker logs -t`) may stand before a Ray or vLLM process prefix too
# (`2025-03-10T12:00:00.123456789Z (VllmWorker rank=1 pid=5640) ERROR ...`).
_RANK_AHEAD = r"\[(?:rank|default)\d+\]:"
_PROCESS_AHEAD = r"\((?:[A-Za-z_][\w.:-]*[ ,][^()\n]{0,80}?)?pid=\d+"
# Docker Compose's service column (`vllm-1  | (EngineCore_DP0 pid=5) ...`) stands before either.
# Open MPI's `--timestamp-output` puts ctime's time, without its newline and with no space after it, before its
# `--tag-output` tag (`"%s[%s,%s]<%s>:"`): `Tue Nov 27 13:49:06 2018[1,10]<stdout>:`; since 5.0 (PMIx) in brackets:
# `[Tue Nov 27 13:49:06 2018][1,10]<stdout>: `.
_CTIME = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"
_MPI_AHEAD = r"\[(?:[\w.-]{1,200}+@)?\d+,\d+\](?:\[[\w.-]{1,200}+:\d+\])?<std(?:out|err)>:"
LEAD = (r"(?:(?:" + _CTIME + r"|\[" + _CTIME + r"\])(?=" + _MPI_AHEAD + r")"
        r"|(?:\[\d+\] |[A-Za-z0-9][\w.-]*: )(?=" + _RANK_AHEAD + ")"
        r"|(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?|[A-Za-z0-9][\w.-]*+ *+\|) +"
        r"(?=" + _RANK_AHEAD + "|" + _PROCESS_AHEAD + "))")

@dataclass(frozen=True, slots=True)
class Stream:
    """The interleaved stream a line belongs to (lines of one stream are reassembled together).

    ``kind`` is the prefix kind ("rank", "mpi", "tee", "ray"), a process name (`(EngineCore_DP0 pid=5)`), or
    "w" for a JSON record's worker ("" for a JSON record without one). A prefix inside a JSON record's
    message makes a ``sub`` stream of the record's: (its kind or process name, its id).
    """

    kind: str
    id: str
    sub: tuple[str, str] | None = None

    @property
    def in_record(self) -> bool:
        """A JSON record's stream, whose worker the record's fields name (a prefix in its message included)."""
        return self.kind == "w"

    def prefix_kind(self) -> str | None:
        """'rank' / 'mpi' / 'tee' / 'ray' for a stream named by a worker prefix; None otherwise."""
        if self.kind in ("w", ""):
            return None
        if self.kind in RANK_KINDS:
            return self.kind
        return None if self.kind.startswith(NOT_A_WORKER) else "ray"


# stream kinds that name a rank
RANK_KINDS: tuple[str, ...] = tuple(dict.fromkeys(p.kind for p in PREFIXES if p.names_rank))

# A Ray actor's pid names a worker; a helper process of one worker (vLLM's EngineCore, a DataLoader) does not
RAY_WORKER_NAME = re.compile(r"Ray|Actor|raylet|Trainable", re.I)
NOT_A_WORKER = ("EngineCore",)  # vLLM's engine subprocess: a part of its worker, never a worker of its own

# For line splitting: (kind, compiled pattern), tried in order
LINE_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((p.kind, re.compile(p.pattern)) for p in PREFIXES)


def _census() -> tuple[re.Pattern[bytes], tuple[tuple[int, int | None], ...]]:
    """One bytes regex over every census form (group names made positional), and per form the numbers of its
    worker group and name group."""
    alts: list[str] = []
    groups: list[tuple[int, int | None]] = []
    n = 0
    for p in PREFIXES:
        if p.census is None:
            continue
        src = p.pattern if p.census == "=" else p.census
        w = name = None
        out = []
        for part in re.split(r"((?<!\\)\(\?P<\w+>|(?<!\\)\((?!\?))", src):
            m = re.fullmatch(r"\(\?P<(\w+)>", part)
            if m or part == "(":
                n += 1
                if m and m.group(1) == "w":
                    w = n
                elif m and m.group(1) == "name":
                    name = n
                out.append("(")
            else:
                out.append(part)
        assert w is not None, p
        alts.append("".join(out))
        groups.append((w, name))
    # colour codes before a prefix: with their ESC byte, in caret notation, or as syslog escapes ESC (`#033`)
    rx = re.compile(rb"^(?:(?:\x1b|\^\[|#033)\[[0-9;]*m)*(?:" + LEAD.encode() + rb")?(?:" + "|".join(alts).encode() + rb")",
                    re.M)
    return rx, tuple(groups)


CENSUS, CENSUS_GROUPS = _census()


def jsonl_prefix(worker: str, unit: str, time: str, line: int) -> bytes:
    """The prefix the JSON-lines adapter puts before a record's message (parsed back by `LINE_PREFIXES`)."""
    return f"[sc:w={worker};u={unit};t={time};l={line}]:".encode("utf-8", "replace")
