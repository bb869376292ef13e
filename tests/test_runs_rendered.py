"""Runs rendered where they are assembled (`runs.rendered`): the same lines as from the whole run, in any process."""

from __future__ import annotations

import json
from pathlib import Path
import pickle
import shutil

import pytest
from conftest import FILES
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.outputs.colour import Paint
from sigclass.outputs.runs_text import RunsText, Totals
from sigclass.problems import ProblemLine
from sigclass.runs import parallel
from sigclass.runs.discover import plan_run
from sigclass.runs.rendered import Render, Rendered
from sigclass.text.safe import visible

RUNS = FILES / "runs"
FIXTURES = ["clean", "jsonl-events", "ray-job", "shard-per-file", "slurm-array", "torchrun", "torchrun-silent-rank",
            "worker-files"]
runner = CliRunner()


def _runs():
    return parallel.analyse([str(RUNS / name) for name in FIXTURES], n_jobs=1).runs


@pytest.mark.parametrize("colour", [False, True])
def test_text_is_what_runs_text_writes_for_the_whole_run(colour: bool):
    runs = _runs()
    whole = RunsText(Paint(colour), 72)
    want = [[visible(line) for line in whole.run(r)] for r in runs]
    got = [Render("text", colour, 72)(r) for r in runs]
    assert [list(g.lines) for g in got] == want
    assert any("\x1b[" in line for g in got for line in g.lines) == colour
    totals = Totals()
    for g in got:
        totals.add_counts(g.counts)
    assert totals.line() == whole.totals.line()
    assert totals.lost > 0 and totals.roots > 0  # the fixtures lose units: the counts are not all zero


def test_a_json_line_is_the_run_as_json_and_the_flags_are_the_runs():
    for r in _runs():
        got = Render("jsonl")(r)
        assert got.lines == (json.dumps(r.to_dict(), ensure_ascii=False),)
        assert (got.run, got.readable, got.failed, got.problems) == (r.run, r.readable, r.failed, tuple(r.problems))


def _builtin_only(value) -> bool:
    if isinstance(value, tuple):
        return all(_builtin_only(v) for v in value)
    return type(value) in (str, int, bool)


def test_rendered_runs_are_plain_tuples_of_strings_and_numbers():
    # what a worker sends back unpickles without building records (no Run, Unit, Finding or enum objects)
    r = next(r for r in _runs() if r.roots)
    r.problems = [ProblemLine("worker-1.log: binary data; skipped")]
    for fmt in ("text", "jsonl"):
        got = Render(fmt)(r)
        assert got.problems == ("worker-1.log: binary data; skipped",)
        assert isinstance(got, tuple) and _builtin_only(tuple(got))
        assert pickle.loads(pickle.dumps(got)) == got
        assert b"sigclass.records" not in pickle.dumps(tuple(got))
    with pytest.raises(ValueError, match="csv"):
        Render("csv")(r)


def test_workers_render_the_same_lines_as_one_process(tmp_path: Path):
    dirs = []
    for k in range(2):  # enough runs for tasks of whole runs on two workers
        for name in FIXTURES:
            dirs.append(tmp_path / f"{name}-{k}")
            shutil.copytree(RUNS / name, dirs[-1])
    plans = [plan_run(str(d)) for d in dirs]
    assert len(plans) >= parallel.RUN_TASKS_MIN_RUNS_PER_WORKER * 2
    render = Render("text", False, 80)
    one = list(parallel.iter_runs(plans, n_jobs=1, render=render))
    two = list(parallel.iter_runs(plans, n_jobs=2, render=render))
    few = list(parallel.iter_runs(plans[:3], n_jobs=2, render=render))  # few runs: files are the tasks
    assert all(isinstance(r, Rendered) for r in one + two + few)
    assert two == one and few == one[:3]


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_the_command_prints_the_same_with_one_or_two_processes(tmp_path: Path, fmt: str):
    dirs = []
    for k in range(2):
        for name in FIXTURES:
            dirs.append(str(tmp_path / f"{name}-{k}"))
            shutil.copytree(RUNS / name, dirs[-1])
    one = runner.invoke(app, ["runs", "--format", fmt, "-j", "1", *dirs])
    two = runner.invoke(app, ["runs", "--format", fmt, "-j", "2", *dirs])
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout
    runs = parallel.analyse(dirs, n_jobs=1).runs
    if fmt == "jsonl":
        assert one.stdout.splitlines() == [json.dumps(r.to_dict(), ensure_ascii=False) for r in runs]
    else:
        total = RunsText()
        for r in runs:
            total.totals.add(r)
        assert one.stdout.rstrip("\n").splitlines()[-1] == total.totals.line()
