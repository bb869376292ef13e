"""Post-mortem over run directories (`sigclass runs DIR...`).

Each DIR is one run (the contract is ../shared/runs.md). A run is made of
*units* (shards, or the ranks of one distributed job) executed by *workers*.
For every unit this module works out its worker, its outcome (`ok`, `failed`,
`incomplete`), its family, and whether it is a root fault or a cascade victim
of one; for every run, the root faults with their blast radius, the
systematic faults (one family striking several workers separately), the
problems (files that could not be read, and why) and a one-line headline.

The work is split in two:

* `scan_source` scans one log source into a small `SourceScan`;
* `assemble` turns the scans of one run into a `Run`. It is pure and
  deterministic, so the answer is the same for any number of workers.

`iter_runs` runs both in parallel with joblib (any backend, dask included):
whole runs per task when there are many runs, single files per task when
there are few, and yields each run as soon as it is known.

Layouts are recognised without configuration (see `identify` and
`_pieces_of`): one file per shard grouped by worker folders; one file per
worker with shard markers inside; one combined torchrun / MPI / Ray log whose
line prefixes name the ranks; Slurm array files (`slurm-<job>_<task>.out`);
JSON-lines events with worker and unit fields.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from sigclass.errors import InputError, SigclassError
from sigclass.records import Finding
from sigclass.scan.reader import COMPRESSED, LOG_SUFFIXES, is_log_name
from sigclass.scan.scanner import Marker
from sigclass.text.lines import fingerprint as _fingerprint

STATUSES = ("ok", "failed", "incomplete")
ROLES = ("root", "cascade")

# Worker folders / files: worker_3, worker-3, gpu3, rank3, node-a, host-7.
WORKER_NAME = re.compile(r"(?i)^(?:worker|gpu|rank|node|host)(?:[_-]?\d+|[_-][a-z0-9]+)$")
# Shard files: shard_17, shard-17, shard17, part-00017.
SHARD_NAME = re.compile(r"(?i)^(?:shard|part)[_-]?(\d+)$")
SLURM_NAME = re.compile(r"^slurm-(\d+)_(\d+)$")

# Line prefixes that name a rank or a Ray worker in a combined log (read on raw bytes, see `_prefix_census`).
_CENSUS = re.compile(
    rb"^(?:\x1b\[[0-9;]*m)*(?:\[(?:rank|default)(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err)>:|(\d{1,4}): "
    rb"|\((?:([A-Za-z_][\w.:-]*)[ ,]+)?pid=(\d+)(?:, ip=[\d.:a-f]+)?\) )",
    re.M,
)
# torchelastic's failure summary names the rank that failed first; a rank killed outright prints nothing itself
_ROOT_CAUSE = re.compile(rb"Root Cause \(first observed failure\):")
_ROOT_CAUSE_RANK = re.compile(rb"\n\s*rank\s*:\s*(\d+)")
ROOT_CAUSE_WINDOW = (40, 15)  # launcher findings this many lines before / after the summary belong to its rank
_PREFIX_KINDS = ("rank", "mpi", "tee")  # stream kinds of textnorm._PREFIXES that name a rank
_NOT_A_WORKER = ("EngineCore",)  # vLLM's engine subprocess: a part of its worker, never a worker of its own
_MAX_EVIDENCE = 3


# =========================================================================== options


@dataclass(frozen=True)
class ScanConfig:
    """What every scanning process needs to build the same scanner (hashable, picklable)."""

    ledger: tuple[str, ...] = ()
    signatures: str = "both"
    model: str | None = None


@dataclass(frozen=True)
class Layout:
    """Optional user patterns for layouts the built-in rules do not know.

    Each is a regex searched in a source's path relative to its run
    directory; the group named ``unit`` / ``worker`` (else the first group,
    else the whole match) is the id.
    """

    unit_pattern: str | None = None
    worker_pattern: str | None = None

    def compiled(self) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
        out = []
        for opt, rx in (("--unit-pattern", self.unit_pattern), ("--worker-pattern", self.worker_pattern)):
            if not rx:
                out.append(None)
                continue
            try:
                out.append(re.compile(rx))
            except re.error as exc:
                raise InputError(f"{opt} {rx!r} is not a valid regular expression ({exc})") from None
        return out[0], out[1]


# =========================================================================== records


@dataclass(slots=True)
class Unit:
    """One unit of a run and what became of it."""

    unit: str
    worker: str | None
    status: str  # ok | failed | incomplete
    family: str | None = None
    role: str | None = None  # root | cascade | None
    root: str | None = None  # the root unit's id, for a cascade victim
    time: str | None = None
    fingerprint: str | None = None
    evidence: list[str] = field(default_factory=list)
    source: str | None = None
    line: int | None = None
    start: str | None = None  # start time (ordering within a worker)
    order: tuple = ()
    distributed: bool = False  # a rank of a distributed job (its id is the rank / pid / task)
    finding: Finding | None = None  # the finding that names its family

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "worker": self.worker, "status": self.status, "family": self.family,
            "role": self.role, "root": self.root, "time": self.time, "fingerprint": self.fingerprint,
            "evidence": list(self.evidence), "source": self.source, "line": self.line,
        }


@dataclass(slots=True)
class RootFault:
    """A root fault and its blast radius."""

    unit: str
    worker: str | None
    family: str
    time: str | None
    fingerprint: str | None
    victims: list[str]
    evidence: list[str]
    source: str | None
    line: int | None
    mitigation: str = ""
    probes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # red-herring / superseded notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "worker": self.worker, "family": self.family, "time": self.time,
            "fingerprint": self.fingerprint, "victims": list(self.victims), "evidence": list(self.evidence),
            "source": self.source, "line": self.line, "mitigation": self.mitigation, "probes": list(self.probes),
            "notes": list(self.notes),
        }


@dataclass(slots=True)
class Systematic:
    """One family striking several workers separately."""

    family: str
    workers: int
    units: list[str]
    fingerprint: str | None = None  # only for `unknown`, whose repeats group by fingerprint

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"family": self.family, "workers": self.workers}
        if self.fingerprint is not None:
            d["fingerprint"] = self.fingerprint
        return d


@dataclass(slots=True)
class Run:
    """The post-mortem of one run directory."""

    run: str
    path: str
    units: list[Unit]
    roots: list[RootFault]
    systematic: list[Systematic]
    problems: list[str]
    summary: str
    readable: bool = True  # False: nothing in the directory could be read at all
    noun: str = "units"
    workers: int = 0
    launcher: list[str] = field(default_factory=list)  # failures printed by the launcher, not by a unit

    @property
    def failed(self) -> bool:
        return any(u.status != "ok" for u in self.units)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run, "path": self.path,
            "units": [u.to_dict() for u in self.units],
            "roots": [r.to_dict() for r in self.roots],
            "systematic": [s.to_dict() for s in self.systematic],
            "problems": list(self.problems),
            "summary": self.summary,
        }


# =========================================================================== discovery


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A run directory as found on disk: its log sources (relative paths, sorted) and discovery problems."""

    path: str
    name: str
    sources: tuple[str, ...]
    problems: tuple[str, ...]
    listable: bool = True
    bytes: int = 0  # total size of the sources (on disk)


