"""The per-source set-up of `sigclass runs` done once per batch: the sources of a run scanned together
(`runs.sources.scan_all`), clean sources skipping the conditional-family walk, and forked workers that leave
the command's garbage collector as they found it."""

from __future__ import annotations

import gc
from pathlib import Path
import pickle
import shutil
import warnings

from conftest import FILES

from sigclass.runs import parallel
from sigclass.runs.borrow import conditional, lend
from sigclass.runs.discover import plan_run
from sigclass.runs.layouts import Layout
from sigclass.runs.sources import scan_all, scan_source, scanner_for, ScanConfig

RUNS = FILES / "runs"


def test_scan_all_gives_what_scanning_each_source_alone_gives():
    for name in ("shard-per-file", "torchrun", "worker-files", "jsonl-events"):
        plan = plan_run(str(RUNS / name))
        assert plan.sources
        one = [scan_source(ScanConfig(), Layout(), plan.path, rel) for rel in plan.sources]
        together = scan_all(ScanConfig(), Layout(), plan.path, plan.sources)
        assert [pickle.dumps(s) for s in together] == [pickle.dumps(s) for s in one], name


def test_scan_all_keeps_warnings_to_itself_and_restores_the_filters():
    plan = plan_run(str(RUNS / "torchrun"))
    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        scan_all(ScanConfig(), Layout(), plan.path, plan.sources)
        warnings.warn("after the batch", UserWarning)
    assert [str(w.message) for w in seen] == ["after the batch"]
    assert warnings.filters == before


def test_a_source_without_findings_has_no_conditional_families_and_lends_nothing():
    plan = plan_run(str(RUNS / "clean"))
    scans = scan_all(ScanConfig(), Layout(), plan.path, plan.sources)
    sc = scanner_for(ScanConfig())
    assert scans and all(not s.findings for s in scans)
    assert all(conditional(sc, s.findings, s.facts) == [] for s in scans)
    kept = [pickle.dumps(s) for s in scans]
    lend(scans)
    assert [pickle.dumps(s) for s in scans] == kept


def test_forked_workers_leave_no_object_frozen_in_the_command(tmp_path: Path):
    dirs = []
    for k in range(5):
        for name in ("shard-per-file", "worker-files", "torchrun"):
            dirs.append(str(tmp_path / f"{name}-{k}"))
            shutil.copytree(RUNS / name, dirs[-1])
    # (an earlier test that ran `sigclass scan` in this process froze what its start-up made: that stays)
    before = gc.get_freeze_count()
    two = [r.to_dict() for r in parallel.analyse(dirs, n_jobs=2).runs]
    assert gc.get_freeze_count() == before
    one = [r.to_dict() for r in parallel.analyse(dirs, n_jobs=1).runs]
    assert two == one
