"""A command cut off: Ctrl-C says it was interrupted and no worker prints a traceback; a closed standard output is one line."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time

from conftest import OOM


def test_ctrl_c_on_a_live_scan_says_interrupted_and_keeps_the_findings_printed(sigclass_exe):
    proc = subprocess.Popen([*sigclass_exe, "scan", "-f", "jsonl", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(("INFO warming up\n" + OOM + "INFO next step\n").encode())
        proc.stdin.flush()
        got = b""
        deadline = time.monotonic() + 60  # liveness bound, not a speed assertion
        while b"\n" not in got and time.monotonic() < deadline:
            proc.stdin.write(b"INFO still going\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 0.1)
            if ready:
                got += os.read(proc.stdout.fileno(), 65536)
        assert b"\n" in got, "the finding did not arrive while the pipe was open"
        proc.send_signal(signal.SIGINT)  # the scan is now inside the command, reading standard input
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert json.loads((got + rest).splitlines()[0])["family"] == "cuda-oom"
    assert err.decode().strip().splitlines() == ["sigclass: interrupted"]


def test_run_workers_start_with_ctrl_c_ignored(tmp_path):
    """A Ctrl-C reaches every process of the terminal's group; a worker still importing would die with a
    traceback. The workers `sigclass runs` starts ignore SIGINT; the command's own handler is kept."""
    run = tmp_path / "run"
    for w in range(4):
        (run / f"gpu{w}").mkdir(parents=True)
        for s in range(3):
            (run / f"gpu{w}" / f"shard_{w * 3 + s}.log").write_text(f"[shard {w * 3 + s}] starting\n")
    script = textwrap.dedent(f"""
        import signal
        from sigclass.runs import parallel
        from sigclass.runs.discover import plan_run
        from sigclass.runs.layouts import Layout
        from sigclass.runs.sources import ScanConfig

        def ignored_in_worker(cfg, layout, items):  # sent by value: it is defined in __main__
            import signal
            return [(i, signal.getsignal(signal.SIGINT) == signal.SIG_IGN) for i, _, _ in items]

        parallel._scan_chunk = ignored_in_worker
        plan = plan_run({str(run)!r})
        got = parallel.scan_sources([plan], ScanConfig(), Layout(), n_jobs=2)
        assert len(got[0]) == 12, got
        assert all(got[0]), "a worker process does not ignore SIGINT"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the command lost its Ctrl-C"
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_a_closed_standard_output_is_one_line_and_the_exit_status_still_counts(sigclass_exe, tmp_path):
    log = tmp_path / "x.log"
    log.write_text(OOM)
    res = subprocess.run(["bash", "-c", '"$@" >&-', "sh", *sigclass_exe, "scan", str(log)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 1  # the failure was still found
    assert res.stderr.splitlines() == ["sigclass: standard output is closed; nothing is printed (redirect it to a file, or use -q)"]