def run_name(path: str) -> str:
    p = os.path.normpath(path)
    return os.path.basename(p) or p


def plan_run(path: str) -> RunPlan:
    """Find the log sources under one run directory without opening any of them."""
    name = run_name(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return RunPlan(path, name, (), (f"{path}: no such directory; check the path",), False)
    except OSError as exc:
        return RunPlan(path, name, (), (f"{path}: cannot read ({_why(exc)})",), False)
    if not stat.S_ISDIR(st.st_mode):
        return RunPlan(path, name, (), (f"{path}: not a directory; `sigclass runs` takes run directories "
                                        f"(use `sigclass scan {path}` for one log)",), False)
    sources: list[tuple[str, int]] = []
    problems: list[str] = []
    listable = _walk(path, "", {(st.st_dev, st.st_ino)}, sources, problems)
    if listable and not sources:
        problems.append(f"no log files ({', '.join('*' + s for s in LOG_SUFFIXES)}, "
                        f"optionally .gz/.zst) under {path}")
    sources.sort()
    return RunPlan(path, name, tuple(s for s, _ in sources), tuple(problems), listable, sum(n for _, n in sources))


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _walk(root: str, rel: str, ancestors: set[tuple[int, int]], sources: list[tuple[str, int]], problems: list[str]) -> bool:
    here = os.path.join(root, rel) if rel else root
    try:
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        problems.append(f"{rel or '.'}: cannot list this directory ({_why(exc)}); its logs are not read")
        return False
    for e in entries:
        relp = f"{rel}/{e.name}" if rel else e.name
        try:
            link = e.is_symlink()
            st = os.stat(e.path) if link else e.stat(follow_symlinks=False)
        except OSError as exc:
            if not link:
                continue  # vanished while listing
            if exc.errno == errno.ELOOP:
                problems.append(f"{relp}: symlink loop; skipped")
            elif is_log_name(e.name):
                problems.append(f"{relp}: dangling symlink (its target does not exist); skipped")
            continue
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in ancestors:
                problems.append(f"{relp}: symlink loop (links back to a parent directory); skipped")
                continue
            _walk(root, relp, ancestors | {key}, sources, problems)
            continue
        if not is_log_name(e.name):
            continue
        if not stat.S_ISREG(st.st_mode):
            problems.append(f"{relp}: {_kind(st.st_mode)}, not a regular file; not opened")
            continue
        sources.append((relp, st.st_size))
    return True


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


# =========================================================================== identity from the path


@dataclass(frozen=True, slots=True)
class Identity:
    """What a source's path says: `unit` (one file per unit), `slurm` (array task), `worker` or `none`."""

    kind: str
    unit: str | None
    worker: str | None


def _stem(name: str) -> str:
    for suf in COMPRESSED:
        if name.endswith(suf):
            name = name[: -len(suf)]
            break
    for suf in LOG_SUFFIXES:
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


def _is_jsonl(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    for suf in COMPRESSED:
        if name.endswith(suf):
            name = name[: -len(suf)]
    return name.endswith(".jsonl")


def norm_id(raw: str) -> str:
    """A unit or worker id: numbers lose their leading zeros."""
    raw = raw.strip()
    return str(int(raw)) if raw.isdigit() else raw


def _group(m: re.Match[str], name: str) -> str:
    gd = m.groupdict()
    if gd.get(name):
        return gd[name]
    for g in m.groups():
        if g:
            return g
    return m.group(0)


def identify(rel: str, unit_rx: re.Pattern[str] | None = None, worker_rx: re.Pattern[str] | None = None) -> Identity:
    parts = rel.split("/")
    stem = _stem(parts[-1])
    worker = None
    if worker_rx is not None:
        m = worker_rx.search(rel)
        if m:
            worker = norm_id(_group(m, "worker"))
    if worker is None:
        worker = next((d for d in reversed(parts[:-1]) if WORKER_NAME.match(d)), None)
    if unit_rx is not None:
        m = unit_rx.search(rel)
        if m:
            return Identity("unit", norm_id(_group(m, "unit")), worker)
    m = SLURM_NAME.match(stem)
    if m:
        task = norm_id(m.group(2))
        return Identity("slurm", task, task)
    m = SHARD_NAME.match(stem)
    if m:
        return Identity("unit", norm_id(m.group(1)), worker)
    if worker is None and WORKER_NAME.match(stem):
        worker = stem
    return Identity("worker" if worker else "none", None, worker)


# =========================================================================== scanning (runs in worker processes)


@dataclass(slots=True)
class SourceScan:
    """What one source yields, small enough to send between processes."""

    rel: str
    identity: Identity
    jsonl: bool
    findings: list[Finding]
    markers: list[Marker]
    kv_worker: str | None
    ranks: list[str]  # rank / Ray pid ids named by line prefixes (combined logs only)
    problems: list[str]
    root_causes: list[tuple[int, str]] = field(default_factory=list)  # (line, rank) of launcher failure summaries
    first_time: str | None = None
    last_time: str | None = None
    readable: bool = False


_SCANNERS: dict[ScanConfig, Any] = {}


def build_scanner(cfg: ScanConfig):
    """The scanner for a config, built once per process.

    A model named by the user is loaded now, so a bad one stops the batch
    with its own message. The shipped model is checked against its pin now
    and loaded on the first failure block no regex explains (see
    sigclass.learned).
    """
    sc = _SCANNERS.get(cfg)
    if sc is not None:
        return sc
    from sigclass.ledger.pack import load_ledger
    from sigclass.scan.scanner import Scanner

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ledger = load_ledger(list(cfg.ledger))
        learned = None
        if cfg.signatures != "regex":
            from sigclass.learn.lazy import load_predictor

            learned = load_predictor(Path(cfg.model) if cfg.model else None, ledger)
    sc = Scanner(ledger, signatures=cfg.signatures, learned=learned)
    _SCANNERS[cfg] = sc
    return sc


def scan_source(cfg: ScanConfig, layout: Layout, run_path: str, rel: str) -> SourceScan:
    """Scan one log source of a run. Never raises for a bad input: what went wrong is a problem."""
    unit_rx, worker_rx = layout.compiled()
    ident = identify(rel, unit_rx, worker_rx)
    jsonl = _is_jsonl(rel)
    out = SourceScan(rel, ident, jsonl, [], [], None, [], [])
    path = os.path.join(run_path, rel)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        out.problems.append(f"{rel}: vanished before it could be read; skipped")
        return out
    except OSError as exc:
        out.problems.append(f"{rel}: cannot read ({_why(exc)}); skipped")
        return out
    if not stat.S_ISREG(st.st_mode):  # never open a FIFO or a device: it could block forever
        out.problems.append(f"{rel}: {_kind(st.st_mode)}, not a regular file; not opened")
        return out
    scanner = build_scanner(cfg)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = scanner.scan(path, display=rel)
    except InputError as exc:
        msg = str(exc)
        if "no such file" in msg:
            msg = f"{rel}: vanished before it could be read; skipped"
        out.problems.append(msg.replace(path, rel))
        return out
    except MemoryError:
        out.problems.append(f"{rel}: out of memory while scanning; skipped")
        return out
    except Exception as exc:  # a reader or decoder failure must not stop the batch
        out.problems.append(f"{rel}: could not be scanned ({type(exc).__name__}: {exc}); skipped")
        return out
    out.problems.extend(res.problems)
    binary = any("binary data" in p for p in res.problems)
    if res.bytes == 0 and not res.problems:
        out.problems.append(f"{rel}: empty file; nothing to read")
    out.readable = res.bytes > 0 and not binary
    out.first_time, out.last_time = res.first_time, res.last_time
    kv = res.workers_kv
    raw_kv = kv.get("worker") or kv.get("rank") or kv.get("gpu")
    out.kv_worker = norm_id(raw_kv) if raw_kv else None
    for f in res.findings:
        f.block = []
        f.facts = {}
        f.evidence = [e[:400] for e in f.evidence[-_MAX_EVIDENCE:]]
        out.findings.append(f)
    out.markers = list(res.markers)
    if ident.kind == "none" and not jsonl and out.readable:
        out.ranks, out.root_causes = _prefix_census(path, rel)
    return out


def _prefix_census(path: str, rel: str) -> tuple[list[str], list[tuple[int, str]]]:
    """Every rank / Ray pid named by a line prefix of a combined log, and the rank each launcher failure
    summary names with its line (one cheap pass over raw bytes)."""
    from sigclass.scan.reader import open_source

    seen: dict[str, None] = {}
    causes: list[tuple[int, str]] = []
    lines = 0

    def take(buf: bytes) -> None:
        nonlocal lines
        for m in _ROOT_CAUSE.finditer(buf):
            r = _ROOT_CAUSE_RANK.search(buf, m.end(), m.end() + 2000)
            if r:
                causes.append((lines + buf.count(b"\n", 0, m.start()) + 1, norm_id(r.group(1).decode())))
        lines += buf.count(b"\n")
        for m in _CENSUS.finditer(buf):
            if m.group(5) is not None:
                name = (m.group(4) or b"").decode("ascii", "replace")
                if not name.startswith(_NOT_A_WORKER):
                    seen.setdefault(norm_id(m.group(5).decode()), None)
            else:
                val = m.group(1) or m.group(2) or m.group(3)
                seen.setdefault(norm_id(val.decode()), None)

    tail = b""
    skip = False  # inside an over-long line whose head was already looked at
    try:
        stream = open_source(path)
    except (OSError, SigclassError):
        return [], []
    try:
        while True:
            data = stream.read(4 << 20)
            if not data:
                break
            if skip:
                nl = data.find(b"\n")
                if nl == -1:
                    continue
                data, skip = data[nl + 1:], False
            buf = tail + data
            cut = buf.rfind(b"\n") + 1
            take(buf[:cut])
            tail = buf[cut:]
            if len(tail) > 65536:  # a prefix sits at a line's start: the head of a long line is enough
                take(tail[:256] + b"\n")
                tail, skip = b"", True
    except Exception:  # a truncated or corrupt stream: the scan reports it; keep what was read
        pass
    finally:
        try:
            stream.close()
        except Exception:
            pass
    if tail:
        take(tail)
    return list(seen), causes


def _scan_chunk(cfg: ScanConfig, layout: Layout, items: list[tuple[int, str, str]]) -> list[tuple[int, SourceScan]]:
    return [(i, scan_source(cfg, layout, run_path, rel)) for i, run_path, rel in items]


SMALL_BATCH_SOURCES = 64  # with the default -j, a batch this small (and SMALL_BATCH_BYTES) is scanned in-process:
SMALL_BATCH_BYTES = 16 << 20  # starting worker processes would cost more than it saves


def scan_sources(plans: Sequence[RunPlan], cfg: ScanConfig, layout: Layout, *, n_jobs: int = -1,
                 on_progress: Callable[[int], None] | None = None, small_in_process: bool = False) -> list[list[SourceScan]]:
    """Scan every source of every run, in parallel; the scans of run i, in path order, at index i.

    Runs under whatever joblib backend is active (`joblib.parallel_config`),
    so `--dask` only has to switch the backend. With ``small_in_process`` a
    small batch skips the worker processes (the answer is the same).
    """
    import joblib

    items = [(i, plan.path, rel) for i, plan in enumerate(plans) for rel in plan.sources]
    out: list[list[SourceScan]] = [[] for _ in plans]
    if not items:
        return out
    workers = joblib.effective_n_jobs(n_jobs)
    small = small_in_process and len(items) <= SMALL_BATCH_SOURCES and sum(p.bytes for p in plans) <= SMALL_BATCH_BYTES
    if workers <= 1 or len(items) == 1 or small:
        for i, run_path, rel in items:
            out[i].append(scan_source(cfg, layout, run_path, rel))
            if on_progress:
                on_progress(1)
        return out
    size = max(1, min(32, math.ceil(len(items) / (workers * 8))))
    chunks = [items[k:k + size] for k in range(0, len(items), size)]
    gen = joblib.Parallel(n_jobs=n_jobs, return_as="generator", batch_size=1)(
        joblib.delayed(_scan_chunk)(cfg, layout, ch) for ch in chunks)
    with _closing(gen):
        for done in gen:
            for i, scan in done:
                out[i].append(scan)
            if on_progress:
                on_progress(len(done))
    return out


class _closing:
    """Close a joblib result generator quietly when its consumer stops early (an error, `| head`)."""

    def __init__(self, gen) -> None:
        self.gen = gen

    def __enter__(self):
        return self.gen

    def __exit__(self, *exc: Any) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joblib warns about the tasks it cancels
            self.gen.close()


# =========================================================================== assembling one run


@dataclass(slots=True, eq=False)
class _Piece:
    """The findings and markers of one unit on one worker, as read from one or more sources."""

    unit: str
    worker: str | None
    source: str
    line: int
    start: str | None = None
    findings: list[Finding] = field(default_factory=list)
    ends: list[Marker] = field(default_factory=list)
    distributed: bool = False
    fallback: bool = False  # no unit named it (a whole file, a worker's own log): a unit only if the run has no other


def _prefix_kind(stream: str) -> str | None:
    """'rank' / 'mpi' / 'tee' / 'ray' for a stream named by a worker prefix; None otherwise."""
    if not stream or stream.startswith("w:"):
        return None
    head = stream.split("|", 1)[0]
    kind = head.split(":", 1)[0]
    if kind in _PREFIX_KINDS:
        return kind
    if ":" in head and not kind.startswith(_NOT_A_WORKER):
        return "ray"
    return None


def _event_worker(stream: str, worker: str | None, ident: Identity, file_worker: str | None) -> tuple[str | None, str]:
    """(worker, origin) of a finding or marker; origin is 'field' (JSON record), 'prefix' (rank line prefix) or 'file'."""
    if stream.startswith("w:") and worker:
        return norm_id(worker), "field"
    if ident.kind == "none" and worker and _prefix_kind(stream):
        return norm_id(worker), "prefix"
    return file_worker, "file"


def _pieces_of(sc: SourceScan) -> tuple[list[_Piece], list[Finding]]:
    """The units one source holds, and the findings no unit owns (a launcher's own output)."""
    ident = sc.identity
    first_start = next((m for m in sc.markers if m.kind == "start"), None)
    if ident.kind in ("unit", "slurm"):
        worker = ident.worker
        if worker is None:
            worker = next((norm_id(x.worker) for x in [*sc.findings, *sc.markers]
                           if x.stream.startswith("w:") and x.worker), None) or sc.kv_worker
        piece = _Piece(ident.unit or "", worker, sc.rel, 0,
                       first_start.time if first_start else sc.first_time,
                       list(sc.findings), [m for m in sc.markers if m.kind != "start"],
                       distributed=False)
        return [piece], []

    file_worker = ident.worker or sc.kv_worker
    events: dict[str | None, list[tuple[int, int, Any]]] = {}
    origin_of: dict[str | None, str] = {}
    for m in sc.markers:
        w, origin = _event_worker(m.stream, m.worker, ident, file_worker)
        events.setdefault(w, []).append((m.line, 0 if m.kind == "start" else 2, m))
        origin_of.setdefault(w, origin)
    for f in sc.findings:
        w, origin = _event_worker(f.stream, f.worker, ident, file_worker)
        events.setdefault(w, []).append((f.line, 1, f))
        origin_of.setdefault(w, origin)

    # a combined log: some lines carry rank prefixes (the census adds the ranks that printed nothing we read)
    ranked = any(o == "prefix" for o in origin_of.values()) or (len(sc.ranks) >= 2 and not events)
    pieces: dict[tuple[str | None, str], _Piece] = {}
    orphans: list[Finding] = []

    def piece(w: str | None, unit: str, line: int, start: str | None, dist: bool = False) -> _Piece:
        key = (w, unit)
        p = pieces.get(key)
        if p is None:
            p = pieces[key] = _Piece(unit, w, sc.rel, line, start, distributed=dist)
        elif start and (p.start is None or start < p.start):
            p.start = start
        return p

    if ranked:
        for rank in sc.ranks:
            piece(rank, rank, 0, None, True)
    for w in sorted(events, key=lambda x: (x is None, str(x))):
        evs = sorted(events[w], key=lambda t: (t[0], t[1]))
        origin = origin_of[w]
        if origin == "prefix":
            for line, _, ev in evs:
                p = piece(w, w or "", line, ev.time, True)
                if isinstance(ev, Marker):
                    if ev.kind != "start":
                        p.ends.append(ev)
                else:
                    p.findings.append(ev)
            continue
        if ranked and origin == "file":
            # unprefixed lines of a combined log: the launcher's own; a shard marker names its rank,
            # and so does a failure summary (`Root Cause (first observed failure): ... rank : 2`)
            before, after = ROOT_CAUSE_WINDOW
            for _, _, ev in evs:
                if isinstance(ev, Marker):
                    if ev.kind != "start" and (ev.unit, ev.unit) in pieces:
                        pieces[(ev.unit, ev.unit)].ends.append(ev)
                    continue
                rank = next((r for ln, r in sc.root_causes if ln - before <= ev.line <= ln + after), None)
                if rank is not None and (rank, rank) in pieces:
                    pieces[(rank, rank)].findings.append(ev)
                elif ev.unit:
                    piece(w, norm_id(ev.unit), ev.line).findings.append(ev)
                else:
                    orphans.append(ev)
            continue
        current: str | None = None
        pending: list[Finding] = []
        mine: list[_Piece] = []
        for line, _, ev in evs:
            if isinstance(ev, Marker):
                if ev.kind == "start":
                    current = ev.unit
                    p = piece(w, current, line, ev.time)
                    if p not in mine:
                        mine.append(p)
                    p.findings.extend(pending)
                    pending = []
                else:
                    p = piece(w, ev.unit, line, ev.time)
                    if p not in mine:
                        mine.append(p)
                    p.ends.append(ev)
                continue
            unit = norm_id(ev.unit) if ev.unit else current
            if unit is None:
                pending.append(ev)
                continue
            p = piece(w, unit, line, ev.time)
            if p not in mine:
                mine.append(p)
            p.findings.append(ev)
        if pending:
            if mine:
                mine[-1].findings.extend(pending)
            else:
                # no unit markers at all: the worker is the unit (a rank of a JSON-lines job), else the file is
                loose = False
                if origin == "field" and w is not None:
                    unit, dist = w, True
                elif file_worker is not None and w == file_worker:
                    unit, dist, loose = file_worker, False, True
                else:
                    unit, dist, loose = _stem(sc.rel.rsplit("/", 1)[-1]), False, True
                p = piece(w, unit, pending[0].line, pending[0].time, dist)
                p.findings.extend(pending)
                p.fallback = p.fallback or loose
    if not pieces and sc.readable:
        # a readable log with no unit marker, no rank and no finding: one unit, the file (or its worker),
        # unless the run has real units (then it is a side file: a monitor, a launcher, notes)
        unit = file_worker or _stem(sc.rel.rsplit("/", 1)[-1])
        piece(file_worker, unit, 0, sc.first_time).fallback = True
    return list(pieces.values()), orphans


def _natural(unit: str) -> tuple:
    return (0, int(unit), "") if unit.isdigit() else (1, 0, unit)


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]\"'])\.\s+(?=[A-Z(])")


