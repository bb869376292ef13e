"""Post-mortem over run directories in parallel (`sigclass runs DIR...`).

`iter_runs` scans sources and assembles runs on worker processes (`runs.pool`:
forked local workers, a dask cluster, or a joblib backend the caller chose):
whole runs per task when there are many runs, single files per task when
there are few, and yields each run as soon as it is known.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Iterable, Iterator, Sequence

from sigclass.errors import SigclassError
from sigclass.records import Batch, Run
from sigclass.runs.assemble import assemble
from sigclass.runs.discover import plan_run, RunPlan
from sigclass.runs.layouts import Layout
from sigclass.runs.pool import drop_dask, task_results, use_dask, workers_for
from sigclass.runs.sources import scan_all, scan_source, scanner_for, ScanConfig, SourceScan


def _scan_chunk(cfg: ScanConfig, layout: Layout, items: list[tuple[int, str, str]]) -> list[tuple[int, SourceScan]]:
    return [(i, scan_source(cfg, layout, run_path, rel)) for i, run_path, rel in items]


SMALL_BATCH_SOURCES = 64  # with the default -j, a batch this small (and SMALL_BATCH_BYTES) is scanned in-process:

SMALL_BATCH_BYTES = 16 << 20  # starting worker processes would cost more than it saves


def scan_sources(plans: Sequence[RunPlan], cfg: ScanConfig, layout: Layout, *, n_jobs: int = -1,
                 on_progress: Callable[[int], None] | None = None, small_in_process: bool = False) -> list[list[SourceScan]]:
    """Scan every source of every run, in parallel; the scans of run i, in path order, at index i.

    Runs where `runs.pool` says (local workers, the `dask_backend` cluster, or
    the joblib backend of `joblib.parallel_config`). With ``small_in_process`` a
    small batch skips the worker processes (the answer is the same).
    """
    items = [(i, plan.path, rel) for i, plan in enumerate(plans) for rel in plan.sources]
    out: list[list[SourceScan]] = [[] for _ in plans]
    if not items:
        return out
    workers = workers_for(n_jobs)
    small = small_in_process and len(items) <= SMALL_BATCH_SOURCES and sum(p.bytes for p in plans) <= SMALL_BATCH_BYTES
    if workers <= 1 or len(items) == 1 or small:
        for i, run_path, rel in items:
            out[i].append(scan_source(cfg, layout, run_path, rel))
            if on_progress:
                on_progress(1)
        return out
    size = max(1, min(32, math.ceil(len(items) / (workers * 8))))
    chunks = [(cfg, layout, items[k:k + size]) for k in range(0, len(items), size)]
    gen = task_results(_scan_chunk, chunks, n_jobs, workers, lambda: scanner_for(cfg))
    try:
        for done in gen:
            for i, scan in done:
                out[i].append(scan)
            if on_progress:
                on_progress(len(done))
    finally:
        gen.close()
    return out


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
              small_in_process: bool = False, render: Callable[[Run], Any] | None = None) -> Iterator[Any]:
    """The post-mortem of each planned run, in order, as soon as it is known (memory stays flat).

    One process: run after run. Many runs: each task scans and assembles
    whole runs, so the calling process only gathers them. Few runs: the
    tasks are files (a run with many files still spreads over every worker)
    and the runs are assembled here. The answer is the same in every case.
    With ``render`` (a picklable callable, e.g. `sigclass.runs.rendered.Render`)
    each run is yielded as ``render(run)``, made where the run was assembled:
    a worker sends that back instead of the whole run.
    """
    workers = workers_for(n_jobs)
    total = sum(len(p.sources) for p in plans)
    small = small_in_process and total <= SMALL_BATCH_SOURCES and sum(p.bytes for p in plans) <= SMALL_BATCH_BYTES
    if workers <= 1 or total <= 1 or small:
        for plan in plans:
            run = assemble(plan, scan_all(cfg, layout, plan.path, plan.sources))
            if on_progress and plan.sources:
                on_progress(len(plan.sources))
            yield run if render is None else render(run)
        return
    if len(plans) >= RUN_TASKS_MIN_RUNS_PER_WORKER * workers:
        yield from _run_tasks(plans, cfg, layout, n_jobs, workers, total, on_progress, render)
        return
    scans = scan_sources(plans, cfg, layout, n_jobs=n_jobs, on_progress=on_progress)
    for plan, sc in zip(plans, scans):
        run = assemble(plan, sc)
        yield run if render is None else render(run)


def _analyse_chunk(cfg: ScanConfig, layout: Layout, plans: list[RunPlan],
                   render: Callable[[Run], Any] | None = None) -> list[Any]:
    runs = (assemble(plan, scan_all(cfg, layout, plan.path, plan.sources)) for plan in plans)
    return [run if render is None else render(run) for run in runs]


def _run_tasks(plans: Sequence[RunPlan], cfg: ScanConfig, layout: Layout, n_jobs: int, workers: int, total: int,
               on_progress: Callable[[int], None] | None, render: Callable[[Run], Any] | None) -> Iterator[Any]:
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
    gen = task_results(_analyse_chunk, [(cfg, layout, ch, render) for ch in chunks], n_jobs, workers,
                       lambda: scanner_for(cfg))
    try:
        for chunk, done in zip(chunks, gen):
            if on_progress:
                on_progress(sum(len(p.sources) for p in chunk))
            yield from done
    finally:
        gen.close()


class dask_backend:
    """`with dask_backend(address):` runs the batches of this block on an existing dask.distributed cluster.

    Each dask worker process builds its scanner on its first task and keeps it
    (`runs.sources.scanner_for`); tasks are whole runs (or files) rendered or
    scanned there, so what comes back is small (`runs.pool`).
    """

    TIMEOUT = 20.0  # seconds to reach the scheduler

    def __init__(self, address: str, timeout: float | None = None) -> None:
        self.address = address
        self.timeout = self.TIMEOUT if timeout is None else timeout
        self.client = None

    def __enter__(self) -> "dask_backend":
        try:
            import distributed
        except ImportError:
            raise SigclassError("--dask needs the optional dask extra; install it with: pip install 'sigclass[dask]'") from None
        try:
            self.client = distributed.Client(self.address, timeout=self.timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise SigclassError(f"cannot reach the dask scheduler at {self.address} ({exc or type(exc).__name__}); "
                                "check the address (tcp://HOST:PORT) and that the scheduler is running") from None
        use_dask(self.client)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.client is not None:
            drop_dask(self.client)
            self.client.close()
