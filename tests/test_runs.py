"""`sigclass runs`: layouts, outcomes, cascades, systematic faults, bad inputs, formats, parallelism.

Fixture runs live in tests/files/runs/ (small, hand-made); broken inputs are
made in tmp_path because git cannot hold FIFOs, dangling links or loops. The
score against ../shared/sample-runs/truth.json runs when that folder exists.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
import shutil
import sys

import polars as pl
import pytest
from conftest import FILES, SAMPLE_RUNS
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.outputs import tables
from sigclass.records import Batch, Run
from sigclass.runs import parallel
from sigclass.runs.discover import plan_run
from sigclass.runs.layouts import Layout
from sigclass.runs.parallel import analyse_plans, dask_backend, RUN_TASKS_MIN_RUNS_PER_WORKER

RUNS = FILES / "runs"
FIXTURES = ["clean", "jsonl-events", "ray-job", "shard-per-file", "slurm-array", "torchrun", "torchrun-silent-rank",
            "worker-files"]
runner = CliRunner()


def analyse(*dirs: Path | str, n_jobs: int = 1, **kw) -> Batch:
    return parallel.analyse([str(d) for d in dirs], n_jobs=n_jobs, **kw)


def table(run: Run) -> dict[str, tuple]:
    """unit -> (worker, status, family, role, root)"""
    return {u.unit: (u.worker, u.status, u.family, u.role, u.root) for u in run.units}


def one(path: Path | str, **kw) -> Run:
    return analyse(path, **kw).runs[0]


# --------------------------------------------------------------------------- the scanner's unit markers


@pytest.mark.parametrize("line, expected", [
    ("[shard 17] starting: 10 prompts", ("17", "start")),
    ("2026-03-01T10:00:00.000Z INFO [shard 0] done in 300s", ("0", "ok")),
    ("[2026-02-14 11:48:09,594][gen][INFO] - Starting shard_3 (1024 prompts)", ("3", "start")),
    ("[2026-02-14 11:52:16,635][gen][INFO] - shard_3 completed: 1024 records", ("3", "ok")),
    ("2025-03-08 11:31:22,755 INFO [dispatch] shard=4 status=running 512 prompts", ("4", "start")),
    ("2025-03-08 11:31:39,760 ERROR [dispatch] shard=4 status=error exc=RuntimeError", ("4", "failed")),
    ("2026-05-17T22:14:21.885Z INFO    shard_runner: shard-6: begin (640 prompts)", ("6", "start")),
    ("[shard 110] error: SIGSEGV, exit code 139", ("110", "failed")),
    ("INFO [shard 5] loading 2048 prompts", None),
    ("ERROR [shard 5] retrying one request", None),
    ("Loading safetensors checkpoint shards: 100% Completed | 4/4", None),
])
def test_scanner_reads_every_marker_form(scanner, line: str, expected):
    got = [(m.unit, m.kind) for m in scanner.scan_text(line + "\n").markers]
    assert got == ([expected] if expected else [])


def test_a_small_file_is_scanned_without_a_helper_thread(scanner, tmp_path: Path, monkeypatch):
    # a run is thousands of small files: a read-ahead thread per file would double the cost of each
    import threading

    def no_thread(*a, **k):
        raise AssertionError("a one-block file started a helper thread")

    monkeypatch.setattr(threading, "Thread", no_thread)
    f = tmp_path / "shard_1.log"
    f.write_text("[shard 1] starting\n/bin/sh: line 1: 7 Segmentation fault      (core dumped) python x.py\n")
    res = scanner.scan(str(f))
    assert [x.family for x in res.findings] == ["segfault"] and [m.kind for m in res.markers] == ["start"]


# --------------------------------------------------------------------------- layouts and outcomes


def test_layout1_one_file_per_shard_grouped_by_worker():
    run = one(RUNS / "shard-per-file")
    assert table(run) == {
        "0": ("gpu0", "ok", None, None, None),
        "1": ("gpu1", "ok", None, None, None),
        "2": ("gpu0", "failed", "cuda-oom", "root", None),
        "3": ("gpu1", "ok", None, None, None),
        "4": ("gpu0", "incomplete", None, "cascade", "2"),  # queued behind the crash, printed no error
        "5": ("gpu1", "incomplete", None, None, None),  # part-00005.log: still running, nothing failed
        "6": ("gpu2", "ok", None, None, None),  # no worker folder: `worker=gpu2` in the log says it
    }
    assert [(r.unit, r.worker, r.family, r.victims) for r in run.roots] == [("2", "gpu0", "cuda-oom", ["4"])]
    assert run.systematic == [] and run.problems == []
    assert run.summary == "3/7 shards lost: 1 root fault of cuda-oom, 1 cascade victim, 1 incomplete with no failure seen"


def test_layout2_one_file_per_worker_with_markers_and_a_systematic_fault():
    run = one(RUNS / "worker-files")
    assert table(run) == {
        "3": ("worker-0", "ok", None, None, None),
        "4": ("worker-0", "failed", "segfault", "root", None),
        "7": ("worker-0", "failed", "vllm-engine-dead", "cascade", "4"),  # its own family, still a victim
        "8": ("worker-0", "incomplete", None, "cascade", "4"),
        "5": ("worker-1", "ok", None, None, None),
        "6": ("worker-1", "failed", "segfault", "root", None),
        "9": ("worker-1", "ok", None, None, None),
    }
    assert [s.to_dict() for s in run.systematic] == [{"family": "segfault", "workers": 2}]
    assert "2 root faults of segfault on 2 of 2 workers (systematic)" in run.summary


def test_layout3_torchrun_distributed_cascade_and_a_silent_rank():
    run = one(RUNS / "torchrun")
    assert table(run) == {
        "0": ("0", "failed", "nccl-watchdog-timeout", "cascade", "2"),
        "1": ("1", "failed", "nccl-watchdog-timeout", "cascade", "2"),
        "2": ("2", "failed", "nccl-error", "root", None),
        "3": ("3", "incomplete", None, "cascade", "2"),  # hung behind the root, printed nothing
    }
    assert run.noun == "ranks" and run.systematic == []
    assert run.roots[0].victims == ["0", "1", "3"]


@pytest.mark.parametrize("prefix", ["[default{r}]:", "{r}: "])
def test_layout3_other_rank_prefixes(tmp_path: Path, prefix: str):
    import re

    d = tmp_path / "job"
    d.mkdir()
    text = (RUNS / "torchrun" / "torchrun.out").read_text()
    (d / "torchrun.out").write_text(re.sub(r"^\[rank(\d+)\]:", lambda m: prefix.format(r=m.group(1)), text, flags=re.M))
    assert table(one(d)) == table(one(RUNS / "torchrun"))


def test_layout3_a_rank_killed_outright_is_named_by_the_launcher_summary():
    # rank 1 printed nothing; torchrun's `Root Cause ... rank : 1 ... exitcode : -11` says what happened to it
    run = one(RUNS / "torchrun-silent-rank")
    assert table(run) == {
        "0": ("0", "failed", "process-killed-by-signal", "cascade", "1"),
        "1": ("1", "failed", "segfault", "root", None),
        "2": ("2", "failed", "process-killed-by-signal", "cascade", "1"),
        "3": ("3", "failed", "process-killed-by-signal", "cascade", "1"),
    }


def test_layout3_only_secondary_errors_make_the_earliest_one_the_root(tmp_path: Path):
    d = tmp_path / "job"
    d.mkdir()
    wd = ("[rank{r}]:[E303 08:42:0{r}.100000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 1800089 milliseconds before timing out.\n")
    (d / "train.log").write_text("".join(f"[rank{r}]:2026-03-03T08:00:0{r}Z INFO start\n" for r in range(3))
                                 + wd.format(r=2) + wd.format(r=1))
    run = one(d)
    assert table(run) == {
        "0": ("0", "incomplete", None, "cascade", "1"),
        "1": ("1", "failed", "nccl-watchdog-timeout", "root", None),
        "2": ("2", "failed", "nccl-watchdog-timeout", "cascade", "1"),
    }
    assert run.systematic == []


def test_layout3_ray_pids_are_workers_and_units():
    run = one(RUNS / "ray-job")
    assert table(run) == {
        "4242": ("4242", "failed", "cuda-oom", "root", None),
        "4243": ("4243", "failed", "ray-actor-died", "cascade", "4242"),
    }


# vLLM's tensor-parallel workers under Ray: each actor's lines carry its pid, and torch's rank prefix after it
# on the lines torch prints; the pid-only lines are the same worker as its rank's
RAY_TP_RANKED = """\
(RayWorkerWrapper pid=2001) INFO 03-01 08:00:05 [worker.py:50] Loading model weights
(RayWorkerWrapper pid=2002) INFO 03-01 08:00:05 [worker.py:50] Loading model weights
(RayWorkerWrapper pid=2001) [rank0]: INFO 03-01 08:00:06 starting
(RayWorkerWrapper pid=2002) [rank1]: INFO 03-01 08:00:06 starting
(RayWorkerWrapper pid=2002) Traceback (most recent call last):
(RayWorkerWrapper pid=2002)   File "/app/worker.py", line 10, in execute_model
(RayWorkerWrapper pid=2002)     out = self.model(x)
(RayWorkerWrapper pid=2002) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.10 GiB
(RayWorkerWrapper pid=2001) [rank0]:[E301 08:10:05.000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
"""


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_ray_actor_that_prints_a_rank_prefix_is_one_unit_with_that_rank(tmp_path, n_jobs):
    d = tmp_path / "tp-job"
    d.mkdir()
    (d / "combined.log").write_text(RAY_TP_RANKED)
    run = one(d, n_jobs=n_jobs)
    # two workers (not ranks 0 and 1 plus pids 2001 and 2002): the OOM of pid 2002's own lines is rank 1's
    assert table(run) == {
        "0": ("0", "failed", "nccl-watchdog-timeout", "cascade", "1"),
        "1": ("1", "failed", "cuda-oom", "root", None),
    }


def test_layout3_slurm_array_tasks_are_independent():
    run = one(RUNS / "slurm-array")
    assert table(run) == {
        "0": ("0", "ok", None, None, None),
        "1": ("1", "failed", "import-error", "root", None),
        "2": ("2", "incomplete", None, None, None),
    }
    assert run.noun == "tasks"


def test_layout4_jsonl_events_with_worker_and_unit_fields():
    run = one(RUNS / "jsonl-events")
    assert table(run) == {
        "10": ("0", "ok", None, None, None),
        "11": ("0", "failed", "cuda-oom", "root", None),
        "12": ("0", "failed", "vllm-engine-dead", "cascade", "11"),
        "20": ("1", "ok", None, None, None),
        "21": ("1", "ok", None, None, None),
    }
    assert next(u for u in run.units if u.unit == "11").time == "2026-03-05T08:42:30.000Z"  # epoch seconds


def test_compressed_sources_give_the_same_answer(tmp_path: Path):
    import zstandard

    d = tmp_path / "worker-files"
    shutil.copytree(RUNS / "worker-files", d)
    w0, w1 = d / "worker-0.log", d / "worker-1.log"
    (d / "worker-0.log.gz").write_bytes(gzip.compress(w0.read_bytes()))
    (d / "worker-1.log.zst").write_bytes(zstandard.ZstdCompressor().compress(w1.read_bytes()))
    w0.unlink()
    w1.unlink()
    assert table(one(d)) == table(one(RUNS / "worker-files"))


def test_custom_unit_and_worker_patterns():
    layout = Layout(unit_pattern=r"chunk(?P<unit>\d+)", worker_pattern=r"^(box\d+)/")
    run = one(RUNS / "custom", layout=layout)
    assert table(run) == {
        "3": ("box7", "failed", "import-error", "root", None),
        "4": ("box8", "ok", None, None, None),
    }


def test_clean_run():
    run = one(RUNS / "clean")
    assert {u.status for u in run.units} == {"ok"} and not run.failed
    assert run.summary == "all 2 shards ok"


def test_independent_faults_on_one_worker_are_two_roots_and_not_systematic(tmp_path: Path):
    d = tmp_path / "run"
    (d / "gpu0").mkdir(parents=True)
    seg = "/bin/sh: line 1: 77 Segmentation fault      (core dumped) python gen.py\n"
    for n, (t, body) in enumerate([("10:00", seg), ("10:10", ""), ("10:20", seg), ("10:30", "")]):
        end = "failed: SIGSEGV" if body else "done"
        (d / "gpu0" / f"shard_{n}.log").write_text(
            f"2026-03-01T{t}:00Z [shard {n}] starting\n{body}2026-03-01T{t}:30Z [shard {n}] {end}\n")
    run = one(d)
    assert table(run) == {
        "0": ("gpu0", "failed", "segfault", "root", None),
        "1": ("gpu0", "ok", None, None, None),  # the blast radius of 0 ends here
        "2": ("gpu0", "failed", "segfault", "root", None),
        "3": ("gpu0", "ok", None, None, None),
    }
    assert run.systematic == []


def test_a_failure_marker_without_an_error_is_an_unknown_failure(tmp_path: Path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "worker-0.log").write_text("[shard 1] starting\n[shard 1] failed: exit code 3\n"
                                    "[shard 2] starting\n[shard 2] aborted by the scheduler\n")
    run = one(d)
    u1 = next(u for u in run.units if u.unit == "1")
    assert (u1.status, u1.family, u1.role) == ("failed", "unknown", "root")
    assert u1.fingerprint and u1.evidence == ["[shard 1] failed: exit code 3"]
    assert table(run)["2"] == ("worker-0", "failed", "unknown", "cascade", "1")


def test_a_driver_log_and_a_worker_engine_log_fold_into_the_units(tmp_path: Path):
    d = tmp_path / "run"
    (d / "gpu0").mkdir(parents=True)
    (d / "gpu0" / "shard_1.log").write_text("2026-03-01T10:00:00Z [shard 1] starting\n2026-03-01T10:05:00Z [shard 1] done\n")
    (d / "gpu0" / "shard_2.log").write_text(
        "2026-03-01T10:05:30Z [shard 2] starting\n2026-03-01T10:07:00Z ERROR engine gone\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n")
    # the worker's own engine log: no shard named, the crash happened while shard 2 ran
    (d / "gpu0" / "engine.log").write_text(
        "2026-03-01T10:00:00Z INFO engine up\n2026-03-01T10:06:40Z ERROR step failed\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    # a driver log that only marks shards, without workers
    (d / "driver.log").write_text("2026-03-01T10:07:01Z [shard 2] failed\n2026-03-01T10:05:00Z [shard 1] done\n")
    run = one(d)
    assert table(run) == {
        "1": ("gpu0", "ok", None, None, None),
        "2": ("gpu0", "failed", "cuda-oom", "root", None),
    }


def test_side_files_do_not_become_units():
    # README.md is not a log; a log with nothing in it beside real units is not a unit either
    run = one(RUNS / "shard-per-file")
    assert all(u.unit.isdigit() for u in run.units)


# --------------------------------------------------------------------------- bad input


@pytest.fixture()
def broken_run(tmp_path: Path) -> Path:
    d = tmp_path / "broken"
    d.mkdir()
    shutil.copy(RUNS / "shard-per-file" / "gpu1" / "shard_1.log", d / "shard_1.log")
    (d / "empty.log").write_bytes(b"")
    (d / "binary.log").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40)
    body = "".join(f"2026-03-01 INFO step {i} loss {i * 7919 % 10007}\n" for i in range(5000)).encode()
    packed = gzip.compress(body)
    (d / "cut.log.gz").write_bytes(packed[: len(packed) // 2])
    os.symlink("does-not-exist.log", d / "dangling.log")
    os.symlink("loop.log", d / "loop.log")
    os.symlink(".", d / "again")  # a directory link back to its parent
    os.mkfifo(d / "pipe.log")  # must never be opened: nothing writes to it
    (d / "notes.log").mkdir()  # a directory named like a log: walked, not read
    (d / "notes.log" / "shard_2.log").write_text("[shard 2] starting\n[shard 2] done\n")
    return d


def test_bad_inputs_are_problems_and_the_batch_carries_on(broken_run: Path):
    run = one(broken_run)
    assert table(run) == {"1": (None, "ok", None, None, None), "2": (None, "ok", None, None, None)}
    text = "\n".join(run.problems)
    for name, why in [("empty.log", "empty"), ("binary.log", "binary"), ("cut.log.gz", "truncated"),
                      ("dangling.log", "dangling symlink"), ("loop.log", "symlink loop"), ("again", "symlink loop"),
                      ("pipe.log", "FIFO")]:
        assert any(p.startswith(name) and why in p for p in run.problems), f"{name}: no '{why}' problem in\n{text}"
    assert run.readable
    res = runner.invoke(app, ["runs", str(broken_run)])
    assert res.exit_code == 0, res.output  # problems alone are not failures
    assert "Traceback" not in res.output


def test_a_file_that_vanishes_mid_batch(tmp_path: Path):
    d = tmp_path / "run"
    shutil.copytree(RUNS / "worker-files", d)
    plan = plan_run(str(d))
    assert plan.sources == ("worker-0.log", "worker-1.log")
    (d / "worker-0.log").unlink()
    (d / "worker-1.log").rename(d / "w1.tmp")
    os.mkfifo(d / "worker-1.log")  # replaced by a FIFO after discovery: still never opened
    run = analyse_plans([plan], n_jobs=1).runs[0]
    assert any(p.startswith("worker-0.log: vanished") for p in run.problems), run.problems
    assert any(p.startswith("worker-1.log") and "FIFO" in p for p in run.problems), run.problems
    assert run.units == [] and not run.readable


def test_a_run_directory_with_no_logs(tmp_path: Path):
    d = tmp_path / "empty-run"
    d.mkdir()
    (d / "README.md").write_text("nothing here\n")
    run = one(d)
    assert run.units == [] and not run.readable
    assert run.problems and "no log files" in run.problems[0]
    res = runner.invoke(app, ["runs", str(d), str(RUNS / "clean")])
    assert res.exit_code == 2, res.output
    assert "empty-run: nothing could be read" in res.stdout and "clean: all 2 shards ok" in res.stdout


def test_missing_or_non_directory_inputs_exit_2_without_a_traceback(tmp_path: Path):
    f = tmp_path / "x.log"
    f.write_text("hello\n")
    for arg in (str(tmp_path / "nope"), str(f)):
        res = runner.invoke(app, ["runs", "--format", "jsonl", arg])
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output
        assert json.loads(res.stdout)["problems"]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("kind", ["missing", "corrupt"])
def test_a_bad_model_is_named_and_the_batch_carries_on_with_regex(tmp_path: Path, jobs: str, kind: str):
    """A --model that cannot be used loses no finding: one line names it, the runs are read with regex signatures."""
    model = tmp_path / "m.joblib"
    if kind == "corrupt":
        model.write_bytes(b"\x80\x04junk that is no model" * 50)
    good = runner.invoke(app, ["runs", "-j", jobs, "-f", "json", "--signatures", "regex", str(RUNS / "torchrun")])
    res = runner.invoke(app, ["runs", "-j", jobs, "-f", "json", "--model", str(model), str(RUNS / "torchrun")])
    assert res.exit_code == 2, res.output
    assert "m.joblib" in res.stderr and "regex signatures only" in res.stderr and "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert json.loads(res.stdout)["runs"] == json.loads(good.stdout)["runs"]
    learned_only = runner.invoke(app, ["runs", "-j", jobs, "--signatures", "learned", "--model", str(model),
                                       str(RUNS / "torchrun")])
    assert learned_only.exit_code == 2 and "m.joblib" in learned_only.output and not learned_only.stdout.strip()


def test_bad_options_exit_2_with_one_line(tmp_path: Path):
    res = runner.invoke(app, ["runs", "--unit-pattern", "chunk(", str(RUNS / "clean")])
    assert res.exit_code == 2 and "not a valid regular expression" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["runs", "--format", "parquet", str(RUNS / "clean")])
    assert res.exit_code == 2 and "--out" in res.output
    res = runner.invoke(app, ["runs", "-j", "0", str(RUNS / "clean")])
    assert res.exit_code == 2


# --------------------------------------------------------------------------- parallelism


def test_the_answer_is_the_same_for_any_number_of_processes(tmp_path: Path):
    # few runs: the tasks are files; many runs: the tasks are whole runs
    few = [RUNS / name for name in FIXTURES[:5]]
    many = []
    for k in range(3):
        for name in FIXTURES:
            many.append(tmp_path / f"{name}-{k}")
            shutil.copytree(RUNS / name, many[-1])
    assert len(many) >= RUN_TASKS_MIN_RUNS_PER_WORKER * 2 > len(few)
    for dirs in (few, many):
        one_proc = [r.to_dict() for r in analyse(*dirs, n_jobs=1).runs]
        assert [r.to_dict() for r in analyse(*dirs, n_jobs=2).runs] == one_proc


def test_units_without_timestamps_keep_their_order(tmp_path: Path):
    d = tmp_path / "run"
    (d / "worker_1").mkdir(parents=True)
    seg = "/bin/sh: line 1: 77 Segmentation fault      (core dumped) python gen.py\n"
    (d / "worker_1" / "shard_2.log").write_text("[shard 2] starting\n" + seg)
    (d / "worker_1" / "shard_10.log").write_text("[shard 10] starting\n")  # after 2 by number, not by name
    (d / "worker-0.log").write_text("[shard 9] starting\n" + seg + "[shard 1] starting\n")  # after 9 by line
    assert table(one(d)) == {
        "1": ("worker-0", "incomplete", None, "cascade", "9"),
        "2": ("worker_1", "failed", "segfault", "root", None),
        "9": ("worker-0", "failed", "segfault", "root", None),
        "10": ("worker_1", "incomplete", None, "cascade", "2"),
    }


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_dask_cluster_gives_the_local_answer():
    distributed = pytest.importorskip("distributed")
    dirs = [str(RUNS / name) for name in FIXTURES]
    local = [r.to_dict() for r in analyse(*dirs, n_jobs=1).runs]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0") as cluster:
        with dask_backend(cluster.scheduler_address):
            remote = [r.to_dict() for r in analyse(*dirs, n_jobs=-1).runs]
    assert remote == local


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_dask_unreachable_scheduler_is_a_clear_error(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(dask_backend, "TIMEOUT", 1.0)
    res = runner.invoke(app, ["runs", "--dask", "tcp://127.0.0.1:9", str(RUNS / "clean")])
    assert res.exit_code == 2, res.output
    assert "cannot reach the dask scheduler at tcp://127.0.0.1:9" in res.output and "Traceback" not in res.output


def test_dask_without_the_extra_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` now raises ImportError
    res = runner.invoke(app, ["runs", "--dask", "tcp://127.0.0.1:8786", str(RUNS / "clean")])
    assert res.exit_code == 2, res.output
    assert "pip install 'sigclass[dask]'" in res.output and "Traceback" not in res.output


def test_no_progress_bar_on_a_pipe():
    from sigclass.cli.runs import _progress

    with _progress(10_000) as bar:  # stderr is not a terminal under pytest
        assert bar is None


# --------------------------------------------------------------------------- formats


def test_text_format():
    res = runner.invoke(app, ["runs", "-j", "1", str(RUNS / "worker-files"), str(RUNS / "clean")])
    assert res.exit_code == 1, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == ("worker-files: 4/7 shards lost: 2 root faults of segfault on 2 of 2 workers (systematic), "
                        "2 cascade victims")
    assert lines[1] == "  systematic: segfault struck 2 of 2 workers separately"
    assert lines[2].split() == ["WORKER", "SHARD", "TIME", "ROOT", "FAULT", "LOST"]
    assert lines[3].split() == ["worker-1", "6", "09:02:01", "segfault", "no", "other", "unit", "lost"]
    assert any(ln.split()[:3] == ["worker-0", "4", "09:04:00"] and ln.endswith("lost 2 queued shards (7, 8)")
               for ln in lines)
    assert any(ln.strip().startswith("do: ") for ln in lines) and any(ln.strip().startswith("check: ") for ln in lines)
    assert "  re-queue 4 shards (4, 6-8) after applying the segfault fix (its do: above)" in lines
    assert "clean: all 2 shards ok" in lines
    assert lines[-1] == "total: 2 runs, 4/9 units lost, 2 root faults"


def test_text_notes_superseded_explanations(tmp_path: Path):
    d = tmp_path / "hang"
    d.mkdir()
    warn = ("WARNING 02-14 12:{:02d}:48 [shm_broadcast.py:466] No available shared memory broadcast block found in "
            "60 seconds. This typically happens when some processes are hanging.\n")
    (d / "worker-0.log").write_text("[2026-02-14 11:52:18,754][gen][INFO] - Starting shard_5 (2048 prompts)\n"
                                    + "".join(warn.format(m) for m in range(0, 6)))
    res = runner.invoke(app, ["runs", "-j", "1", str(d)])
    assert "vllm-engine-hang" in res.stdout
    text = " ".join(res.stdout.split())  # wrapped between words
    assert "try first: tokenizer-reload-per-call, before this family's fix: For the stall where" in text
    assert "the confirmed cause was the client reloading the tokenizer for every prompt;" in text
    assert "re-queue 1 shard (5) after applying tokenizer-reload-per-call's fix" in text


def test_jsonl_format_one_object_per_run():
    res = runner.invoke(app, ["runs", "-f", "jsonl", "-j", "1", str(RUNS / "torchrun"), str(RUNS / "clean")])
    assert res.exit_code == 1, res.output
    objs = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert [o["run"] for o in objs] == ["torchrun", "clean"]
    for o in objs:
        assert {"run", "units", "roots", "systematic", "problems", "summary"} <= set(o)
        for u in o["units"]:
            assert {"unit", "worker", "status", "family", "role", "root", "time", "fingerprint"} <= set(u)
    assert objs[0]["roots"][0]["unit"] == "2" and objs[0]["roots"][0]["victims"] == ["0", "1", "3"]


def test_out_writes_the_same_text_to_a_file(tmp_path: Path):
    args = ["runs", "-f", "jsonl", "-j", "1", str(RUNS / "torchrun")]
    to_stdout = runner.invoke(app, args).stdout
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "runs.jsonl")])
    assert res.exit_code == 1 and res.stdout == ""
    assert (tmp_path / "runs.jsonl").read_text() == to_stdout


def test_json_format_one_document():
    res = runner.invoke(app, ["runs", "-f", "json", "-j", "1", str(RUNS / "clean")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [r["run"] for r in doc["runs"]] == ["clean"]
    assert doc["summary"]["units"] == 2 and doc["summary"]["failed"] == 0


def test_units_table_schema_and_rows():
    batch = analyse(RUNS / "slurm-array")
    got = tables.units_table(batch.runs)
    assert got.schema == tables.UNITS_SCHEMA
    u = {x.unit: x for x in batch.runs[0].units}
    expected = pl.DataFrame({
        "run": ["slurm-array"] * 3,
        "unit": ["0", "1", "2"],
        "worker": ["0", "1", "2"],
        "status": ["ok", "failed", "incomplete"],
        "family": [None, "import-error", None],
        "role": [None, "root", None],
        "root": [None, None, None],
        "time": ["2026-03-04T07:10:00.000Z", "2026-03-04T07:00:01.000Z", "2026-03-04T07:00:02.000Z"],
        "fingerprint": [None, u["1"].fingerprint, None],
        "source": ["slurm-77_0.out", "slurm-77_1.out", "slurm-77_2.out"],
        "line": [3, 3, None],
        "evidence": [None, "ModuleNotFoundError: No module named 'fasttext'", None],
    }, schema={**tables.UNITS_SCHEMA, "time": pl.String}).with_columns(
        pl.col("time").str.to_datetime(tables.TIME_FORMAT, time_unit="ms", time_zone="UTC"))
    assert_frame_equal(got, expected)


def test_csv_and_parquet_formats(tmp_path: Path):
    dirs = [str(RUNS / "worker-files"), str(RUNS / "torchrun")]
    expected = tables.units_table(analyse(*dirs).runs)
    res = runner.invoke(app, ["runs", "-f", "csv", "-j", "1", *dirs])
    assert res.exit_code == 1, res.output
    import io

    got = pl.read_csv(io.StringIO(res.stdout), schema={**tables.UNITS_SCHEMA, "time": pl.String})
    got = got.pipe(lambda df: df.lazy()).pipe(tables.with_times).collect()
    assert_frame_equal(got, expected)
    out = tmp_path / "units.parquet"
    res = runner.invoke(app, ["runs", "-f", "parquet", "--out", str(out), "-j", "1", *dirs])
    assert res.exit_code == 1, res.output
    assert_frame_equal(pl.read_parquet(out), expected)


def test_family_counts_helper():
    lf = tables.raw_units(analyse(RUNS / "worker-files", RUNS / "torchrun").runs).pipe(tables.with_times)
    got = tables.family_counts(lf).collect()
    assert got.row(0, named=True) == {"family": "nccl-watchdog-timeout", "role": "cascade", "units": 2, "runs": 1}
    assert got.filter(pl.col("family") == "segfault")["units"].to_list() == [2]


def test_exit_codes():
    assert runner.invoke(app, ["runs", "-j", "1", str(RUNS / "clean")]).exit_code == 0
    assert runner.invoke(app, ["runs", "-j", "1", str(RUNS / "clean"), str(RUNS / "torchrun")]).exit_code == 1


# --------------------------------------------------------------------------- the shared sample runs


def score_runs(truth: dict, got_runs: list[dict]) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Score `sigclass runs` output against a truth.json: (hits, total) per measure, and every miss."""
    got = {r["run"]: r for r in got_runs}
    keys = ("status", "family", "root", "systematic", "junk", "extra")
    hit = {k: 0 for k in keys}
    tot = {k: 0 for k in keys}
    miss: list[str] = []
    for t in truth["runs"]:
        name = t["run"]
        g = got.get(name, {"units": [], "systematic": [], "problems": []})
        if name not in got:
            miss.append(f"{name}: no run in the output")
        units = {u["unit"]: u for u in g["units"]}
        extra = sorted(set(units) - set(t["units"]))
        tot["extra"] += len(t["units"])
        hit["extra"] += len(t["units"]) - len(extra)
        miss.extend(f"{name}: unit {x} is not in the truth" for x in extra)
        for uid, tu in t["units"].items():
            u = units.get(uid) or {}
            checks = [("status", True, "status")]
            checks.append(("family", tu["status"] == "failed", "family"))
            checks.append(("root", tu["role"] == "cascade", "root"))
            for key, applies, field in checks:
                if not applies:
                    continue
                tot[key] += 1
                if u.get(field) == tu[field]:
                    hit[key] += 1
                else:
                    miss.append(f"{name}: unit {uid} {field} {u.get(field)!r} != {tu[field]!r}")
        tot["systematic"] += 1
        want = sorted((s["family"], s["workers"]) for s in t["systematic"])
        have = sorted((s["family"], s["workers"]) for s in g["systematic"])
        if want == have:
            hit["systematic"] += 1
        else:
            miss.append(f"{name}: systematic {have} != {want}")
        for junk in t.get("junk", []):
            tot["junk"] += 1
            if any(junk in (p["path"] or "") or junk in p["message"] for p in g["problems"]):
                hit["junk"] += 1
            else:
                miss.append(f"{name}: {junk} is not reported as a problem")
    return {k: (hit[k], tot[k]) for k in keys}, miss


@pytest.mark.skipif(not (SAMPLE_RUNS / "truth.json").exists(), reason="shared sample runs not present")
def test_sample_runs_match_truth():
    truth = json.loads((SAMPLE_RUNS / "truth.json").read_text())
    dirs = sorted(str(p) + os.sep for p in SAMPLE_RUNS.iterdir() if p.is_dir())
    res = runner.invoke(app, ["runs", "--format", "jsonl", *dirs])
    assert res.exit_code == 1, res.output
    scores, misses = score_runs(truth, [json.loads(ln) for ln in res.stdout.splitlines() if ln.strip()])
    report = "  ".join(f"{k} {h}/{t}" for k, (h, t) in scores.items())
    sys.stderr.write(f"\nsample-runs score: {report}\n")
    assert not misses, report + "\n" + "\n".join(misses)