def _gist(text: str, limit: int = 110) -> str:
    """The leading clause of a probe (up to its first `;` or sentence end), for one-line summaries."""
    s = _first_sentence(text, 10 * limit)
    depth, quoted = 0, False
    for i, ch in enumerate(s):  # the first `;` outside quotes and brackets ends the clause
        if ch in "\"`":
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == ";" and not quoted and depth == 0:
            s = s[:i]
            break
    paren = s.find(" (")
    if paren >= 40:  # drop a parenthesised aside: `... enforce_eager=True (LLM(..., ...) or --flags), then ...`
        s = s[:paren]
    if len(s) > limit:
        s = s[: limit - 1].rsplit(" ", 1)[0] + " …"
    return s.rstrip(" .,")


def _first_sentence(text: str, limit: int = 240) -> str:
    """The first sentence of a ledger text, cut at a word boundary when it is very long."""
    text = " ".join(text.split())
    m = _SENTENCE_END.search(text)
    s = text[: m.start() + 1] if m else text
    if len(s) > limit:
        s = s[: limit - 1].rsplit(" ", 1)[0] + " …"
    return s


def _defining(findings: list[Finding]) -> Finding | None:
    """The finding that names a unit's family: a known root family first, then unknown, then secondary.

    A family that another finding of the unit supersedes (ledger `supersedes` /
    `superseded_by`) gives way to it; a red-herring entry gives way to an active one.
    """
    if not findings:
        return None
    fams = {f.family for f in findings}
    superseded = set()
    for f in findings:
        for s in f.supersedes:
            superseded.add(s.get("id"))
        for s in f.superseded_by:
            if s.get("id") in fams:
                superseded.add(f.family)
    cands = [f for f in findings if f.family not in superseded] or findings

    def rank(f: Finding) -> tuple:
        cls = 0 if (f.family != "unknown" and f.family_role != "secondary") else 1 if f.family == "unknown" else 2
        return (cls, f.status == "red-herring", f.time is None, f.time or "", f.source, f.line)

    return min(cands, key=rank)


