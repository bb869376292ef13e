"""Shared fixtures: the shipped ledger, scanners, and the shared contract folders."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from sigclass.ledger import load_ledger
from sigclass.scan import Scanner

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
    """The installed console script (falls back to `python -m sigclass`)."""
    exe = shutil.which("sigclass")
    return [exe] if exe else [sys.executable, "-m", "sigclass"]
