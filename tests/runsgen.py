"""A seeded generator of run directories that follow the shared run contract (runs.md), with their truth.

It knows nothing of sigclass's code: the layouts, markers, time formats and the
cascade rules are written here from the contract, and the truth of every unit
(outcome, family, root or cascade, its root) and of every run (systematic
families and their worker counts) follows from what the generator chose to
write, not from reading the result back. Failures are real message formats:
the `# expect: <family>` example blocks of the shipped ledger (signatures/*.log).

    python tests/runsgen.py --seeds 300            # generate, run `sigclass runs`, list every disagreement
    python tests/runsgen.py --seeds 20 --keep DIR  # and keep the generated runs (DIR/<run>/, DIR/truth.json)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
import gzip
import json
from pathlib import Path
import random
import re
import sys

REPO = Path(__file__).resolve().parent.parent
SIGNATURES = REPO / "signatures"

ROOT_FAMILIES = ["cuda-illegal-memory-access", "cuda-oom", "cuda-device-side-assert", "cuda-env-mismatch",
                 "gpu-hardware-fault", "nccl-error", "dist-port-in-use", "host-oom-killed", "shm-exhausted",
                 "disk-full", "segfault", "hf-hub-unreachable", "import-error", "vllm-kv-cache-insufficient", "nan-loss",
                 "tokenizer-reload-per-call", "vllm-h100-prefix-cache-ima"]
HANG = "vllm-engine-hang"
DEAD = "vllm-engine-dead"
ORPHAN = "vllm-orphan-gpu-memory"
UNKNOWN = "unknown"  # not a family: what a failure no family explains is called
DIST_SECONDARY = ["nccl-watchdog-timeout", "process-killed-by-signal"]
RAY_SECONDARY = ["ray-actor-died", DEAD]

# --------------------------------------------------------------------------- the contract's spellings

WORKER_FOLDERS = ["worker_{n}", "worker-{n}", "gpu{n}", "rank{n}", "node-{a}"]
SHARD_FILES = ["shard_{n}", "shard-{n}", "shard{n}", "part-{n:05d}"]
SHARD_EXT = {"shard_{n}": ".log", "shard-{n}": ".log", "shard{n}": ".out", "part-{n:05d}": ".log"}
MARKERS = ["shard {n}", "shard={n}", "shard_{n}", "[shard {n}]", "shard-{n}"]
START = ["start", "starting", "begin", "running"]
SUCCESS = ["done", "finished", "completed", "succeeded", "ok"]
FAILURE = ["failed", "error", "aborted"]
EXTS = [".log", ".txt", ".out", ".err"]
COMPRESS = ["", "", "", ".gz", ".zst"]
KV_WORKER = ["worker=gpu{n}", "rank={n}", "gpu={n}"]
RANK_PREFIX = ["[rank{n}]:", "[default{n}]:", "{n}: "]
RAY_PREFIX = ["(RayWorkerWrapper pid={n}) ", "(pid={n}, ip=10.0.{o}.{h}) "]
STYLES = ["iso_z", "iso_naive", "iso_offset", "pylog", "pylog_bracket", "vllm", "glog", "glog_torch",
          "not_at_start", "none"]  # (their heads: _STYLE_HEAD)

# --------------------------------------------------------------------------- the ledger's example blocks

_OWN_PREFIX = re.compile(r"^(?:\[(?:rank|default)\d+\]:|\d+: |\((?:\w+ )?(?:rank=\d+ )?pid=\d+(?:, ip=[\d.]+)?\) )")
# blocks that would say something about units or other workers than the one printing them
_UNIT_WORDS = re.compile(r"(?i)shard|part-\d|\bworker=|\brank=|\bgpu=|\brank\b|\branks\b|local_rank|\[Rank |rank\d"
                         r"|exitcode|exit code|Root Cause|ChildFailedError|\btask\b|\b(?:done|finished|completed"
                         r"|succeeded|ok|start|starting|begin|running|aborted)\b")
_TIME = [
    ("iso", re.compile(r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)(?P<sep>[T ])(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
                       r"(?P<frac>[.,]\d+)?(?P<z>Z|[+-]\d\d:?\d\d)?")),
    ("vllm", re.compile(r"\b(?P<lvl>INFO|WARNING|ERROR|DEBUG|CRITICAL|WARN) (?P<mo>\d\d)-(?P<d>\d\d) "
                        r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\b")),
    ("glog", re.compile(r"(?:(?<=^)|(?<=\[))(?P<L>[IWEF])(?P<md>\d{3,4}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
                        r"(?P<frac>\.\d+)")),
]


# a shell's own lines (a command, its job messages, `Killed`): never under a rank's prefix
_SHELL = re.compile(r"\$ |\[\d+\][-+]? |Killed\b|Terminated\b|oom_kill ")


# the facts that make an illegal memory access the prefix-cache family (a GPU model, the prefix-cache setting)
_HOPPER = re.compile(r"(?i)H100|H200|H800|GH200|prefix.?caching|prefix_cach")


@dataclass
class Block:
    family: str
    lines: list[str]


def _strip_prefix(line: str) -> str:
    return _OWN_PREFIX.sub("", line, count=1)


# in a distributed job a block may name its own rank (rewritten to the printing rank's id)
_RANK_SELF = re.compile(r"(?<=[Rr]ank )\d+")
# (a launcher's line about a rank, `mpirun noticed that process rank 3 ... exited`, is not the rank's own output)
_RANK_WORDS = re.compile(r"(?i)shard|part-\d|\bworker=|\brank=|\bgpu=|local_rank|exitcode|exit code|Root Cause"
                         r"|mpirun|srun|process rank|exited"
                         r"|ChildFailedError|\btask\b|from +rank|rank\d|\branks\b|\b(?:done|finished|completed"
                         r"|succeeded|ok|start|starting|begin|running|aborted)\b")


def load_blocks(sig_dir: Path = SIGNATURES, ranked: bool = False) -> dict[str, list[Block]]:
    """Each family's `# expect:` example blocks that name no unit, worker or outcome of their own.

    With `ranked`, the blocks that name only their own rank (`[Rank 3]`), for the ranks of a distributed job.
    """
    words = _RANK_WORDS if ranked else _UNIT_WORDS
    out: dict[str, list[Block]] = {}
    for path in sorted(sig_dir.glob("*.log")):
        fam, cur = None, []
        for raw in path.read_text(encoding="utf-8").splitlines() + ["# end"]:
            if raw.startswith("# expect") or raw.startswith("# todo") or raw == "# end":
                if fam and cur and fam == path.stem:
                    lines = [_strip_prefix(x) for x in cur]
                    while lines and not lines[-1].strip():
                        lines.pop()
                    while lines and not lines[0].strip():
                        lines.pop(0)
                    if lines and not any(words.search(x) for x in lines) and len(lines) <= 40:
                        out.setdefault(fam, []).append(Block(fam, lines))
                m = re.match(r"# expect: (\S+)\s*$", raw)
                fam, cur = (m.group(1) if m else None), []
            elif not raw.startswith("#"):
                cur.append(raw)
    return out


def _parse_stamp(kind: str, m: re.Match) -> datetime | None:
    g = m.groupdict()
    try:
        if kind == "iso":
            return datetime(int(g["y"]), int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"]))
        if kind == "vllm":
            return datetime(2000, int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"]))
        md = g["md"].rjust(4, "0")
        return datetime(2000, int(md[:2]), int(md[2:]), int(g["h"]), int(g["mi"]), int(g["s"]))
    except ValueError:
        return None


def _render_stamp(kind: str, m: re.Match, t: datetime) -> str:
    g = m.groupdict()
    if kind == "iso":
        frac = g["frac"] or ""
        if frac:
            frac = frac[0] + f"{t.microsecond:06d}".ljust(len(frac) - 1, "0")[: len(frac) - 1]
        return f"{t:%Y-%m-%d}{g['sep']}{t:%H:%M:%S}{frac}{g['z'] or ''}"
    if kind == "vllm":
        return f"{g['lvl']} {t:%m-%d %H:%M:%S}"
    md = f"{t.month}{t:%d}" if len(g["md"]) == 3 and t.month < 10 else f"{t:%m%d}"
    frac = g["frac"]
    frac = "." + f"{t.microsecond:06d}".ljust(len(frac) - 1, "0")[: len(frac) - 1]
    return f"{g['L']}{md} {t:%H:%M:%S}{frac}"


def retime(lines: list[str], start: datetime) -> tuple[list[tuple[datetime, str]], datetime]:
    """The block's own timestamps moved to `start` (their spacing kept), each line with its time (a line
    without one at the time of the line before it); the time of its last line."""
    first: datetime | None = None
    now = start
    out = []
    for line in lines:
        for kind, rx in _TIME:
            m = rx.search(line)
            if not m:
                continue
            t = _parse_stamp(kind, m)
            if t is None:
                break
            if first is None:
                first = t
            delta = (t - first).total_seconds()
            new = start + timedelta(seconds=delta) if 0 <= delta < 6 * 3600 else now
            now = max(now, new)
            line = line[: m.start()] + _render_stamp(kind, m, now) + line[m.end():]
            break
        out.append((now, line))
    return out, now


# --------------------------------------------------------------------------- lines and their styles


@dataclass
class Line:
    t: datetime
    text: str
    level: str = "INFO"
    raw: bool = False  # a ledger line: written as it is, with its own time (if any)


# each time style of generated lines: (time, level, milliseconds) -> the line's head before its text
_STYLE_HEAD = {
    "iso_z": lambda t, lvl, ms: f"{t:%Y-%m-%dT%H:%M:%S}.{ms}Z {lvl} ",
    "iso_naive": lambda t, lvl, ms: f"{t:%Y-%m-%dT%H:%M:%S} {lvl} run: ",
    "iso_offset": lambda t, lvl, ms: f"{offset_iso(t)} [{lvl.lower()}] ",
    "pylog": lambda t, lvl, ms: f"{t:%Y-%m-%d %H:%M:%S},{ms} - gen - {lvl} - ",
    "pylog_bracket": lambda t, lvl, ms: f"[{t:%Y-%m-%d %H:%M:%S},{ms}][gen][{lvl}] - ",
    "vllm": lambda t, lvl, ms: f"{lvl} {t:%m-%d %H:%M:%S} [runner.py:88] ",
    "glog": lambda t, lvl, ms: f"{lvl[0]}{t:%m%d %H:%M:%S}.{t.microsecond:06d}  4242 runner.cc:42] ",
    "glog_torch": lambda t, lvl, ms: f"[{lvl[0]}{t.month}{t:%d} {t:%H:%M:%S}.{t.microsecond:06d}123 runner.cpp:88] ",
    "not_at_start": lambda t, lvl, ms: f"[{lvl}|runner.py:12] {t:%Y-%m-%d %H:%M:%S},{ms} >> ",
    "none": lambda t, lvl, ms: "",
}


def styled(style: str, ln: Line) -> str:
    if ln.raw:
        return ln.text
    return _STYLE_HEAD[style](ln.t, ln.level, f"{ln.t.microsecond // 1000:03d}") + ln.text


def offset_iso(t: datetime) -> str:
    return (t + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S.%f") + "+02:00"


# --------------------------------------------------------------------------- the truth


@dataclass
class UnitTruth:
    worker: str | None
    status: str
    family: str | None = None
    role: str | None = None
    root: str | None = None


@dataclass
class RunTruth:
    run: str
    layout: int
    form: str
    units: dict[str, UnitTruth] = field(default_factory=dict)
    junk: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    workers: int = 0
    tags: list[str] = field(default_factory=list)

    def roots(self) -> list[dict]:
        return [{"unit": u, "worker": t.worker, "family": t.family} for u, t in self.units.items() if t.role == "root"]

    def systematic(self) -> list[dict]:
        hit: dict[str, set] = {}
        for r in self.roots():
            if r["worker"] is not None and r["family"] != UNKNOWN:
                hit.setdefault(r["family"], set()).add(r["worker"])
        return sorted(({"family": f, "workers": len(w)} for f, w in hit.items() if len(w) > 1),
                      key=lambda s: s["family"])

    def to_dict(self) -> dict:
        return {"run": self.run, "layout": self.layout, "form": self.form,
                "units": {u: vars(t) for u, t in self.units.items()}, "roots": self.roots(),
                "systematic": self.systematic(), "junk": self.junk, "ignored": self.ignored,
                "workers": self.workers, "tags": self.tags}


# --------------------------------------------------------------------------- a worker's units


@dataclass
class Unit:
    uid: str
    worker: str
    lines: list[Line]
    truth: UnitTruth


class Gen:
    def __init__(self, seed: int, blocks: dict[str, list[Block]], ranked: dict[str, list[Block]] | None = None):
        self.seed = seed
        self.r = random.Random(seed)
        self.blocks = blocks
        self.roots = [f for f in ROOT_FAMILIES if blocks.get(f)]
        # the prefix-cache family is an illegal memory access plus facts (H100, prefix caching) a worker prints
        # once for all its units: a run draws one of the two, or the plain one would take on the other's facts
        self.roots.remove(self.r.choice(["cuda-illegal-memory-access", "vllm-h100-prefix-cache-ima"]))
        self.ranked = ranked if ranked is not None else load_blocks(ranked=True)
        self.own: str | None = None  # the rank printing the next block, in a distributed job
        self.tags: set[str] = set()  # the contract's forms this run uses (for the coverage test)
        self.distributed = False

    # ---- pieces

    def block(self, family: str, t: datetime) -> tuple[list[Line], datetime]:
        choice = list(self.blocks.get(family, []))
        if self.own is not None:
            # a shell session (`$ cat ...`, its output, the shell's `Killed`) is not a rank's own output
            choice += self.ranked.get(family, [])
            choice = [b for b in choice if not any(_SHELL.match(x) for x in b.lines)] or choice
        if "cuda-illegal-memory-access" in self.roots:  # no block lends an illegal access the prefix-cache facts
            choice = [b for b in choice if not any(_HOPPER.search(x) for x in b.lines)] or choice
        b = self.r.choice(choice)
        self.tags.add(f"family:{family}")
        lines = [_RANK_SELF.sub(self.own, x) for x in b.lines] if self.own is not None else b.lines
        timed, end = retime(lines, t)
        return [Line(at, x, raw=True) for at, x in timed], end

    def marker(self, n: str, verbs: list[str], form: str | None = None) -> str:
        m = (form or self.r.choice(MARKERS)).format(n=n)
        v = self.r.choice(verbs)
        shape = self.r.randrange(4)
        self.tags.update({f"marker:{form or 'any'}", f"verb:{v}"})
        if shape == 0:
            return f"{m} {v}"
        if shape == 1:
            return f"{m}: {v} ({self.r.randint(64, 4096)} prompts)"
        if shape == 2:
            return f"{v.capitalize()} {m}"
        return f"{m} status={v}"

    def progress(self, t: datetime, k: int) -> tuple[list[Line], datetime]:
        out = []
        for i in range(k):
            t += timedelta(seconds=self.r.randint(5, 90), microseconds=self.r.randint(0, 999999))
            out.append(Line(t, f"processed {(i + 1) * 64} prompts ({self.r.uniform(5, 60):.1f} it/s)"))
        return out, t

    def unit_lines(self, n: str, kind: str, t: datetime, family: str | None) -> tuple[list[Line], datetime]:
        """One unit: start marker, progress, then its end by kind (ok, fail, hang, victim, silent)."""
        self.own = n if self.distributed else None
        form = self.r.choice(MARKERS)
        lines = [Line(t, self.marker(n, START, form))]
        if kind == "silent":
            return lines, t + timedelta(seconds=1)
        body, t = self.progress(t, self.r.randint(0, 3))
        lines += body
        if kind == "ok":
            t += timedelta(seconds=2)
            lines.append(Line(t, self.marker(n, SUCCESS, form)))
            return lines, t
        t += timedelta(seconds=3)
        if kind == "marker":  # a failure marker and no error text: failed, of no known family
            lines.append(Line(t, self.marker(n, FAILURE, form), level="ERROR"))
            return lines, t
        blk, t = self.block(family, t)
        lines += blk
        if kind != "hang" and self.r.random() < 0.5:
            t += timedelta(seconds=1)
            lines.append(Line(t, self.marker(n, FAILURE, form), level="ERROR"))
        return lines, t

    # ---- a worker that runs shards one after another (layouts 1, 2, 4)

    def worker_units(self, worker: str | None, ids: list[str], t: datetime, forced: str | None) -> list[Unit]:
        units: list[Unit] = []
        root: str | None = None  # the open blast radius's root unit on this worker
        for i, n in enumerate(ids):
            if root is None:
                if forced and i == 0 or (forced and i == 1 and self.r.random() < 0.5 and not units[0].truth.role):
                    kind, fam = "fail", forced
                    forced = None
                else:
                    x = self.r.random()
                    kind, fam = ("ok", None) if x < 0.6 else ("hang", HANG) if x < 0.68 else \
                        ("loose", None) if x < 0.72 and i == len(ids) - 1 else ("marker", UNKNOWN) if x < 0.75 \
                        else ("fail", self.r.choice(self.roots))
                self.tags.add(f"unit:{kind}")
                if kind in ("fail", "hang", "marker"):
                    lines, t = self.unit_lines(n, kind, t, fam)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "failed", fam, "root")))
                    root = n
                elif kind == "loose":  # killed without a word: incomplete, in nobody's blast radius
                    lines, t = self.unit_lines(n, "silent", t, None)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "incomplete")))
                else:
                    lines, t = self.unit_lines(n, "ok", t, None)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "ok")))
            else:
                x = self.r.random()
                self.tags.add("victim:" + ("ok" if x < 0.3 else "marker" if x < 0.35 else "dead" if x < 0.55
                                           else "orphan" if x < 0.75 else "silent"))
                if x < 0.3:  # the worker recovered: an ok unit closes the blast radius
                    lines, t = self.unit_lines(n, "ok", t, None)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "ok")))
                    root = None
                elif x < 0.35:  # a failure marker alone behind the root: a victim of no known family
                    lines, t = self.unit_lines(n, "marker", t, UNKNOWN)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "failed", UNKNOWN, "cascade", root)))
                elif x < 0.55:
                    lines, t = self.unit_lines(n, "fail", t, DEAD)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "failed", DEAD, "cascade", root)))
                elif x < 0.75:
                    lines, t = self.unit_lines(n, "fail", t, ORPHAN)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "failed", ORPHAN, "cascade", root)))
                else:
                    lines, t = self.unit_lines(n, "silent", t, None)
                    units.append(Unit(n, worker, lines, UnitTruth(worker, "incomplete", None, "cascade", root)))
            if worker is None:
                root = None  # no worker known: no unit is in another's blast radius
            t += timedelta(seconds=self.r.randint(5, 120))
        return units

    def shard_plan(self, workers: list[str]) -> tuple[list[Unit], datetime]:
        """Units of every worker; one root family may strike several workers (systematic)."""
        base = self.r.choice([0, 1, 100, 1000])
        per = {w: self.r.randint(1, 4) for w in workers}
        ids = [str(base + i) for i in range(sum(per.values()))]
        self.r.shuffle(ids)
        forced: dict[str, str] = {}
        if len(workers) > 1 and self.r.random() < 0.4:
            fam = self.r.choice(self.roots)
            for w in self.r.sample(workers, self.r.randint(2, len(workers))):
                forced[w] = fam
            self.tags.add("systematic")
        t0 = self.start_time()
        units: list[Unit] = []
        for w in workers:
            mine, ids = ids[: per[w]], ids[per[w]:]
            mine.sort(key=int)
            units += self.worker_units(w, mine, t0 + timedelta(seconds=self.r.randint(0, 600)), forced.get(w))
        return units, t0

    def start_time(self) -> datetime:
        return datetime(2026, self.r.randint(2, 10), self.r.randint(1, 27), self.r.randint(0, 20),
                        self.r.randint(0, 59), self.r.randint(0, 59), self.r.randint(0, 999) * 1000)

    def worker_names(self, k: int) -> list[str]:
        form = self.r.choice(WORKER_FOLDERS)
        self.tags.add(f"worker:{form}")
        first = self.r.randint(0, 3)
        return [form.format(n=first + i, a="abcdefghij"[first + i]) for i in range(k)]


# --------------------------------------------------------------------------- writing files


def write(path: Path, text: str, r: random.Random, compress: bool = True, tags: set | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    suffix = r.choice(COMPRESS) if compress else ""
    if tags is not None:
        tags.update({f"ext:{path.suffix}", f"compress:{suffix}"})
    if suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    elif suffix == ".zst":
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    out = path.with_name(path.name + suffix)
    out.write_bytes(data)
    return out


def render(style: str, lines: list[Line]) -> str:
    return "".join(styled(style, ln) + "\n" for ln in lines)


def header(worker: str | None, kv: str | None, t: datetime) -> list[Line]:
    out = [Line(t, "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5c247b22-0427-bec2-aada-e7842a309312)", raw=True)]
    out.append(Line(t, f"host=hgx-11 {kv or ''} pid=131062 python=3.11".replace("  ", " ")))
    return out


def add_extras(g: Gen, d: Path, truth: RunTruth, t: datetime) -> None:
    """Files that are not log sources (ignored, though they hold a failing shard), a log source that holds no
    unit (a monitor's output), and broken log sources (truncated, binary) that must be reported as problems."""
    r = g.r
    if r.random() < 0.5:
        name = r.choice(["config.yaml", "metrics.csv", "README.md", "shard_9999.log.bak", "events.json",
                         "worker_9.log.old", "notes"])
        fail, _ = g.unit_lines("9999", "fail", t, r.choice(g.roots))
        (d / name).write_text(render("iso_z", fail))
        truth.ignored.append(name)
        g.tags.add("ignored")
    monitor = "".join(f"{(t + timedelta(minutes=i)):%Y-%m-%d %H:%M:%S} gpu util {r.randint(50, 99)}% "
                      f"mem {r.randint(10, 70)}GiB\n" for i in range(40))
    x = r.random()
    if x < 0.2:
        write(d / r.choice(["monitor.txt", "dcgm_dmon.out"]), monitor, r, tags=g.tags)
    elif x < 0.35:  # a compressed log cut short
        data = gzip.compress(monitor.encode(), mtime=0) if r.random() < 0.5 else None
        name = "monitor.txt.gz" if data is not None else "monitor.txt.zst"
        if data is None:
            import zstandard

            data = zstandard.ZstdCompressor().compress(monitor.encode())
        (d / name).write_bytes(data[: len(data) // 2])
        truth.junk.append(name)
        g.tags.add("junk:truncated")
    elif x < 0.45:  # a binary file with a log's name
        name = r.choice(["core.out", "dump.log"])
        (d / name).write_bytes(bytes(r.randrange(256) for _ in range(2048)))
        truth.junk.append(name)
        g.tags.add("junk:binary")


def gen_layout1(g: Gen, d: Path, truth: RunTruth) -> None:
    r = g.r
    folderless = r.random() < 0.25
    nest = r.choice(["", "", "logs", "logs/2026-03-01"])
    shard_form = r.choice(SHARD_FILES)
    style = r.choice([s for s in STYLES if s != "none"])  # units of a worker are ordered by their time
    if folderless and r.random() < 0.25:  # no folder and no key=value: every unit's worker is unknown
        workers = [None]
        kvs = [None]
        truth.form = f"nokey {shard_form}"
    elif folderless:
        kvf = r.choice(KV_WORKER)
        k = r.randint(1, 4)
        first = r.randint(0, 3)
        kvs = [kvf.format(n=first + i) for i in range(k)]
        workers = [kv.split("=", 1)[1] if kv.startswith("worker=") else kv.split("=", 1)[1] for kv in kvs]
        truth.form = f"folderless {kvf} {shard_form}"
    else:
        workers = g.worker_names(r.randint(1, 5))
        kvs = [None] * len(workers)
        truth.form = f"folders {workers[0]} {shard_form} nest={nest!r}"
    units, t0 = g.shard_plan(workers)
    kv_of = dict(zip(workers, kvs))
    for u in units:
        fname = shard_form.format(n=int(u.uid)) + (r.choice(EXTS) if r.random() < 0.3 else SHARD_EXT[shard_form])
        where = d / nest if folderless else d / nest / u.worker
        lines = header(u.worker, kv_of[u.worker], u.lines[0].t) + u.lines
        write(where / fname, render(style, lines), r, tags=g.tags)
        truth.units[u.uid] = u.truth
    truth.workers = len({u.worker for u in units})
    truth.form += f" style={style}"
    g.tags.update({f"shard:{shard_form}", f"style:{style}", f"nest:{nest}", f"l1:{truth.form.split()[0]}"})
    if folderless and workers != [None]:
        g.tags.add(f"kv:{kvf}")
    add_extras(g, d, truth, t0)


def gen_layout2(g: Gen, d: Path, truth: RunTruth) -> None:
    r = g.r
    workers = g.worker_names(r.randint(1, 5))
    nest = r.choice(["", "", "logs"])
    style = r.choice(STYLES)
    units, t0 = g.shard_plan(workers)
    for w in workers:
        mine = [u for u in units if u.worker == w]
        lines = header(w, f"worker={w}", mine[0].lines[0].t) + [ln for u in mine for ln in u.lines]
        write(d / nest / (w + r.choice(EXTS)), render(style, lines), r, tags=g.tags)
        for u in mine:
            truth.units[u.uid] = u.truth
    truth.workers = len(workers)
    truth.form = f"per-worker {workers[0]} style={style} nest={nest!r}"
    g.tags.update({f"style:{style}", f"nest:{nest}"})
    add_extras(g, d, truth, t0)


def gen_layout4(g: Gen, d: Path, truth: RunTruth) -> None:
    r = g.r
    # the fields are optional: without a worker field the file's name names the worker (one file per worker),
    # without a unit field the messages' shard markers mark the units
    wkey = r.choice(["worker", "rank", "gpu", "worker", "rank", "gpu", None])
    if wkey in ("worker", None):
        workers = g.worker_names(r.randint(1, 4))
    else:
        first = r.randint(0, 3)
        workers = [str(first + i) for i in range(r.randint(1, 4))]
    mkey, tkey, ukey = r.choice(["msg", "message", "log"]), r.choice(["ts", "time", "timestamp"]), \
        r.choice(["shard", "unit", "shard", "unit", None])
    tform = r.choice(["iso_z", "iso_offset", "epoch"])
    combined = r.random() < 0.4 and wkey is not None
    units, t0 = g.shard_plan(workers)

    def stamp(t: datetime):
        if tform == "epoch":
            return round(t.replace(tzinfo=timezone.utc).timestamp(), 3)
        if tform == "iso_z":
            return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return offset_iso(t)

    def wval(w: str):
        return w if wkey == "worker" else int(w)

    def events(u: Unit) -> list[tuple[datetime, str]]:
        out = []
        lines = list(u.lines)
        i = 0
        while i < len(lines):
            ln = lines[i]
            if ln.raw and r.random() < 0.6:  # a whole traceback (lines printed at one time) in one message
                j = i
                while j < len(lines) and lines[j].raw and lines[j].t == ln.t:
                    j += 1
                if j - i > 1:
                    g.tags.add("jsonl:multi-line")
                out.append((ln.t, "ERROR", "\n".join(x.text for x in lines[i:j]) + "\n"))
                i = j
                continue
            out.append((ln.t, "ERROR" if ln.raw else ln.level, ln.text + ("\n" if mkey == "log" else "")))
            i += 1
        def record(t: datetime, lvl: str, text: str) -> str:
            rec = {tkey: stamp(t), "level": lvl}
            if wkey is not None:
                rec[wkey] = wval(u.worker)
            if ukey is not None:
                rec[ukey] = int(u.uid) if r.random() < 0.7 else u.uid
            rec["logger"] = "runner"
            rec[mkey] = text
            return json.dumps(rec)

        return [(t, record(t, lvl, text)) for t, lvl, text in out]

    per_worker: dict[str, list[tuple[datetime, str]]] = {}
    for u in units:
        per_worker.setdefault(u.worker, []).extend(events(u))
        truth.units[u.uid] = u.truth
    if combined:
        allev = sorted((e for evs in per_worker.values() for e in evs), key=lambda e: e[0])
        write(d / "run_events.jsonl", "".join(e[1] + "\n" for e in allev), r, tags=g.tags)
    else:
        for w, evs in per_worker.items():
            name = w if wkey in ("worker", None) else f"{wkey}{w}"
            write(d / r.choice(["", "events"]) / f"{name}.jsonl", "".join(e[1] + "\n" for e in evs), r, tags=g.tags)
    truth.workers = len(workers)
    truth.form = f"jsonl {mkey}/{tkey}:{tform}/{wkey}/{ukey} combined={combined}"
    g.tags.update({f"jsonl:{mkey}", f"jsonl:{tkey}", f"jsonl:{tform}", f"jsonl:{wkey}", f"jsonl:{ukey}",
                   f"jsonl:combined={combined}"})


def gen_distributed(g: Gen, d: Path, truth: RunTruth) -> None:
    """Layout 3: one combined log (torchrun or Ray prefixes) or Slurm array files; each rank is a unit."""
    r = g.r
    kind = r.choice(["torchrun", "ray", "slurm"])
    g.distributed = True
    style = r.choice(STYLES)
    n = r.randint(2, 6)
    if kind == "ray":
        ids = sorted({str(r.randint(1000, 99999)) for _ in range(n)}, key=int)
    else:
        ids = [str(i) for i in range(n)]
    t0 = g.start_time()
    units: list[Unit] = []
    scenario = r.choice(["clean", "cascade", "cascade", "independent"]) if kind != "slurm" else \
        r.choice(["clean", "independent", "independent"])
    if scenario == "cascade":
        root = r.choice(ids)
        rfam = r.choice(g.roots + [HANG])
        t_root = t0 + timedelta(minutes=r.randint(2, 30))
        for i in ids:
            t = t0 + timedelta(seconds=r.randint(1, 30))
            if i == root:
                lines, _ = g.unit_lines(i, "hang" if rfam == HANG else "fail", t_root, rfam)
                lines[0].t = t
                units.append(Unit(i, i, lines, UnitTruth(i, "failed", rfam, "root")))
                continue
            x = r.random()
            if x < 0.15:
                lines, _ = g.unit_lines(i, "ok", t, None)
                units.append(Unit(i, i, lines, UnitTruth(i, "ok")))
            elif x < 0.3:
                lines, _ = g.unit_lines(i, "silent", t, None)
                units.append(Unit(i, i, lines, UnitTruth(i, "incomplete", None, "cascade", root)))
            else:
                fam = r.choice(RAY_SECONDARY if kind == "ray" else DIST_SECONDARY)
                g.tags.add(f"secondary:{fam}")
                lines, _ = g.unit_lines(i, "fail", t_root + timedelta(minutes=r.randint(1, 30)), fam)
                lines[0].t = t
                units.append(Unit(i, i, lines, UnitTruth(i, "failed", fam, "cascade", root)))
    else:
        # in one distributed job, an NCCL error on a second rank is read as the first one's consequence (its
        # peer went away): independent faults there are drawn from the families local to one rank
        local = [f for f in g.roots if f != "nccl-error"] if kind != "slurm" else g.roots
        sysfam = r.choice(local) if scenario == "independent" and r.random() < 0.4 else None
        for i in ids:
            t = t0 + timedelta(seconds=r.randint(1, 30))
            x = r.random()
            if scenario == "independent" and (x < 0.35 or sysfam and x < 0.6):
                fam = sysfam if sysfam and x < 0.6 and x >= 0.35 or sysfam and x < 0.25 else r.choice(local)
                lines, _ = g.unit_lines(i, "fail", t + timedelta(minutes=r.randint(1, 40)), fam)
                lines[0].t = t
                units.append(Unit(i, i, lines, UnitTruth(i, "failed", fam, "root")))
            else:
                lines, _ = g.unit_lines(i, "ok", t, None)
                units.append(Unit(i, i, lines, UnitTruth(i, "ok")))
    for u in units:
        truth.units[u.uid] = u.truth
    truth.workers = len(units)
    truth.form = f"{kind} {scenario} style={style}"
    g.tags.update({f"l3:{kind}", f"l3:{scenario}", f"style:{style}"})
    if kind == "slurm":
        job = r.randint(1000000, 9999999)
        for u in units:
            write(d / f"slurm-{job}_{u.uid}.out", f"SLURM_ARRAY_JOB_ID={job} SLURM_ARRAY_TASK_ID={u.uid}\n"
                  + render(style, u.lines), r, compress=False, tags=g.tags)
        return
    pform = r.choice(RANK_PREFIX if kind == "torchrun" else RAY_PREFIX)
    truth.form += f" prefix={pform!r}"
    g.tags.add(f"prefix:{pform}")
    merged: list[tuple[datetime, int, str]] = []
    seq = 0
    for u in units:
        # every line of a unit at or after the time of the one before it (a ledger line may carry none)
        t = u.lines[0].t
        for ln in u.lines:
            t = max(t, ln.t)
            pre = pform.format(n=u.uid, o=r.randint(0, 9), h=int(u.uid) % 250 + 1)
            merged.append((t, seq, pre + styled(style, ln)))
            seq += 1
    merged.sort()
    launcher = [f"W0301 00:00:00.000000 4242 torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment "
                "variable for each process to be 1 in default"] if kind == "torchrun" else \
        ["2026-03-01 00:00:00,000\tINFO worker.py:1841 -- Started a local Ray instance."]
    name = r.choice(["torchrun.out", "train.log", "job-4242.out", "driver.txt"])
    write(d / name, "\n".join(launcher + [m[2] for m in merged]) + "\n", r, tags=g.tags)


def generate(seed: int, root: Path, blocks: tuple[dict, dict] | None = None) -> RunTruth:
    """One run directory under `root`, named after the seed; its truth. `blocks`: load_blocks() plain and ranked."""
    plain, ranked = blocks if blocks is not None else (load_blocks(), load_blocks(ranked=True))
    g = Gen(seed, plain, ranked)
    layout = g.r.choice([1, 2, 3, 4])
    name = f"gen-{seed:05d}-l{layout}"
    d = root / name
    d.mkdir(parents=True)
    truth = RunTruth(name, layout, "")
    {1: gen_layout1, 2: gen_layout2, 3: gen_distributed, 4: gen_layout4}[layout](g, d, truth)
    truth.tags = sorted(g.tags | {f"layout:{layout}"})
    return truth


# --------------------------------------------------------------------------- comparing


def compare(truth: RunTruth, got: dict) -> list[str]:
    """Every disagreement between one run of `sigclass runs --format json` and the truth."""
    name = truth.run
    miss: list[str] = []
    units = {u["unit"]: u for u in got.get("units", [])}
    for uid in sorted(set(units) - set(truth.units)):
        miss.append(f"{name}: unit {uid} is not in the truth ({units[uid].get('source')})")
    for uid, t in truth.units.items():
        u = units.get(uid)
        if u is None:
            miss.append(f"{name}: unit {uid} missing")
            continue
        for key in ("worker", "status", "family", "role", "root"):
            want = getattr(t, key)
            if u.get(key) != want:
                miss.append(f"{name}: unit {uid} {key} {u.get(key)!r} != {want!r}")
    want_sys = truth.systematic()
    # the contract names no systematic `unknown` (not a family); sigclass may group one unknown failure's
    # repeats by fingerprint, which the truth does not judge
    have_sys = sorted(({"family": s["family"], "workers": s["workers"]} for s in got.get("systematic", [])
                       if s["family"] != UNKNOWN), key=lambda s: s["family"])
    if want_sys != have_sys:
        miss.append(f"{name}: systematic {have_sys} != {want_sys}")
    want_roots = sorted((r["unit"], r["family"]) for r in truth.roots())
    have_roots = sorted((r.get("unit"), r.get("family")) for r in got.get("roots", []))
    if want_roots != have_roots:
        miss.append(f"{name}: roots {have_roots} != {want_roots}")
    probs = got.get("problems", [])
    for junk in truth.junk:
        if not any(junk in (p.get("path") or "") or junk in (p.get("message") or "") for p in probs):
            miss.append(f"{name}: {junk} is not reported as a problem")
    for ig in truth.ignored:
        if any(ig in (u.get("source") or "") for u in got.get("units", [])):
            miss.append(f"{name}: {ig} should be ignored")
    return miss


_HEADLINE = re.compile(r"^(?P<run>\S+): (?P<lost>\d+)/(?P<n>\d+) (?P<noun>\w+) lost: (?P<rest>.*)$")


def check_text(truth: RunTruth, text: str) -> list[str]:
    """The text report of one run: headline counts, the systematic line in words, do:/check: per root family."""
    name = truth.run
    miss: list[str] = []
    lines = text.splitlines()
    head = next((ln for ln in lines if ln.startswith(name + ":")), None)
    n = len(truth.units)
    lost = sum(1 for t in truth.units.values() if t.status != "ok")
    roots = truth.roots()
    victims = sum(1 for t in truth.units.values() if t.role == "cascade")
    if head is None:
        return [f"{name}: no headline"]
    if not lost:
        if f"all {n} " not in head and "the one " not in head:
            miss.append(f"{name}: headline {head!r} does not say all {n} ok")
        return miss
    m = _HEADLINE.match(head)
    if not m:
        return [f"{name}: headline {head!r} is not `N/M units lost: ...`"]
    if (int(m["lost"]), int(m["n"])) != (lost, n):
        miss.append(f"{name}: headline {m['lost']}/{m['n']} != {lost}/{n}")
    rest = m["rest"]
    if roots and not re.search(rf"\b{len(roots)} root faults?\b", rest):
        miss.append(f"{name}: headline {head!r} does not count {len(roots)} root faults")
    if victims and not re.search(rf"\b{victims} cascade victims?\b", rest):
        miss.append(f"{name}: headline {head!r} does not count {victims} cascade victims")
    for s in truth.systematic():
        said = f"systematic: {s['family']} struck {s['workers']} of {truth.workers} workers separately"
        if not any(said in ln for ln in lines):
            miss.append(f"{name}: no line {said!r}")
    body = "\n".join(lines)
    for fam in {r["family"] for r in roots}:
        if fam and not re.search(rf"\b{re.escape(fam)}\b", body):
            miss.append(f"{name}: root family {fam} not in the text")
    if any(r["family"] != UNKNOWN for r in roots) and ("do: " not in body or "check: " not in body):
        miss.append(f"{name}: no do:/check: lines for its roots")
    if any(r["family"] == UNKNOWN for r in roots) and "evidence: " not in body:
        miss.append(f"{name}: no evidence: line for its unknown root")
    return miss


def run_sigclass(dirs: list[Path], jobs: int = 1) -> tuple[dict[str, dict], dict[str, str]]:
    """`sigclass runs --format json` and the text report of the same dirs (in-process, through the CLI)."""
    from typer.testing import CliRunner

    from sigclass.cli.app import app

    runner = CliRunner()
    res = runner.invoke(app, ["runs", "--format", "json", "-j", str(jobs), *map(str, dirs)])
    if res.exit_code not in (0, 1):
        raise RuntimeError(res.output)
    got = {r["run"]: r for r in json.loads(res.stdout)["runs"]}
    res = runner.invoke(app, ["runs", "--color", "never", "-j", str(jobs), *map(str, dirs)])
    texts: dict[str, str] = {}
    cur = None
    for ln in res.stdout.splitlines():
        head = ln.split(":", 1)[0]
        if not ln.startswith(" ") and head in got:
            cur = head
        if cur:
            texts[cur] = texts.get(cur, "") + ln + "\n"
    return got, texts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100, help="how many runs (seeds first..first+N-1)")
    ap.add_argument("--first", type=int, default=0, help="the first seed")
    ap.add_argument("--keep", type=Path, help="write the runs and truth.json here instead of a temporary folder")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    a = ap.parse_args(argv)
    import tempfile

    blocks = load_blocks(), load_blocks(ranked=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = a.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        if any(root.iterdir()):
            print(f"{root} is not empty: give --keep an empty or new folder", file=sys.stderr)
            return 2
        truths = [generate(s, root, blocks) for s in range(a.first, a.first + a.seeds)]
        (root / "truth.json").write_text(json.dumps([t.to_dict() for t in truths], indent=1))
        got, texts = run_sigclass([root / t.run for t in truths], a.jobs)
        bad = 0
        for t in truths:
            miss = compare(t, got.get(t.run, {})) + check_text(t, texts.get(t.run, ""))
            if miss:
                bad += 1
                print(f"# {t.run} ({t.form})")
                print("\n".join("  " + x for x in miss))
        print(f"{len(truths) - bad}/{len(truths)} runs agree with their truth")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