def _make_unit(p: _Piece) -> Unit:
    fails = [m for m in p.ends if m.kind == "failed"]
    oks = [m for m in p.ends if m.kind == "ok"]
    u = Unit(p.unit, p.worker, "incomplete", source=p.source, line=p.line or None, start=p.start,
             distributed=p.distributed)
    f = _defining(p.findings)
    if f is not None:
        u.status = "failed"
        u.family, u.time, u.fingerprint = f.family, f.time, f.fingerprint
        u.evidence = list(f.evidence[-_MAX_EVIDENCE:])
        u.source, u.line = f.source, f.line
        u.finding = f
    elif fails:
        m = fails[0]
        u.status = "failed"
        u.family, u.time = "unknown", m.time
        u.fingerprint = _fingerprint(["unknown", m.text or f"failure marker of unit {p.unit}"])
        u.evidence = [m.text] if m.text else []
        u.line = m.line
    elif oks:
        u.status = "ok"
        u.time = oks[-1].time
        u.line = oks[-1].line
    else:
        u.time = p.start
    u.order = _piece_key(p)
    return u


def _piece_key(p: _Piece) -> tuple:
    """The order of units on one worker: by start time; without one, a whole-file unit by its number,
    a unit inside a file by its place in the file."""
    where = (0, _natural(p.unit), "", 0) if p.line == 0 else (1, (), p.source, p.line)
    return (p.start is None, p.start or "", where)


