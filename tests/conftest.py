"""Shared fixtures: the shipped ledger, scanners, and the shared contract folders."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from sigclass.ledger.pack import load_ledger
from sigclass.scan.scanner import Scanner

# the tests never read or write the user's own sigclass folders (trusted models, their own signatures)
os.environ.setdefault("SIGCLASS_DATA_DIR", tempfile.mkdtemp(prefix="sigclass-test-data-"))

REPO = Path(__file__).resolve().parent.parent
FILES = Path(__file__).resolve().parent / "files"


def _shared() -> Path:
    env = os.environ.get("SIGCLASS_SHARED")
    if env:
        return Path(env)
    return REPO.parent / "shared"


SHARED = _shared()
DEVSET = SHARED / "devset"
SAMPLE_RUNS = SHARED / "sample-runs"


@pytest.fixture(scope="session")
def ledger():
    return load_ledger(strict=True)


@pytest.fixture(scope="session")
def scanner(ledger):
    return Scanner(ledger, signatures="regex")


@pytest.fixture(scope="session")
def sigclass_exe() -> list[str]:
    """The console script of the environment under test: the one beside this Python first (scripts/test.sh
    and CI run pytest without activating the virtualenv, and a `sigclass` elsewhere on PATH is not the one
    being tested), then PATH's, else `python -m sigclass`."""
    own = Path(sys.executable).parent / "sigclass"
    if own.is_file() and os.access(own, os.X_OK):
        return [str(own)]
    exe = shutil.which("sigclass")
    return [exe] if exe else [sys.executable, "-m", "sigclass"]


def elastic_row(i: int, rank: int, pid: int, code: int | str, traceback: str, *, time: str = "2024-05-01_10:00:00",
                host: str = "node1", error_file: str = "<N/A>") -> str:
    """One failure of torchelastic's ChildFailedError table, as torch.distributed.elastic prints it."""
    return (f"[{i}]:\n  time      : {time}\n  host      : {host}\n  rank      : {rank} (local_rank: {rank})\n"
            f"  exitcode  : {code} (pid: {pid})\n  error_file: {error_file}\n  traceback : {traceback}\n")


def elastic_signal_row(i: int, rank: int, pid: int, sig: int, name: str, **kw: str) -> str:
    """A row of a failure ended by a signal (`exitcode : -9`, `Signal 9 (SIGKILL) received by PID N`)."""
    return elastic_row(i, rank, pid, -sig, f"Signal {sig} ({name}) received by PID {pid}", **kw)


def elastic_summary(root: str, failures: str = "", *, script: str = "train.py", width: int = 60) -> str:
    """torchelastic's ChildFailedError summary: the exception line, then the table (the other failures' rows, if
    any, then the root cause's row)."""
    out = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" + "=" * width + f"\n{script} FAILED\n"
           + "-" * width + "\n")
    if failures:
        out += "Failures:\n" + failures + "-" * width + "\n"
    return out + "Root Cause (first observed failure):\n" + root + "=" * width + "\n"


OOM = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 42, in <module>\n'
    "    loss = model(batch)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB\n"
)


def make_two_worker_run(run: Path) -> Path:
    """A two-worker run: worker_0 hits a CUDA OOM on shard 0 and loses shard 1 with it; worker_1 is fine."""
    (run / "worker_0").mkdir(parents=True)
    (run / "worker_1").mkdir()
    (run / "worker_0" / "shard_0.log").write_text(
        "2026-03-01 12:00:00,000 INFO shard 0 starting\n" + OOM + "2026-03-01 12:00:05,000 INFO shard 0 failed\n")
    (run / "worker_0" / "shard_1.log").write_text(
        "2026-03-01 12:01:00,000 INFO shard 1 starting\n"
        "2026-03-01 12:01:01,000 ERROR vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
        "See stack trace (above) for the root cause.\n")
    (run / "worker_1" / "shard_2.log").write_text(
        "2026-03-01 12:00:00,000 INFO shard 2 starting\n2026-03-01 12:30:00,000 INFO shard 2 done\n")
    return run
