"""Process settings of the scan command (scan.tuning)."""

from __future__ import annotations

import gc

from sigclass.scan import tuning


def test_blas_threads_default_to_one_but_the_users_choice_stays(monkeypatch):
    old = gc.get_threshold()
    try:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
        tuning.before_start_up()
        import os

        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
        assert gc.get_threshold() == tuning.GC_THRESHOLD
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
        tuning.before_start_up()
        assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
    finally:
        gc.set_threshold(*old)


def test_the_scan_command_applies_them(tmp_path, monkeypatch):
    from sigclass.cli.plain import run_scan

    calls = []
    monkeypatch.setattr(tuning, "before_start_up", lambda: calls.append("before"))
    monkeypatch.setattr(tuning, "after_start_up", lambda: calls.append("after"))
    log = tmp_path / "a.log"
    log.write_text("INFO all good\n", encoding="utf-8")
    assert run_scan([str(log)], quiet=True) == 0
    assert calls == ["before", "after"]
