"""The CLI through CliRunner, and the installed console script through real pipes."""

from __future__ import annotations

import gzip
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sigclass.cli.app import app

from conftest import FILES

runner = CliRunner()
MINI = str(FILES / "ledger_min")

OOM_TB = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 42, in <module>\n'
    "    loss = model(batch)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB\n"
)


@pytest.fixture()
def logs(tmp_path: Path) -> dict[str, Path]:
    bad = tmp_path / "bad.log"
    bad.write_text("INFO start\n" + OOM_TB + "INFO more\n" + OOM_TB.replace("2.00", "4.00") + "INFO end\n")
    clean = tmp_path / "clean.log"
    clean.write_text("INFO epoch 1 error_rate=0.000\nWARNING slow step\nINFO done\n")
    return {"bad": bad, "clean": clean}


def test_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("sigclass ")


def test_scan_jsonl_has_every_finding_key(logs):
    r = runner.invoke(app, ["scan", "--format", "jsonl", str(logs["bad"])])
    assert r.exit_code == 1, r.output
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert rows[-1]["kind"] == "verdict" and rows[-1]["cause"]["family"] == "cuda-oom"  # after the source's findings
    rows = rows[:-1]
    assert [x["family"] for x in rows] == ["cuda-oom", "cuda-oom"]
    need = {"family", "title", "role", "status", "confidence", "method", "source", "line", "end_line", "time",
            "worker", "evidence", "fingerprint", "count", "mitigation", "probes", "caveats", "root"}
    assert need <= set(rows[0])
    assert rows[0]["line"] == 2 and rows[0]["source"] == str(logs["bad"])


def test_scan_json_folds_repeats(logs):
    r = runner.invoke(app, ["scan", "-f", "json", str(logs["bad"])])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert len(doc["findings"]) == 1
    f = doc["findings"][0]
    assert f["count"] == 2 and f["lines"] == [2, 7]


def test_scan_text_for_people(logs):
    r = runner.invoke(app, ["scan", str(logs["bad"])])
    assert r.exit_code == 1, r.output
    assert "cuda-oom" in r.stdout and "do: " in r.stdout and "repeated ×2" in r.stdout
    assert "\x1b[" not in r.stdout  # no colour off a TTY


def test_clean_log_exits_zero(logs):
    r = runner.invoke(app, ["scan", str(logs["clean"])])
    assert r.exit_code == 0, r.output
    assert r.stdout == ""


def test_missing_path_among_good_ones_exit_2_and_findings_kept(logs):
    r = runner.invoke(app, ["scan", "-f", "jsonl", "/nonexistent/x.log", str(logs["bad"])])
    assert r.exit_code == 2
    assert "no such file" in r.stderr and "Traceback" not in r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    assert [x.get("kind", "finding") for x in rows] == ["finding", "finding", "verdict"]


def test_yaml_error_in_user_ledger_is_one_line_and_scan_goes_on(tmp_path: Path, logs):
    (tmp_path / "mine.yaml").write_text("id: mine\nmatch: [\n")
    r = runner.invoke(app, ["scan", "-f", "jsonl", "--ledger", str(tmp_path), str(logs["bad"])])
    assert r.exit_code == 2
    assert "mine.yaml:" in r.stderr and "YAML error" in r.stderr and "Traceback" not in r.stderr
    assert [json.loads(x).get("kind", "finding") for x in r.stdout.splitlines()] == ["finding", "finding", "verdict"]


def test_explain_and_ledger_commands():
    r = runner.invoke(app, ["explain", "vllm-h100-prefix-cache-ima"])
    assert r.exit_code == 0, r.output
    assert "A100" in r.stdout and "enable_prefix_caching" in r.stdout
    r = runner.invoke(app, ["explain", "cuda-oomm"])
    assert r.exit_code == 2 and "did you mean" in r.stderr and "cuda-oom" in r.stderr
    r = runner.invoke(app, ["ledger", "list"])
    assert r.exit_code == 0 and "nccl-watchdog-timeout" in r.stdout
    r = runner.invoke(app, ["ledger", "render"])
    assert r.exit_code == 0 and r.stdout.startswith("# Known gotchas")
    r = runner.invoke(app, ["ledger", "patterns"])
    assert r.exit_code == 0 and len(r.stdout.splitlines()) > 23
    r = runner.invoke(app, ["ledger", "lint", "--no-examples", MINI])
    assert "issue=examples" in r.stdout and r.exit_code == 1


