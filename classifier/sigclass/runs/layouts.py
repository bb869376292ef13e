"""Run layouts: how a log's path and line prefixes name its unit and worker (the contract is runs.md).

Layouts are recognised without configuration: one file per shard grouped by
worker folders; one file per worker with shard markers inside; one combined
torchrun / MPI / Ray log whose line prefixes name the ranks; Slurm array files
(`slurm-<job>_<task>.out`); JSON-lines events with worker and unit fields.
A `Layout` adds the user's own unit / worker patterns.

This module is the one place that reads layouts: `runs`, `suggest` and the
MCP server's run-directory check all ask it which files are log sources
(`is_source`), which folder is a run (`run_of`) and what a path names
(`identify`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
import re

from sigclass.errors import InputError
from sigclass.scan.reader import COMPRESSED, is_log_name, LOG_SUFFIXES
from sigclass.text.workers import number_id


# Worker folders / files: worker_3, worker-3, gpu3, rank3, node-a, host-7.
WORKER_NAME = re.compile(r"(?i)^(?:worker|gpu|rank|node|host)(?:[_-]?\d+|[_-][a-z0-9]+)$")

# Shard files: shard_17, shard-17, shard17, part-00017.
SHARD_NAME = re.compile(r"(?i)^(?:shard|part)[_-]?(\d+)$")

SLURM_NAME = re.compile(r"^slurm-(\d+)_(\d+)$")


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


@dataclass(frozen=True, slots=True)
class Identity:
    """What a source's path says: `unit` (one file per unit), `slurm` (array task), `worker` or `none`."""

    kind: str
    unit: str | None
    worker: str | None


def is_source(name: str) -> bool:
    """A file of this name under a run directory is a log source (runs.md, "Log sources")."""
    return is_log_name(name)


def run_of(rel: str) -> str | None:
    """For a source at `rel` under a folder that holds one run or several: the top folder that is a run of its own.

    None when the source belongs to the folder itself: it sits at the top, or
    under a worker folder (`DIR/worker_3/shard_1.log` is a run's layout).
    """
    parts = rel.split("/")
    if len(parts) == 1 or WORKER_NAME.match(parts[0]):
        return None
    return parts[0]


def file_stem(name: str) -> str:
    for suf in COMPRESSED:
        if name.endswith(suf):
            name = name[: -len(suf)]
            break
    for suf in LOG_SUFFIXES:
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


def is_jsonl(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    for suf in COMPRESSED:
        if name.endswith(suf):
            name = name[: -len(suf)]
    return name.endswith(".jsonl")


def norm_id(raw: str) -> str:
    """A unit or worker id: numbers lose their leading zeros."""
    raw = raw.strip()
    return number_id(raw) if raw.isascii() and raw.isdigit() else raw


def _group(m: re.Match[str], name: str) -> str:
    gd = m.groupdict()
    if gd.get(name):
        return gd[name]
    for g in m.groups():
        if g:
            return g
    return m.group(0)


@lru_cache(maxsize=4096)  # a fleet repeats the same relative paths run after run (`gpu3/shard_17.log`)
def identify(rel: str, unit_rx: re.Pattern[str] | None = None, worker_rx: re.Pattern[str] | None = None) -> Identity:
    parts = rel.split("/")
    stem = file_stem(parts[-1])
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
