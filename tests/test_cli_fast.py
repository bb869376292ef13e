"""`sigclass scan` with plain arguments runs without the Typer app, and answers as the Typer app does."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.cli.plain import plain_scan_args

OOM = ("Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in <module>\n    run()\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")


def test_plain_arguments_are_read_as_the_typer_app_reads_them():
    got = plain_scan_args(["scan", "a.log", "-f", "jsonl", "--ledger", "x", "b.log", "--ledger=y", "--signatures=regex",
                           "--engine", "re2", "--model", "m.joblib", "-"])
    assert got == {"paths": ["a.log", "b.log", "-"], "fmt": "jsonl", "ledger": [Path("x"), Path("y")],
                   "signatures": "regex", "engine": "re2", "model": Path("m.joblib")}
    assert plain_scan_args(["scan"]) == {"paths": None}


@pytest.mark.parametrize("argv", [
    ["scan", "--help"], ["scan", "-h"], ["scan", "-fjson", "a.log"], ["scan", "--format", "bogus", "a.log"],
    ["scan", "--format"], ["scan", "--", "-odd.log"], ["scan", "--signatures", "all"], ["scan", "--unknown", "1"],
    ["runs", "x"], ["ledger", "list"], ["--version"],
])
def test_anything_else_goes_to_the_typer_app(argv):
    assert plain_scan_args(argv) is None


def test_the_plain_path_knows_the_typer_apps_formats():
    from sigclass.cli.common import Fmt
    from sigclass.cli.plain import FORMATS

    assert FORMATS == tuple(f.value for f in Fmt)


def test_shell_completion_goes_to_the_typer_app(monkeypatch):
    monkeypatch.setenv("_SIGCLASS_COMPLETE", "complete_bash")
    assert plain_scan_args(["scan", "x.log"]) is None


@pytest.mark.parametrize("extra", [[], ["-f", "jsonl"], ["--format=json", "--signatures", "regex"], ["-q"],
                                   ["--color", "never"]])
def test_the_fast_path_prints_and_exits_as_the_typer_app(tmp_path, extra):
    log = tmp_path / "x.log"
    log.write_text("step 1\n" + OOM)
    missing = tmp_path / "missing.log"
    for paths in ([str(log)], [str(log), str(missing)]):
        env = {**os.environ, "COLUMNS": "100"}  # the text output wraps to the terminal's width
        fast = subprocess.run([sys.executable, "-m", "sigclass", "scan", *extra, *paths], capture_output=True, text=True,
                              timeout=120, env=env)
        slow = CliRunner().invoke(app, ["scan", *extra, *paths], env={"COLUMNS": "100"})
        assert fast.returncode == slow.exit_code, fast.stderr
        assert fast.stdout == slow.stdout
        assert ("cuda-oom" in fast.stdout) != ("-q" in extra)
        if len(paths) == 2:
            assert "missing.log: no such file" in fast.stderr and fast.returncode == 2


def test_a_small_scan_imports_no_heavy_library(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("step 1\n" + OOM)
    code = ("import sys, runpy; sys.argv = ['sigclass', 'scan', %r]\n"
            "try:\n    runpy.run_module('sigclass', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('typer', 'sklearn', 'numpy', 'polars', 'yaml', 'rich.console', 'joblib') if m in sys.modules]\n"
            "sys.stderr.write('HEAVY=%%s\\n' %% ','.join(heavy))\n") % str(log)
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)  # fills the caches
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "cuda-oom" in p.stdout
    assert "HEAVY=\n" in p.stderr, p.stderr