def assemble(plan: RunPlan, scans: Sequence[SourceScan]) -> Run:
    """The post-mortem of one run from the scans of its sources. Pure and deterministic."""
    problems = list(plan.problems)
    pieces: dict[tuple[str | None, str], _Piece] = {}
    launcher: list[Finding] = []
    for sc in sorted(scans, key=lambda s: s.rel):
        problems.extend(sc.problems)
        got, orphans = _pieces_of(sc)
        launcher.extend(orphans)
        for p in got:
            key = (p.worker, p.unit)
            have = pieces.get(key)
            if have is None:
                pieces[key] = p
                continue
            have.findings.extend(p.findings)
            have.ends.extend(p.ends)
            have.distributed = have.distributed or p.distributed
            have.fallback = have.fallback and p.fallback
            if p.start and (have.start is None or p.start < have.start):
                have.start = p.start
    readable = plan.listable and bool(plan.sources) and any(sc.readable for sc in scans)
    if any(not p.fallback for p in pieces.values()):
        launcher.extend(_fold_loose(pieces))
    units = [_make_unit(p) for p in pieces.values()]
    roots = _cascade(units)
    systematic = _systematic(roots)
    units.sort(key=lambda u: (_natural(u.unit), str(u.worker)))
    noun = _noun(plan, scans, units)
    workers = len({u.worker for u in units if u.worker is not None})
    run = Run(plan.name, plan.path, units, roots, systematic, problems, "", readable, noun, workers,
              [f"{f.family}: {f.evidence[-1] if f.evidence else ''} ({f.source}:{f.line})" for f in launcher
               if f.family_role != "secondary"])
    run.summary = headline(run)
    for u in units:
        u.finding = None  # only the cascade needed it; a run travels between processes without it
    return run


