"""Hostile input: each test reproduces one attack through the `sigclass` command or `import sigclass`.

Every command runs in a subprocess with a time limit, so a hang fails its test instead of freezing the
suite. Limits are generous (the machine is shared); nothing asserts on how fast a run was.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import OOM

HANG = 120  # seconds: far above what any of these inputs needs once handled


def _exe() -> list[str]:
    exe = shutil.which("sigclass")
    return [exe] if exe else [sys.executable, "-m", "sigclass"]


def run_cli(args: list, *, timeout: float = HANG, cwd: Path | None = None, input: bytes | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """The console script with `args` (str or bytes), output as bytes; a run past `timeout` fails the test."""
    try:
        return subprocess.run([*_exe(), *args], capture_output=True, timeout=timeout, cwd=cwd, input=input,
                              env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"sigclass {' '.join(map(os.fsdecode, args))} did not finish within {timeout} s")


def run_py(code: str, *, timeout: float = HANG, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """A Python snippet in a fresh interpreter (text output); a run past `timeout` fails the test."""
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the snippet did not finish within {timeout} s:\n{code}")


_PEAK = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sys.stderr.buffer.write(p.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, p.returncode)
"""


def peak_mib(args: list, *, timeout: float = HANG) -> tuple[int, int, str]:
    """Peak resident memory (MiB) and exit status of `sigclass args`, and its stderr."""
    try:
        p = subprocess.run([sys.executable, "-c", _PEAK, *_exe(), *args], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"sigclass {' '.join(map(str, args))} did not finish within {timeout} s")
    rss, rc = p.stdout.split()
    return int(rss), int(rc), p.stderr


def no_traceback(p: subprocess.CompletedProcess) -> str:
    err = p.stderr.decode("utf-8", "replace") if isinstance(p.stderr, bytes) else p.stderr
    assert "Traceback" not in err and "internal error" not in err, err
    return err


# --------------------------------------------------------------------------- 1. regexes on log content

