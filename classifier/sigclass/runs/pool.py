"""Where the tasks of `sigclass runs -j N` and `--dask` run: a function over a list of argument tuples, results in order.

Three ways, chosen once per batch by `task_results`:

- a dask.distributed client made current by `parallel.dask_backend`: one
  dask task per chunk, submitted at once; each worker process builds its
  scanner on its first task and keeps it for every later one (a
  module-level cache, `runs.sources.scanner_for`), whatever the batch;
- a joblib backend the caller chose with `joblib.parallel_config`: joblib;
- otherwise local worker processes forked from this one, so they start with
  its modules imported and its scanner already built (`prepare`): no
  interpreter start, import or ledger load per worker. When this process
  runs other threads (an MCP server, an API caller's pool), a fork could
  copy a lock one of them holds, so the workers come from a fork server
  instead (a fresh process that imports sigclass once).

Worker processes start with SIGINT ignored (`runs.interrupt`). Results come
back in task order, each as soon as it and those before it are done.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import threading
from typing import Any, Callable, Iterator, Sequence
import warnings

from sigclass.runs.interrupt import workers_ignore_sigint

_DASK: list[Any] = []  # the dask client of the innermost `dask_backend` block, if any

PRELOAD = ["sigclass.runs.parallel", "sigclass.runs.rendered"]  # what a fork server imports for its workers


def use_dask(client: Any) -> None:
    _DASK.append(client)


def drop_dask(client: Any) -> None:
    if client in _DASK:
        _DASK.remove(client)


def _joblib_chosen() -> bool:
    """True when the caller set a joblib backend (`joblib.parallel_config`); never imports joblib itself."""
    if "joblib" not in sys.modules:
        return False
    try:
        from joblib.parallel import _backend

        chosen = (getattr(_backend, "config", None) or {}).get("backend")
    except Exception:  # another joblib: its own choice of backend is honoured
        return True
    return chosen is not None and not hasattr(chosen, "default_value")  # default_value: joblib's "not set" marker


def workers_for(n_jobs: int) -> int:
    """How many processes -j N means here (-1: every core this process may use; -2: all but one; ...)."""
    if n_jobs == 1:
        return 1
    if n_jobs == 0:
        raise ValueError("n_jobs=0 means no process at all; give 1, 2, ... or -1 for every core")
    if _DASK:
        return max(1, sum(_DASK[-1].nthreads().values()))
    if _joblib_chosen():
        import joblib

        return joblib.effective_n_jobs(n_jobs)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)


def task_results(fn: Callable[..., Any], tasks: Sequence[tuple], n_jobs: int, workers: int,
                 prepare: Callable[[], Any] | None = None) -> Iterator[Any]:
    """fn(*task) for every task, in order, on `workers` processes (or the active dask cluster / joblib backend).

    `prepare` is called here first when the workers are forked from this
    process, so what it builds (the scanner) is theirs without building it.
    """
    if _DASK:
        yield from _dask(_DASK[-1], fn, tasks)
    elif _joblib_chosen():
        yield from _joblib(fn, tasks, n_jobs)
    else:
        yield from _local(fn, tasks, workers, prepare)


def _local(fn: Callable[..., Any], tasks: Sequence[tuple], workers: int,
           prepare: Callable[[], Any] | None) -> Iterator[Any]:
    from concurrent.futures import ProcessPoolExecutor

    forked = threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
    if forked:
        ctx = multiprocessing.get_context("fork")
        if prepare is not None:
            prepare()
    else:
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
                                          else "spawn")
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload(PRELOAD)
    if forked:
        # what the workers inherit (the scanner, the ledger, every module) is kept out of their garbage
        # collections: a collection would touch each object and copy the pages they share with this process
        gc.freeze()
    try:
        with workers_ignore_sigint():  # the workers start at the first submit, inside this block
            pool = ProcessPoolExecutor(max_workers=max(1, min(workers, len(tasks))), mp_context=ctx)
            futures = [pool.submit(fn, *t) for t in tasks]
    finally:
        if forked:
            gc.unfreeze()
    try:
        for fut in futures:
            yield fut.result()
    finally:
        for fut in futures:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _dask(client: Any, fn: Callable[..., Any], tasks: Sequence[tuple]) -> Iterator[Any]:
    futures = [client.submit(fn, *t, pure=False) for t in tasks]
    try:
        for fut in futures:
            yield fut.result()
    finally:
        client.cancel(futures)


def _joblib(fn: Callable[..., Any], tasks: Sequence[tuple], n_jobs: int) -> Iterator[Any]:
    import joblib

    with workers_ignore_sigint():  # the workers start here
        gen = joblib.Parallel(n_jobs=n_jobs, return_as="generator", batch_size=1)(
            joblib.delayed(fn)(*t) for t in tasks)
    try:
        yield from gen
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joblib warns about the tasks it cancels
            gen.close()
