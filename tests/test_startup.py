"""Start-up: `sigclass runs` on one small run and `sigclass scan` on a small log load no heavy library."""

from __future__ import annotations

import subprocess
import sys

from conftest import FILES, OOM

HEAVY = ("sklearn", "numpy", "polars", "pandas", "pyarrow", "scipy", "joblib", "distributed", "rich.console",
         "rich.progress", "rich.table")


def _loaded(argv: list[str]) -> tuple[str, list[str]]:
    code = ("import sys, runpy; sys.argv = %r\n"
            "try:\n    runpy.run_module('sigclass', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('HEAVY=%%s\\n' %% ','.join(m for m in %r if m in sys.modules))\n") % (argv, HEAVY)
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)  # fills the caches
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    heavy = [ln for ln in p.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert heavy, p.stderr
    return p.stdout, [m for m in heavy[-1][len("HEAVY="):].split(",") if m]


def test_runs_on_one_small_run_loads_no_heavy_library():
    out, heavy = _loaded(["sigclass", "runs", str(FILES / "runs" / "torchrun")])
    assert out.startswith("torchrun: 4/4 ranks lost") and "nccl-error" in out  # it did the work
    assert heavy == []


def test_runs_as_json_lines_on_one_small_run_loads_no_heavy_library():
    out, heavy = _loaded(["sigclass", "runs", "--format", "jsonl", str(FILES / "runs" / "worker-files")])
    assert out.startswith('{"run": "worker-files"')
    assert heavy == []


def test_scan_of_a_small_log_loads_no_heavy_library(tmp_path):
    log = tmp_path / "small.log"
    log.write_text("INFO step 1\n" * 200 + OOM)
    out, heavy = _loaded(["sigclass", "scan", str(log)])
    assert "cuda-oom" in out
    assert heavy == []