def _fold_loose(pieces: dict[tuple[str | None, str], _Piece]) -> list[Finding]:
    """With real units in the run: fold in what no unit named. Returns the findings nothing owns.

    A unit seen without a worker (a driver log's shard markers) joins the one
    unit of that id seen with a worker. A worker's own log (no unit markers)
    gives each finding to the unit that worker was running at the time (the
    first one for a failure before any unit started, the last one when the
    failure has no time). Side files with no finding are dropped.
    """
    real = [p for p in pieces.values() if not p.fallback]
    by_unit: dict[str, list[_Piece]] = {}
    for p in real:
        by_unit.setdefault(p.unit, []).append(p)
    for key, p in list(pieces.items()):
        if p.fallback or p.worker is not None:
            continue
        others = [q for q in by_unit.get(p.unit, []) if q is not p and q.worker is not None]
        if len(others) == 1:
            q = others[0]
            q.findings.extend(p.findings)
            q.ends.extend(p.ends)
            if p.start and (q.start is None or p.start < q.start):
                q.start = p.start
            del pieces[key]
    left: list[Finding] = []
    for key, p in sorted(pieces.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if not p.fallback:
            continue
        del pieces[key]
        mine = sorted((q for q in pieces.values() if not q.fallback and p.worker is not None and q.worker == p.worker),
                      key=_piece_key)
        for f in p.findings:
            if not mine:
                left.append(f)
            elif f.time is None:
                mine[-1].findings.append(f)  # no time to place it: the worker's last unit is the one it died in
            else:
                started = [q for q in mine if q.start is not None and q.start <= f.time]
                (started[-1] if started else mine[0]).findings.append(f)
    return left


def _cascade(units: list[Unit]) -> list[RootFault]:
    """Give each failed or incomplete unit its role; return the root faults with their victims."""
    by_worker: dict[Any, list[Unit]] = {}
    for u in units:
        key = ("w", u.worker) if u.worker is not None else ("u", u.unit)
        by_worker.setdefault(key, []).append(u)
    root_of: dict[int, Unit] = {}  # id(victim) -> its root (for now)
    roots: list[Unit] = []
    orphans: list[Unit] = []  # secondaries with no root before them on their worker
    for key in sorted(by_worker, key=lambda k: (k[0], str(k[1]))):
        current: Unit | None = None
        for u in sorted(by_worker[key], key=lambda x: x.order):
            if u.status == "ok":
                current = None
                continue
            if current is not None:
                root_of[id(u)] = current
                continue
            if u.status == "failed":
                if u.finding is not None and u.finding.family_role == "secondary":
                    orphans.append(u)
                else:
                    roots.append(u)
                current = u
    distributed = any(u.distributed for u in units)
    final_roots = list(roots)
    if distributed and not roots and orphans:
        # every rank printed a secondary error and none a root: the earliest is the best root there is
        first = min(orphans, key=lambda x: (x.time is None, x.time or "", _natural(x.unit)))
        orphans.remove(first)
        roots.append(first)
        final_roots.append(first)
    proper = sorted(roots, key=lambda r: (r.time is None, r.time or "", _natural(r.unit)))
    for o in sorted(orphans, key=lambda x: (x.time is None, x.time or "", _natural(x.unit))):
        fam = o.family or ""
        cause = None
        if proper and (distributed or fam == "nccl-watchdog-timeout"):
            before = [r for r in proper if r.worker != o.worker and (r.time is None or o.time is None or r.time <= o.time)]
            cause = before[0] if before else next((r for r in proper if r.worker != o.worker), None)
        if cause is not None:
            root_of[id(o)] = cause
        else:
            final_roots.append(o)  # nothing explains it: the best available root
    if distributed and proper:
        # a rank that printed nothing after a root fault elsewhere hung behind it
        first = proper[0]
        for u in units:
            if u.status == "incomplete" and id(u) not in root_of and u.distributed:
                root_of[id(u)] = first
    # chains (victim of an orphan that is itself a victim) resolve to the root at the end
    victims: dict[int, list[Unit]] = {id(r): [] for r in final_roots}
    for u in units:
        r = root_of.get(id(u))
        seen = 0
        while r is not None and id(r) in root_of and seen < len(units):
            r = root_of[id(r)]
            seen += 1
        if r is None:
            continue
        u.role, u.root = "cascade", r.unit
        victims.setdefault(id(r), []).append(u)
    out: list[RootFault] = []
    for r in sorted(final_roots, key=lambda x: (x.time is None, x.time or "", _natural(x.unit), str(x.worker))):
        r.role, r.root = "root", None
        f = r.finding
        notes: list[str] = []
        if f is not None:
            if f.status == "red-herring":
                notes.append(f"the ledger marks {f.family} as a red herring; look for the real cause")
            for s in f.superseded_by:
                notes.append(f"superseded by {s.get('id')}: {_first_sentence(s.get('note', ''))}")
            for c in f.caveats:
                if "red herring" in c.lower() or "red-herring" in c.lower():
                    notes.append(_first_sentence(c))
        vs = sorted(victims.get(id(r), []), key=lambda u: _natural(u.unit))
        out.append(RootFault(
            r.unit, r.worker, r.family or "unknown", r.time, r.fingerprint, [v.unit for v in vs], list(r.evidence),
            r.source, r.line, f.mitigation if f else "", list(f.probes) if f else [], notes,
        ))
    return out


def _systematic(roots: list[RootFault]) -> list[Systematic]:
    groups: dict[tuple[str, str | None], list[RootFault]] = {}
    for r in roots:
        key = (r.family, r.fingerprint if r.family == "unknown" else None)
        groups.setdefault(key, []).append(r)
    out = []
    for (fam, fp), rs in groups.items():
        workers = {r.worker for r in rs if r.worker is not None}
        if len(workers) >= 2:
            out.append(Systematic(fam, len(workers), sorted((r.unit for r in rs), key=_natural), fp))
    out.sort(key=lambda s: (-s.workers, s.family, s.fingerprint or ""))
    return out


def _noun(plan: RunPlan, scans: Sequence[SourceScan], units: list[Unit]) -> str:
    if not units:
        return "units"
    if all(sc.identity.kind == "slurm" for sc in scans if sc.readable) and scans:
        return "tasks"
    if all(u.distributed for u in units):
        return "ranks"
    if all(u.unit.isdigit() for u in units):
        return "shards"
    return "units"


def _ids(ids: Sequence[str]) -> str:
    """'4-7, 9, a' from ids: runs of consecutive numbers collapse to ranges."""
    nums = sorted({int(i) for i in ids if i.isdigit()})
    out: list[str] = []
    k = 0
    while k < len(nums):
        j = k
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[k]) if j == k else f"{nums[k]}-{nums[j]}" if j > k + 1 else f"{nums[k]}, {nums[j]}")
        k = j + 1
    out.extend(sorted(i for i in ids if not i.isdigit()))
    return ", ".join(out)


