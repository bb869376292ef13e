"""The fuzz targets of `fuzz_sigclass.py` for a bounded time; the slowest input's time is printed, not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SECONDS = float(os.environ.get("SIGCLASS_FUZZ_SECONDS", "20"))
HANG = SECONDS + 240  # start-up, the round in progress and a slow shared machine; only a hang goes past it


def test_fuzz_classify_text_and_files(tmp_path: Path, capsys):
    try:
        p = subprocess.run([sys.executable, str(HERE / "fuzz_sigclass.py"), "--seconds", str(SECONDS),
                            "--seed", "0"],
                           capture_output=True, text=True, timeout=HANG, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the fuzz run did not finish within {HANG:.0f} s: some input hangs")
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-8000:]
    figures = json.loads(p.stdout.strip().splitlines()[-1])
    with capsys.disabled():
        print(f"\nfuzz: {figures['inputs']} inputs in {figures['seconds']} s, slowest "
              f"{figures['slowest_seconds']} s ({figures['slowest_input'][:100]})")
    assert figures["inputs"] > 0