# --------------------------------------------------------------------------- real processes

def _run(exe, args, data: bytes, **kw):
    return subprocess.run([*exe, *args], input=data, capture_output=True, timeout=120, **kw)


def test_console_script_reads_a_pipe(sigclass_exe, logs):
    p = _run(sigclass_exe, [], logs["bad"].read_bytes())
    assert p.returncode == 1, p.stderr
    assert b"cuda-oom" in p.stdout and b"Traceback" not in p.stderr


def test_console_script_bad_input_never_shows_a_traceback(sigclass_exe, tmp_path: Path):
    junk = tmp_path / "junk.log"
    junk.write_bytes(os.urandom(1 << 16))
    gz = tmp_path / "cut.log.gz"
    body = "".join(f"INFO step {i} loss {i * 7919 % 1000 / 7:.5f}\n" for i in range(20000))
    data = gzip.compress((OOM_TB + body + "x" * 100000).encode())
    gz.write_bytes(data[: len(data) // 2])
    p = subprocess.run([*sigclass_exe, "scan", str(junk), str(gz), "/nonexistent.log"], capture_output=True, timeout=120)
    assert p.returncode == 2
    err = p.stderr.decode()
    assert "Traceback" not in err
    assert "binary" in err and "truncated" in err and "no such file" in err, err
    assert all(line.startswith("sigclass: ") for line in err.splitlines())
    assert b"cuda-oom" in p.stdout  # findings before the gzip cut are kept


def test_head_closing_the_pipe_is_quiet(sigclass_exe, tmp_path: Path):
    big = tmp_path / "big.log"
    with open(big, "w") as fh:
        for i in range(3000):
            fh.write(f"INFO step {i}\n" * 20 + OOM_TB.replace("2.00", f"{i}.00"))
    cmd = f"{' '.join(sigclass_exe)} scan -f jsonl {big} | head -1"
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, timeout=120)
    assert p.stdout.count(b"\n") == 1
    assert b"Traceback" not in p.stderr and b"BrokenPipe" not in p.stderr


@pytest.mark.parametrize("then", ["nothing", "more-lines"])
def test_live_pipe_emits_a_finding_while_the_writer_is_still_open(sigclass_exe, then):
    """A traceback written slowly: its finding arrives before the writer closes the pipe."""
    proc = subprocess.Popen([*sigclass_exe, "scan", "-f", "jsonl", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for line in ("INFO warming up\n" + OOM_TB).splitlines(keepends=True):
            proc.stdin.write(line.encode())
            proc.stdin.flush()
            time.sleep(0.05)
        got = b""
        deadline = time.monotonic() + 30  # liveness bound, not a speed assertion
        while b"\n" not in got and time.monotonic() < deadline:
            if then == "more-lines":
                proc.stdin.write(b"INFO another worker keeps writing\n")
                proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 0.1)
            if ready:
                got += os.read(proc.stdout.fileno(), 65536)
        assert proc.poll() is None, "the scanner must still be running: the writer has not closed the pipe"
        assert b"\n" in got, "no finding arrived while the pipe was still open"
        assert json.loads(got.splitlines()[0])["family"] == "cuda-oom"
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 1


def test_python_dash_m_works(logs):
    p = subprocess.run([sys.executable, "-m", "sigclass", "scan", "-f", "jsonl", str(logs["bad"])],
                       capture_output=True, timeout=120)
    assert p.returncode == 1 and p.stdout.count(b"\n") == 3  # two findings, then the verdict