def headline(run: Run) -> str:
    """`35/42 shards lost: 7 root faults of F on 7 of 8 workers (systematic), 28 cascade victims`."""
    n = len(run.units)
    if not run.readable and n == 0:
        return "nothing could be read"
    if n == 0:
        return "no units found"
    lost = [u for u in run.units if u.status != "ok"]
    noun = run.noun
    if not lost:
        return f"all {n} {noun} ok"
    nroots = len(run.roots)
    victims = sum(1 for u in run.units if u.role == "cascade")
    loose = sum(1 for u in lost if u.role is None)
    parts: list[str] = []
    if nroots:
        fams = sorted({r.family for r in run.roots})
        what = f"{nroots} root fault{'s' if nroots != 1 else ''}"
        if len(fams) == 1:
            what += f" of {fams[0]}"
            sys_ = next((s for s in run.systematic if s.family == fams[0]), None)
            if sys_ is not None:
                what += f" on {sys_.workers} of {run.workers} workers (systematic)"
        else:
            what += f" ({', '.join(fams)})"
            if run.systematic:
                what += "; systematic: " + ", ".join(f"{s.family} on {s.workers} workers" for s in run.systematic)
        parts.append(what)
    if victims:
        parts.append(f"{victims} cascade victim{'s' if victims != 1 else ''}")
    if loose:
        parts.append(f"{loose} incomplete with no failure seen")
    return f"{len(lost)}/{n} {noun} lost: " + ", ".join(parts)


# =========================================================================== the batch


@dataclass(slots=True)
class Batch:
    runs: list[Run]

    @property
    def unreadable(self) -> bool:
        """True when some input could not be read at all (exit status 2)."""
        return any(not r.readable for r in self.runs)

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.runs)

    def to_dict(self) -> dict[str, Any]:
        units = [u for r in self.runs for u in r.units]
        return {
            "runs": [r.to_dict() for r in self.runs],
            "summary": {
                "runs": len(self.runs),
                "units": len(units),
                "failed": sum(1 for u in units if u.status == "failed"),
                "incomplete": sum(1 for u in units if u.status == "incomplete"),
                "root_faults": sum(len(r.roots) for r in self.runs),
                "problems": sum(len(r.problems) for r in self.runs),
            },
        }


def analyse(dirs: Iterable[str], *, cfg: ScanConfig = ScanConfig(), layout: Layout = Layout(), n_jobs: int = -1,
            on_plan: Callable[[int], None] | None = None, on_progress: Callable[[int], None] | None = None,
            small_in_process: bool = False) -> Batch:
    """The post-mortem of every run directory, in the order given (repeats dropped)."""
    layout.compiled()  # a bad user pattern is an error before any work starts
    seen: set[str] = set()
    plans: list[RunPlan] = []
    for d in dirs:
        key = os.path.normpath(os.path.abspath(d))
        if key in seen:
            continue
        seen.add(key)
        plans.append(plan_run(d))
    if on_plan:
        on_plan(sum(len(p.sources) for p in plans))
    return analyse_plans(plans, cfg=cfg, layout=layout, n_jobs=n_jobs, on_progress=on_progress,
                         small_in_process=small_in_process)


def analyse_plans(plans: Sequence[RunPlan], *, cfg: ScanConfig = ScanConfig(), layout: Layout = Layout(),
                  n_jobs: int = -1, on_progress: Callable[[int], None] | None = None,
                  small_in_process: bool = False) -> Batch:
    """The post-mortem of planned runs (see `iter_runs`)."""
    return Batch(list(iter_runs(plans, cfg=cfg, layout=layout, n_jobs=n_jobs, on_progress=on_progress,
                                small_in_process=small_in_process)))


RUN_TASKS_MIN_RUNS_PER_WORKER = 4  # from this many runs per worker on, a task is a group of whole runs
RUN_TASK_SOURCES = 256  # sources per run-group task (a bigger run makes a task of its own)


