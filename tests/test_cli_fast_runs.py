"""`sigclass runs` with plain arguments runs without the Typer app (cli/runsplain.py), and answers as the Typer app
does: the same output, messages and exit status."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

from conftest import FILES
import pytest
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.cli.runsplain import plain_runs_args

RUNS = FILES / "runs"


def test_plain_arguments_are_read_as_the_typer_app_reads_them():
    got = plain_runs_args(["runs", "a", "-j1", "-fjsonl", "b", "--out=x.txt", "-q", "--ledger", "l1", "--ledger=l2",
                           "--signatures", "regex", "--color", "never", "--dask", "tcp://h:1", "--unit-pattern",
                           r"u(\d+)", r"--worker-pattern=w(\d+)", "--model", "m.joblib"])
    assert got == {"dirs": ["a", "b"], "jobs": 1, "fmt": "jsonl", "out": Path("x.txt"), "quiet": True,
                   "ledger": [Path("l1"), Path("l2")], "signatures": "regex", "color": "never", "dask": "tcp://h:1",
                   "unit_pattern": r"u(\d+)", "worker_pattern": r"w(\d+)", "model": Path("m.joblib")}
    assert plain_runs_args(["runs", "a", "-j", "-1", "-o", "y"]) == {"dirs": ["a"], "jobs": -1, "out": Path("y")}


@pytest.mark.parametrize("argv", [
    ["runs"], ["runs", "--help"], ["runs", "-h"], ["runs", "a", "-f=json"], ["runs", "a", "--format", "xml"],
    ["runs", "a", "-j", "two"], ["runs", "a", "-j"], ["runs", "a", "--history", "h"], ["runs", "--", "-a"],
    ["runs", "a", "-qj1"], ["runs", "a", "-j", "1", "-j", "2"], ["runs", "a", "--signatures", "all"],
    ["runs", "a", "--unknown", "1"], ["scan", "a"], ["ledger", "list"], [],
])
def test_anything_else_goes_to_the_typer_app(argv):
    assert plain_runs_args(argv) is None


def test_shell_completion_goes_to_the_typer_app(monkeypatch):
    monkeypatch.setenv("_SIGCLASS_COMPLETE", "complete_bash")
    assert plain_runs_args(["runs", "a"]) is None


def test_the_plain_path_knows_the_typer_apps_formats():
    from sigclass.cli.plain import COLOUR_MODES, SIGNATURE_MODES
    from sigclass.cli.runs import RunsFmt
    from sigclass.cli.runsplain import RUNS_FORMATS
    from sigclass.vocab import ColourMode, SignatureMode

    assert RUNS_FORMATS == tuple(f.value for f in RunsFmt)
    assert SIGNATURE_MODES == tuple(m.value for m in SignatureMode) and COLOUR_MODES == tuple(m.value for m in ColourMode)


@pytest.mark.parametrize("extra", [["-j", "1"], ["-j1", "-f", "jsonl"], ["--format=json", "-j", "2"], ["-q", "-j", "1"],
                                   ["-f", "csv", "-j", "1"], ["--color", "never", "--signatures", "regex", "-j", "1"]])
def test_the_fast_path_prints_and_exits_as_the_typer_app(tmp_path, extra):
    runs = [str(RUNS / "worker-files"), str(RUNS / "clean"), str(tmp_path / "missing")]
    env = {**os.environ, "COLUMNS": "100"}  # the text output wraps to the terminal's width
    fast = subprocess.run([sys.executable, "-m", "sigclass", "runs", *extra, *runs], capture_output=True, text=True,
                          timeout=300, env=env)
    slow = CliRunner().invoke(app, ["runs", *extra, *runs], env={"COLUMNS": "100"})
    assert fast.returncode == slow.exit_code == 2, fast.stderr  # the missing run directory
    assert fast.stdout == slow.stdout
    assert ("segfault" in fast.stdout) != ("-q" in extra)
    assert fast.stderr == slow.stderr
    assert ("missing: no such directory" in fast.stdout + fast.stderr) != ("-q" in extra)
    assert "Traceback" not in fast.stderr


def test_a_plain_runs_command_imports_no_typer():
    code = ("import sys, runpy; sys.argv = ['sigclass', 'runs', '-j', '1', '-f', 'jsonl', %r]\n"
            "try:\n    runpy.run_module('sigclass', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('typer', 'pydantic', 'sklearn', 'polars', 'rich.console') if m in sys.modules]\n"
            "sys.stderr.write('HEAVY=%%s\\n' %% ','.join(heavy))\n") % str(RUNS / "worker-files")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert '"segfault"' in p.stdout
    assert "HEAVY=\n" in p.stderr, p.stderr