# Lines shaped to make a backtracking regex go quadratic (or worse): runs of what one repeat eats next to what
# the following repeat eats too, with no way to finish the match. Each stays under the 64 KiB line cap.
N = 60_000
SLOW_LINES = {
    "shard marker, spaces": "[shard 5]" + " " * N + "1",
    "shard marker, dashes": "shard 5" + " -" * (N // 2) + "1",
    "shard marker, verb first": "Starting" + " " * N + "1",
    "ray prefix, many keys": "(RayWorker" + " a=b" * (N // 4) + " x",
    "ray prefix, commas": "(RayWorker" + ", a=b" * (N // 5),
    "glog header": "I0301 12:00:00.000 " + " " * N + "1 x",
    "iso header": "2026-03-01 12:00:00" + " " * N + "[INFO" + " " * N,
    "timestamp digits": "2026-03-01 12:00:00." + "1" * N + "+",
    "exception name": "ERROR " + "a." * (N // 2) + "Error",
    "exception chain": "x" * N + "Error[" * 100,
    "new record": "[" + "x" * 79 + "1" * N,
    "key value": "worker=" + "a" * N + ";" + " worker=" * 1000,
    "windows path": "C:\\" + "a\\" * (N // 2) + "\n",
    "unix path": "/" + "a/" * (N // 2) + "!",
    "numbers": "1," * (N // 2) + "e",
    "ansi": "\x1b]" + "x" * N,
}


def test_builtin_patterns_stay_linear_on_hostile_lines(tmp_path: Path):
    """A line of 20,000 spaces after `[shard 5]` took 33 s in the built-in marker pattern (quadratic)."""
    for i, line in enumerate(SLOW_LINES.values()):
        # each line inside a traceback too, so the block and masking code sees it as well as the prefilter
        (tmp_path / f"a{i}.log").write_text(f"{line}\n{OOM}{line}\nRuntimeError: {line}\n\n")
    code = f"""
        import json, pathlib, sigclass
        for p in sorted(pathlib.Path({str(tmp_path)!r}).glob('*.log')):
            sigclass.classify(p, signatures='regex')
            sigclass.classify(p.read_text(), signatures='regex')
        print('ok')
    """
    p = run_py(code, timeout=HANG)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_shard_marker_line_of_spaces(tmp_path: Path):
    log = tmp_path / "w.log"
    log.write_text("[shard 5]" + " " * N + "1\n" + "[shard 5] done\n")
    p = run_cli(["scan", "-f", "json", str(log)], timeout=60)
    no_traceback(p)
    assert p.returncode == 0, p.stderr


# --------------------------------------------------------------------------- 2. zstd bombs

def _zstd_bomb(path: Path, mib: int, *, frames: int = 1, line: bytes = b"\n") -> Path:
    import zstandard

    chunk = line * ((1 << 20) // len(line))
    with open(path, "wb") as f:
        for _ in range(frames):
            with zstandard.ZstdCompressor(level=3).stream_writer(f, closefd=False) as w:
                for _ in range(mib // frames):
                    w.write(chunk)
    return path


def test_zstd_bomb_streams_in_bounded_memory(tmp_path: Path):
    """1 GB of newlines in a 36 KB .zst ran past 300 s at 2.1 GB: the buffer grew without a cap."""
    bomb = _zstd_bomb(tmp_path / "bomb.log.zst", 512)
    assert bomb.stat().st_size < 1 << 20
    rss, rc, err = peak_mib(["scan", "-f", "json", str(bomb)], timeout=240)
    assert rc == 0, err
    assert rss < 300, f"peak RSS {rss} MiB for a 512 MiB bomb"


def test_zstd_several_frames_and_truncation(tmp_path: Path):
    text = b"INFO filler\n" * 50_000 + OOM.encode()
    import zstandard

    two = tmp_path / "two.log.zst"
    two.write_bytes(zstandard.ZstdCompressor().compress(text) + zstandard.ZstdCompressor().compress(text))
    p = run_cli(["scan", "-f", "json", str(two)])
    doc = json.loads(p.stdout)
    assert [f["count"] for f in doc["findings"]] == [2], doc
    cut = tmp_path / "cut.log.zst"
    data = two.read_bytes()
    cut.write_bytes(data[: len(data) - 10])
    p = run_cli(["scan", "-f", "json", str(cut)])
    err = no_traceback(p)
    assert p.returncode == 2 and "truncated" in err, err


def test_a_gzip_bomb_stops_at_the_line_break_limit_and_keeps_what_was_found(tmp_path: Path, monkeypatch):
    """2 GB of NUL bytes in a 2 MB .gz took 12 s to inflate in full; a 1 GB .gz would have taken hours. Past the
    limit of decompressed bytes without a line break the file is read no further, and the finding before it stays."""
    import gzip

    import sigclass
    from sigclass.scan import reader

    monkeypatch.setattr(reader, "NO_BREAK_LIMIT", 8 << 20)
    bomb = tmp_path / "bomb.log.gz"
    with gzip.open(bomb, "wb") as f:
        f.write(b"INFO step\n" * 2000 + OOM.encode())
        for _ in range(64):
            f.write(b"\0" * (1 << 20))
        f.write(b"\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    res = sigclass.classify(bomb)
    assert [f.family for f in res.findings] == ["cuda-oom"]
    assert any("without a line break" in str(p) and "bomb.log.gz" in str(p) for p in res.problems), res.problems
    # under the limit nothing is cut: the line after 6 MB of NUL bytes is read
    small = tmp_path / "small.log.gz"
    with gzip.open(small, "wb") as f:
        f.write(b"INFO step\n" * 2000 + OOM.encode() + b"\0" * (6 << 20) + b"\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert [f.family for f in sigclass.classify(small).findings] == ["cuda-oom", "cuda-illegal-memory-access"]


@pytest.mark.parametrize("hole_at", ["end", "middle"])
def test_a_hole_of_nul_bytes_in_a_text_log_loses_no_finding(tmp_path: Path, hole_at: str):
    """A node that crashed leaves its log's last blocks as NUL bytes; a short log with such a hole was read as
    binary data and skipped, losing the very fault that crashed the node."""
    import sigclass

    xid = b"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
    hole = b"\0" * 4096
    data = b"INFO step 1\n" * 5 + xid + hole if hole_at == "end" else \
        b"INFO step 1\n" * 5 + OOM.encode() + hole + b"\n" + xid
    log = tmp_path / "node.log"
    log.write_bytes(data)
    res = sigclass.classify(log)
    want = ["gpu-hardware-fault"] if hole_at == "end" else ["cuda-oom", "gpu-hardware-fault"]
    assert [f.family for f in res.findings] == want, (res.findings, res.problems)
    assert not any("binary" in str(p) for p in res.problems)


def test_scattered_nul_bytes_are_still_binary(tmp_path: Path):
    import sigclass

    junk = tmp_path / "model.log"
    junk.write_bytes(b"".join(bytes([i % 7, 0, 65 + i % 26]) for i in range(4000)))
    res = sigclass.classify(junk)
    assert not res.findings and any("binary" in str(p) for p in res.problems)


def test_corrupt_zstd_says_why(tmp_path: Path):
    """A decompression failure names the error: `cannot decompress ()` said nothing."""
    junk = tmp_path / "junk.log.zst"
    junk.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(4096))
    p = run_cli(["scan", str(junk)])
    err = no_traceback(p)
    assert p.returncode == 2
    assert "()" not in err and "junk.log.zst" in err, err


# --------------------------------------------------------------------------- 3. file names

BAD_NAME = b"shard_0\xff.log"
NL_NAME = b"shard_1\nevil.log:9  nccl-watchdog-timeout.log"


def _odd_run(tmp_path: Path) -> Path:
    run = tmp_path / "oddrun"
    w0, w1 = run / "worker_0", run / "worker_1"
    w0.mkdir(parents=True)
    w1.mkdir()
    head = "2026-03-01 12:00:00,000 INFO shard {} starting\n"
    with open(os.path.join(os.fsencode(w0), BAD_NAME), "w") as f:
        f.write(head.format(0) + OOM)
    with open(os.path.join(os.fsencode(w1), NL_NAME), "w") as f:
        f.write(head.format(1) + OOM)
    return run


def _sources(doc) -> list[str]:
    found: list[str] = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "source" and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return found


def _check_names(sources: list[str]) -> None:
    assert any("shard_0\\xff.log" in s for s in sources), sources
    assert any("shard_1\\nevil.log" in s for s in sources), sources
    for s in sources:
        assert "\n" not in s and not any(0xD800 <= ord(c) <= 0xDFFF for c in s), s


def test_odd_file_names_in_runs_json_and_jsonl(tmp_path: Path):
    run = _odd_run(tmp_path)
    for fmt in ("json", "jsonl"):
        p = run_cli(["runs", "-j", "1", "-f", fmt, str(run)])
        no_traceback(p)
        assert p.returncode == 1, p.stderr
        text = p.stdout.decode("utf-8")  # strict: raw invalid bytes fail here
        docs = [json.loads(x) for x in text.splitlines()] if fmt == "jsonl" else [json.loads(text)]
        _check_names(_sources(docs))


def test_odd_file_names_in_runs_csv(tmp_path: Path):
    run = _odd_run(tmp_path)
    p = run_cli(["runs", "-j", "1", "-f", "csv", str(run)])
    no_traceback(p)
    assert p.returncode == 1, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout.decode("utf-8"))))
    _check_names([r["source"] for r in rows])


def test_odd_file_names_in_report(tmp_path: Path):
    run = _odd_run(tmp_path)
    out = tmp_path / "r.html"
    p = run_cli(["report", "-j", "1", "-o", str(out), str(run)])
    no_traceback(p)
    assert p.returncode == 1, p.stderr
    html = out.read_bytes().decode("utf-8")
    assert "shard_0\\xff.log" in html


def test_odd_file_names_in_scan_output(tmp_path: Path):
    run = _odd_run(tmp_path)
    files = [os.path.join(os.fsencode(run / "worker_0"), BAD_NAME), os.path.join(os.fsencode(run / "worker_1"), NL_NAME)]
    p = run_cli(["scan", "-f", "text", *files])
    no_traceback(p)
    assert p.returncode == 1, p.stderr
    text = p.stdout.decode("utf-8")
    # a newline in a name must not start a line of its own that reads like a finding
    assert not any(line.startswith("evil.log") for line in text.splitlines()), text
    assert "shard_1\\nevil.log" in text and "shard_0\\xff.log" in text, text
    for fmt in ("json", "jsonl"):
        p = run_cli(["scan", "-f", fmt, *files])
        no_traceback(p)
        out = p.stdout.decode("utf-8")
        docs = [json.loads(x) for x in out.splitlines()] if fmt == "jsonl" else [json.loads(out)]
        _check_names(_sources(docs))


def test_odd_file_names_through_the_api(tmp_path: Path):
    run = _odd_run(tmp_path)
    code = f"""
        import json, sigclass
        got = sigclass.analyze_run({str(run)!r}, n_jobs=1)
        print(json.dumps(got.to_dict(), ensure_ascii=False))
    """
    p = run_py(code)
    assert p.returncode == 0, p.stderr
    _check_names(_sources(json.loads(p.stdout)))


# --------------------------------------------------------------------------- 4. memory and many findings

def _many_findings(path: Path, findings: int) -> Path:
    """A realistic shape: log noise with a failure every few lines, each with its own numbers."""
    with open(path, "w") as f:
        for i in range(findings):
            f.write(f"2026-03-01 12:{i // 60 % 60:02d}:{i % 60:02d},000 INFO step {i} loss 0.{i % 97}\n"
                    f"2026-03-01 12:{i // 60 % 60:02d}:{i % 60:02d},001 ERROR worker {i % 8}: "
                    f"RuntimeError: CUDA error: an illegal memory access was encountered at batch {i}\n"
                    "2026-03-01 12:00:00,002 INFO retrying\n")
    return path


@pytest.mark.slow
def test_memory_stays_flat_with_the_number_of_findings(tmp_path: Path):
    """64 MB -> 189 MB and 1 GB -> 2 GB RSS: every finding was kept until the end, even for text output.
    Both logs span several 4 MiB blocks, so what a block costs is in both figures; only retention differs."""
    small = _many_findings(tmp_path / "small.log", 40_000)
    big = _many_findings(tmp_path / "big.log", 120_000)
    for fmt in ("text", "json"):
        base, rc0, err0 = peak_mib(["scan", "--signatures", "regex", "-f", fmt, str(small)], timeout=300)
        grown, rc1, err1 = peak_mib(["scan", "--signatures", "regex", "-f", fmt, str(big)], timeout=300)
        assert rc0 == rc1 == 1, (err0, err1)
        assert "timed out" not in err1, err1
        # (what the scanner keeps of each worker's progress lines grows with the log, not with its findings;
        # keeping every finding cost 130 MiB more here). The peak also moves with how many read-ahead blocks are
        # in flight when the scan is busiest, which depends on the machine's load: 7-22 MiB apart on a quiet
        # machine, 46 once on a loaded one, so the bound sits between that noise and the 130 MiB of retention
        assert grown - base < 70, f"{fmt}: {base} MiB for 40,000 findings, {grown} MiB for 120,000"


@pytest.mark.slow
def test_memory_stays_flat_on_a_long_live_pipe(tmp_path: Path):
    big = _many_findings(tmp_path / "big.log", 120_000).read_bytes()
    small = big[: len(big) // 3]  # both span several blocks: what a block costs is in both figures
    base = _pipe_peak(small)
    grown = _pipe_peak(big)
    # a live pipe is read as it arrives, so how much one read holds depends on how busy the machine is: a wider
    # margin than for files (keeping every finding cost 150 MiB more here)
    assert grown - base < 60, f"{base} MiB for the shorter pipe, {grown} MiB for the one three times as long"


def _pipe_peak(data: bytes) -> int:
    code = """
import resource, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
data = sys.stdin.buffer.read()
for i in range(0, len(data), 1 << 16):
    p.stdin.write(data[i:i + (1 << 16)])
p.stdin.close()
p.wait()
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""
    try:
        p = subprocess.run([sys.executable, "-c", code, *_exe(), "scan", "--signatures", "regex", "-f", "text", "-"],
                           input=data, capture_output=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("the live pipe scan did not finish")
    return int(p.stdout.split()[0])


# --------------------------------------------------------------------------- 5. ledger files

def test_billion_laughs_ledger_is_refused(tmp_path: Path):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    bomb = tmp_path / "laughs.yaml"
    bomb.write_text("id: cuda-oom\ntitle: t\n" + "\n".join(levels) + "\n")
    log = tmp_path / "x.log"
    log.write_text(OOM)
    rss, rc, err = peak_mib(["scan", "--ledger", str(bomb), str(log)], timeout=60)
    assert "Traceback" not in err and "internal error" not in err and "MemoryError" not in err, err
    assert "laughs.yaml" in err and "alias" in err, err
    assert rc == 2
    assert rss < 400, rss


def test_oversize_ledger_file_is_refused(tmp_path: Path):
    big = tmp_path / "big.yaml"
    with open(big, "w") as f:
        f.write("id: cuda-oom\ntitle: t\nmatch:\n  any:\n")
        for i in range(400_000):
            f.write(f"    - 'CUDA out of memory {i}'\n")
    log = tmp_path / "x.log"
    log.write_text(OOM)
    p = run_cli(["scan", "--ledger", str(big), str(log)], timeout=60)
    err = no_traceback(p)
    assert p.returncode == 2
    lines = [ln for ln in err.splitlines() if "big.yaml" in ln]
    assert len(lines) == 1 and "MiB" in lines[0], err


# --------------------------------------------------------------------------- 6. CSV formula injection

def test_csv_cells_cannot_start_a_formula(tmp_path: Path):
    run = tmp_path / "=1+1"
    (run / "@w").mkdir(parents=True)
    (run / "-rank0.log").write_text(
        "2026-03-01 12:00:00,000 INFO start\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
        "RuntimeError: =1+2 boom\n")
    (run / "+rank1.log").write_text("2026-03-01 12:00:00,000 INFO start\n" + OOM)
    out = tmp_path / "units.csv"
    p = run_cli(["runs", "-j", "1", "-f", "csv", "-o", str(out), str(run)])
    no_traceback(p)
    for text in (out.read_text(), run_cli(["runs", "-j", "1", "-f", "csv", str(run)]).stdout.decode()):
        rows = list(csv.reader(io.StringIO(text)))
        assert len(rows) >= 3, text
        cells = [c for row in rows for c in row]
        bad = [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
        assert not bad, bad
        assert any(c.endswith("=1+1") for c in cells), cells  # neutralised, not dropped


# --------------------------------------------------------------------------- 7. --model on special files

@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir"])
def test_model_must_be_a_regular_file(tmp_path: Path, special: str):
    if special == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("needs FIFOs")
        target = tmp_path / "model.fifo"
        os.mkfifo(target)
    elif special == "dir":
        target = tmp_path / "model"
        target.mkdir()
    else:
        if not os.path.exists(special):
            pytest.skip(f"no {special}")
        target = Path(special)
    log = tmp_path / "x.log"
    log.write_text(OOM)
    run = tmp_path / "run"
    run.mkdir()
    (run / "rank0.log").write_text(OOM)
    for args in (["scan", "--model", str(target), str(log)], ["runs", "-j", "1", "--model", str(target), str(run)]):
        p = run_cli(args, timeout=60)
        err = no_traceback(p)
        assert p.returncode == 2, err
        assert ("not a regular file" in err or "is a directory" in err) and str(target) in err, err


def test_a_corrupt_model_loses_no_finding_of_a_scan(tmp_path: Path):
    """A corrupt --model is named in one line; the scan carries on with regex signatures and exits 2."""
    model = tmp_path / "model.joblib"
    model.write_bytes(os.urandom(4096))
    log = tmp_path / "x.log"
    log.write_text(OOM)
    p = run_cli(["scan", "--format", "jsonl", "--model", str(model), str(log)], timeout=60)
    err = no_traceback(p)
    assert p.returncode == 2, err
    assert str(model) in err and "regex signatures only" in err and len(err.strip().splitlines()) == 1, err
    found = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    assert any(r.get("family") == "cuda-oom" for r in found), p.stdout


# --------------------------------------------------------------------------- 8. history

def _history_with_junk(tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "run-a"
    run.mkdir()
    (run / "rank0.log").write_text("2026-03-01 12:00:00,000 INFO start\n" + OOM)
    hist = tmp_path / "hist"
    p = run_cli(["runs", "-j", "1", "--history", str(hist), str(run)])
    assert p.returncode == 1, p.stderr
    assert len(list(hist.glob("*.parquet"))) == 1
    (hist / "garbage.parquet").write_bytes(b"PAR1 not really" + os.urandom(512))
    import polars as pl

    pl.DataFrame({"a": [1, 2], "b": ["x", "y"]}).write_parquet(hist / "other-schema.parquet")
    pl.DataFrame({"run": [1, 2], "unit": [3.0, 4.0]}).write_parquet(hist / "wrong-types.parquet")
    return hist, run


def test_history_skips_and_names_bad_files(tmp_path: Path):
    hist, run = _history_with_junk(tmp_path)
    p = run_cli(["stats", "-f", "json", str(hist)])
    err = no_traceback(p)
    assert p.returncode == 0, err
    for bad in ("garbage.parquet", "other-schema.parquet", "wrong-types.parquet"):
        assert bad in err, err
    doc = json.loads(p.stdout)
    assert "cuda-oom" in json.dumps(doc)
    # appending still works, and says which files it skipped
    run2 = tmp_path / "run-b"
    run2.mkdir()
    (run2 / "rank0.log").write_text("2026-03-02 12:00:00,000 INFO start\n" + OOM)
    p = run_cli(["runs", "-j", "1", "--history", str(hist), str(run2)])
    err = no_traceback(p)
    assert p.returncode == 1, err
    assert "garbage.parquet" in err and "1 new row" in err, err
    p = run_cli(["runs", "-j", "1", "--history", str(hist), str(run)])  # already there: not appended twice
    assert "0 new row" in p.stderr.decode(), p.stderr


# --------------------------------------------------------------------------- 9. smaller ones

RLO = "\u202e"


def test_bidi_controls_never_reach_text_or_html(tmp_path: Path):
    evil = f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {RLO}gol.exe 2.00 GiB\n"
    log = tmp_path / f"train{RLO}gol.log"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n" + evil)
    p = run_cli(["scan", "-f", "text", str(log)])
    no_traceback(p)
    text = p.stdout.decode("utf-8")
    assert "cuda-oom" in text
    assert RLO not in text and "\\u202e" in text, text
    run = tmp_path / "run"
    run.mkdir()
    (run / f"rank0{RLO}.log").write_text("2026-03-01 12:00:00,000 INFO start\n"
                                          "Traceback (most recent call last):\n  File \"x.py\", line 1\n" + evil)
    p = run_cli(["runs", "-j", "1", str(run)])
    assert RLO not in p.stdout.decode("utf-8")
    out = tmp_path / "r.html"
    p = run_cli(["report", "-j", "1", "-o", str(out), str(run)])
    no_traceback(p)
    html = out.read_text()
    assert RLO not in html and "&#x202e;" not in html.lower() and "&#8238;" not in html


def test_a_file_that_shrinks_while_scanned_is_reported(tmp_path: Path):
    log = tmp_path / "shrink.log"
    line = "2026-03-01 12:00:00,001 ERROR RuntimeError: CUDA error: an illegal memory access was encountered {}\n"
    with open(log, "w") as f:
        for i in range(300_000):
            f.write("2026-03-01 12:00:00,000 INFO " + "x" * 150 + "\n" + line.format(i))
    size = log.stat().st_size
    assert size > 40 << 20
    # jsonl output goes to a pipe nobody reads yet: the scan stalls on it after a few findings
    proc = subprocess.Popen([*_exe(), "scan", "--signatures", "regex", "-f", "jsonl", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline()
        assert first.startswith(b"{"), proc.stderr.read()
        time.sleep(1.0)
        os.truncate(log, size // 2)
        out, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err_text = err.decode()
    assert "Traceback" not in err_text, err_text
    assert "shrink.log" in err_text and "shrank" in err_text, err_text
    assert proc.returncode == 2


# --------------------------------------------------------------------------- 4b. the regex guard under load

class _PausedOnce:
    """A compiled pattern whose first search is held up by a pause of the process (wall time, no CPU)."""

    def __init__(self, pauses: int) -> None:
        self.pauses = pauses

    def search(self, text: str, timeout: float | None = None, **flags):
        if self.pauses:
            self.pauses -= 1
            time.sleep(timeout or 0.25)  # the wall clock runs out, this thread spends no CPU
            raise TimeoutError("regex timed out")
        return text.find("needle") >= 0 or None


class _Pat:
    def __init__(self, compiled, index: int = 7) -> None:
        self.compiled, self.index, self.location, self.family = compiled, index, "x.yaml:3", "x"


def test_a_pause_of_the_process_does_not_switch_a_pattern_off():
    """Under memory pressure simple literal patterns 'timed out' and were switched off: results depended on load."""
    from sigclass.scan.scanner import _PatternGuard

    guard = _PatternGuard()
    assert guard.search(_Pat(_PausedOnce(pauses=2)), "a needle here") is True
    assert guard.disabled == set() and guard.messages == []


def test_a_pattern_that_is_slow_itself_is_still_switched_off():
    import regex

    from sigclass.scan.scanner import _PatternGuard

    guard = _PatternGuard()
    slow = _Pat(regex.compile(r"(?:a|aa)+$"))
    with pytest.warns(UserWarning, match="timed out"):
        assert guard.search(slow, "a" * 200 + "b") is None
    assert guard.disabled == {7} and "switched off" in guard.messages[0]


def test_a_long_stall_keeps_bounded_evidence_and_counts_every_heartbeat(ledger):
    """Heartbeats after progress stopped extend one stall finding: its line list stays bounded (a list that
    grew with every heartbeat made each extension linear, the scan quadratic) while its count goes on."""
    from sigclass.records import MAX_LINES_KEPT
    from sigclass.scan.scanner import Scanner

    beats = MAX_LINES_KEPT * 3
    lines = [f"{{'loss': 0.5, 'epoch': {i}}}" for i in range(30)]
    for i in range(beats):
        lines += ["INFO heartbeat from the data loader", "x", "x"]
    res = Scanner(ledger, signatures="regex").scan_text("\n".join(lines) + "\n")
    stalls = [f for f in res.findings if f.family == "vllm-engine-hang"]
    assert stalls, [f.family for f in res.findings]
    f = stalls[0]
    assert len(f.lines) <= MAX_LINES_KEPT
    assert f.count >= beats - 10


def test_ids_of_any_length_and_odd_digits_are_read_without_an_internal_error(tmp_path):
    """A shard marker or rank with thousands of digits (int() refuses over 4,300) and a superscript digit
    (str.isdigit() says yes, int() says no) are ordinary log text."""
    import sigclass

    huge = "0" * 5000 + "17"
    text = (f"[shard {huge}] starting\nrank={huge} says hello\n"
            f"[shard {huge}] failed\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    res = sigclass.classify(text, as_text=True)
    assert [f.family for f in res.findings][:1] == ["cuda-illegal-memory-access"]
    from sigclass.runs.layouts import norm_id
    from sigclass.text.workers import norm_worker, number_id

    assert number_id(huge) == "17" and norm_id(huge) == "17" and norm_worker(f"rank{huge}") == "17"
    assert norm_id("²") == "²" and norm_worker("²") == "²"
    assert number_id("1" * 5000) == "1" * 5000


def test_workers_and_units_with_huge_numbers_are_ordered_without_int(tmp_path):
    """Two ranks whose ids have thousands of digits fail: the verdict orders them (numbers in numeric order)
    without int(), which refuses such strings."""
    import sigclass

    a, b = "0" * 5000 + "3", "0" * 5000 + "12"
    text = "".join(f"[rank{w}]: RuntimeError: CUDA error: an illegal memory access was encountered\n" for w in (b, a))
    res = sigclass.classify(text, as_text=True)
    assert res.findings and res.findings[0].family == "cuda-illegal-memory-access"
    from sigclass.outputs.runs_text import id_ranges, natural

    assert sorted(["10", "9", "0" * 5000 + "2"], key=natural) == ["0" * 5000 + "2", "9", "10"]
    assert id_ranges(["4", "5", "6", "1" * 5000]).startswith("4-6, 1")
