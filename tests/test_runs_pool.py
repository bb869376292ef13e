"""Where `sigclass runs` tasks run (`runs.pool`): forked workers that inherit the scanner, a fork server when other
threads run, a joblib backend the caller chose, a dask cluster whose workers keep their scanner between batches."""

from __future__ import annotations

from pathlib import Path
import shutil
import subprocess
import sys
import textwrap
import threading

import pytest
from conftest import FILES

from sigclass.runs import parallel, pool
from sigclass.runs.discover import plan_run

RUNS = FILES / "runs"
FIXTURES = ["clean", "jsonl-events", "ray-job", "shard-per-file", "slurm-array", "torchrun", "torchrun-silent-rank",
            "worker-files"]


def _fleet(tmp_path: Path, copies: int = 2) -> list[str]:
    dirs = []
    for k in range(copies):
        for name in FIXTURES:
            dirs.append(str(tmp_path / f"{name}-{k}"))
            shutil.copytree(RUNS / name, dirs[-1])
    return dirs


def _answer(dirs: list[str], n_jobs: int) -> list[dict]:
    return [r.to_dict() for r in parallel.analyse(dirs, n_jobs=n_jobs).runs]


def test_workers_for_reads_minus_one_as_every_core_and_refuses_zero():
    assert pool.workers_for(1) == 1
    assert pool.workers_for(3) == 3
    assert pool.workers_for(-1) >= 1
    assert pool.workers_for(-2) == max(1, pool.workers_for(-1) - 1)
    with pytest.raises(ValueError, match="n_jobs=0"):
        pool.workers_for(0)


def test_forked_workers_use_the_scanner_built_once_in_the_command(tmp_path: Path):
    """With no other thread running, the workers are forked after the scanner is built: none builds its own."""
    dirs = _fleet(tmp_path)
    built = tmp_path / "built.txt"
    script = textwrap.dedent(f"""
        import os
        from sigclass.scan import scanner

        init = scanner.Scanner.__init__
        def counting(self, *a, **kw):
            with open({str(built)!r}, "a") as fh:
                fh.write(f"{{os.getpid()}}\\n")
            init(self, *a, **kw)
        scanner.Scanner.__init__ = counting

        from sigclass.runs import parallel
        two = [r.to_dict() for r in parallel.analyse({dirs!r}, n_jobs=2).runs]
        one = [r.to_dict() for r in parallel.analyse({dirs!r}, n_jobs=1).runs]
        assert two == one
        print(os.getpid())
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert built.read_text().split() == [res.stdout.strip()]  # built once, by the command itself


def test_with_other_threads_running_the_workers_come_from_a_fork_server(tmp_path: Path):
    dirs = _fleet(tmp_path)
    want = _answer(dirs, 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert threading.active_count() > 1
        assert _answer(dirs, 2) == want
    finally:
        stop.set()
        other.join()


def test_a_joblib_backend_the_caller_chose_is_used(tmp_path: Path):
    joblib = pytest.importorskip("joblib")
    dirs = _fleet(tmp_path)
    want = _answer(dirs, 1)
    with joblib.parallel_config(backend="threading"):
        assert pool._joblib_chosen()
        assert _answer(dirs, 2) == want
    assert not pool._joblib_chosen()


def test_results_come_back_in_task_order_from_local_workers():
    got = list(pool.task_results(pow, [(2, k) for k in range(40)], 2, 2))
    assert got == [2 ** k for k in range(40)]


def test_a_consumer_that_stops_early_leaves_no_worker_behind():
    gen = pool.task_results(pow, [(3, k) for k in range(40)], 2, 2)
    assert next(gen) == 1
    gen.close()  # the pool is shut down here, its pending tasks cancelled
    assert not [c for c in __import__("multiprocessing").active_children() if c.is_alive()]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_dask_workers_build_their_scanner_once_across_batches(tmp_path: Path):
    distributed = pytest.importorskip("distributed")
    dirs = _fleet(tmp_path)
    want = _answer(dirs, 1)

    def which(cfg):  # sent by value: defined here
        import os

        from sigclass.runs.sources import scanner_for

        return os.getpid(), id(scanner_for(cfg))

    from sigclass.runs.sources import ScanConfig

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0") as cluster:
        with parallel.dask_backend(cluster.scheduler_address):
            assert pool.workers_for(-1) == 2
            assert _answer(dirs, -1) == want
            seen = set(pool.task_results(which, [(ScanConfig(),)] * 12, -1, 2))
            assert _answer(dirs, -1) == want  # a second batch on the same workers
            seen |= set(pool.task_results(which, [(ScanConfig(),)] * 12, -1, 2))
    pids = {pid for pid, _ in seen}
    assert len(seen) == len(pids) <= 2  # one scanner per worker process, kept between batches
    assert not pool._DASK  # the block's client is dropped at its end