def iter_runs(plans: Sequence[RunPlan], *, cfg: ScanConfig = ScanConfig(), layout: Layout = Layout(),
              n_jobs: int = -1, on_progress: Callable[[int], None] | None = None,
              small_in_process: bool = False) -> Iterator[Run]:
    """The post-mortem of each planned run, in order, as soon as it is known (memory stays flat).

    One process: run after run. Many runs: each task scans and assembles
    whole runs, so the calling process only gathers them. Few runs: the
    tasks are files (a run with many files still spreads over every worker)
    and the runs are assembled here. The answer is the same in every case.
    """
    import joblib

    workers = joblib.effective_n_jobs(n_jobs)
    total = sum(len(p.sources) for p in plans)
    small = small_in_process and total <= SMALL_BATCH_SOURCES and sum(p.bytes for p in plans) <= SMALL_BATCH_BYTES
    if workers <= 1 or total <= 1 or small:
        for plan in plans:
            run = assemble(plan, [scan_source(cfg, layout, plan.path, rel) for rel in plan.sources])
            if on_progress and plan.sources:
                on_progress(len(plan.sources))
            yield run
        return
    if len(plans) >= RUN_TASKS_MIN_RUNS_PER_WORKER * workers:
        yield from _run_tasks(plans, cfg, layout, n_jobs, workers, total, on_progress)
        return
    scans = scan_sources(plans, cfg, layout, n_jobs=n_jobs, on_progress=on_progress)
    for plan, sc in zip(plans, scans):
        yield assemble(plan, sc)


def _analyse_chunk(cfg: ScanConfig, layout: Layout, plans: list[RunPlan]) -> list[Run]:
    return [assemble(plan, [scan_source(cfg, layout, plan.path, rel) for rel in plan.sources]) for plan in plans]


def _run_tasks(plans: Sequence[RunPlan], cfg: ScanConfig, layout: Layout, n_jobs: int, workers: int, total: int,
               on_progress: Callable[[int], None] | None) -> Iterator[Run]:
    import joblib

    per_task = max(1, min(RUN_TASK_SOURCES, math.ceil(total / (workers * 8))))
    chunks: list[list[RunPlan]] = []
    cur: list[RunPlan] = []
    n = 0
    for plan in plans:
        cur.append(plan)
        n += len(plan.sources)
        if n >= per_task:
            chunks.append(cur)
            cur, n = [], 0
    if cur:
        chunks.append(cur)
    gen = joblib.Parallel(n_jobs=n_jobs, return_as="generator", batch_size=1)(
        joblib.delayed(_analyse_chunk)(cfg, layout, ch) for ch in chunks)
    with _closing(gen):
        for chunk, done in zip(chunks, gen):
            if on_progress:
                on_progress(sum(len(p.sources) for p in chunk))
            yield from done


class dask_backend:
    """`with dask_backend(address):` runs joblib work on an existing dask.distributed cluster."""

    TIMEOUT = 20.0  # seconds to reach the scheduler

    def __init__(self, address: str, timeout: float | None = None) -> None:
        self.address = address
        self.timeout = self.TIMEOUT if timeout is None else timeout
        self.client = None
        self._cfg = None

    def __enter__(self) -> "dask_backend":
        try:
            import distributed
        except ImportError:
            raise SigclassError("--dask needs the optional dask extra; install it with: pip install 'sigclass[dask]'") from None
        import joblib

        try:
            self.client = distributed.Client(self.address, timeout=self.timeout, set_as_default=True)
        except (OSError, TimeoutError, ValueError) as exc:
            raise SigclassError(f"cannot reach the dask scheduler at {self.address} ({exc or type(exc).__name__}); "
                                "check the address (tcp://HOST:PORT) and that the scheduler is running") from None
        self._cfg = joblib.parallel_config(backend="dask")
        self._cfg.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._cfg is not None:
                self._cfg.__exit__(*exc)
        finally:
            if self.client is not None:
                self.client.close()


# =========================================================================== text


def _hms(t: str | None) -> str:
    return t[11:19] if t and len(t) >= 19 else "--:--:--"


def render_text(batch: Batch) -> Iterator[str]:
    """The post-mortem for people, one block per run."""
    for run in batch.runs:
        yield from render_run(run)


def render_run(run: Run) -> Iterator[str]:
    yield f"{run.run}: {run.summary}"
    singular = {"shards": "shard", "ranks": "rank", "tasks": "task"}.get(run.noun, "unit")
    for s in run.systematic:
        label = s.family if s.fingerprint is None else f"unknown failure {s.fingerprint}"
        yield f"  systematic: {label} struck {s.workers} of {run.workers} workers separately"
    wmax = max((len(str(r.worker)) for r in run.roots), default=4)
    umax = max((len(r.unit) for r in run.roots), default=1)
    told: set[str] = set()
    for r in run.roots:
        n = len(r.victims)
        if n == 0:
            took = "no other unit lost"
        elif singular == "rank":
            took = f"took down {n} rank{'s' if n != 1 else ''} ({_ids(r.victims)})"
        else:
            noun = run.noun if n != 1 else singular
            took = f"lost {n} {'queued ' if singular == 'shard' else ''}{noun} ({_ids(r.victims)})"
        worker = str(r.worker) if r.worker is not None else "?"
        yield f"  {worker:<{wmax}}  {singular} {r.unit:<{umax}}  {_hms(r.time)}  {r.family} -> {took}"
        pad = " " * (wmax + 4)
        if r.family not in told:
            told.add(r.family)
            if r.mitigation:
                yield f"{pad}do: {_gist(r.mitigation, 180)}"
            if r.probes:
                yield f"{pad}first check: " + "; ".join(_gist(x) for x in r.probes[:2])
            for note in r.notes:
                yield f"{pad}note: {note}"
            if r.family == "unknown" and r.evidence:
                yield f"{pad}evidence: {r.evidence[-1][:200]}"
        elif r.family == "unknown" and r.evidence:
            yield f"{pad}evidence: {r.evidence[-1][:200]}"
    for item in run.launcher:
        yield f"  launcher: {item}"
    if run.problems:
        yield "  problems:"
        for p in run.problems:
            yield f"    - {p}"
