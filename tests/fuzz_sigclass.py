"""Fuzz targets (hypothesis) for hostile log content: `sigclass.classify(text, as_text=True)` and whole files,
compressed too.

    python tests/fuzz_sigclass.py --seconds 20          # what CI runs (tests/test_fuzz.py)
    python tests/fuzz_sigclass.py --seconds 480         # the long run (figures in tests/README.md)

Inputs are built from the pieces the built-in patterns look for (shard markers, worker prefixes, log
headers, timestamps, exception names, paths, numbers, ANSI escapes, carriage returns) mixed with long runs
of one character, so that a pattern with overlapping repeats meets the input that makes it backtrack.
Each target checks what must hold for any input; the run prints how many inputs were tried and the slowest
one, and fails only when one input takes longer than the hang bound.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import sigclass

HANG_SECONDS = 30.0  # one input taking this long is a hang, on any machine
LINE_CAP = 60_000  # characters: lines are kept up to 64 KiB

PIECES = [
    "[shard 5]", "shard=3", "shard_17", "Shard-2 ", "[shard ", "starting", "done", "failed", "status=",
    "[rank3]:", "[default0]: ", "[1,3]<stderr>:", "3: ", "(RayWorkerWrapper pid=1234, ip=10.0.0.2) ",
    "(EngineCore_DP0 pid=5)", "(pid=77) ", "(VllmWorker rank=2 pid=5640) ", " a=b", ", a=b",
    "2026-03-01 12:00:00,123 ", "2026-03-01T12:00:00.5Z", "+05:30", "INFO 03-01 12:34:56 [core.py:1] ",
    "I0301 12:34:56.789012  1234 file.cc:42] ", "[E301 12:34:56.408271257 ", "ERROR ", "WARNING: ", "[INFO] ",
    "Traceback (most recent call last):", '  File "/app/x.py", line 3, in f', "    y = f(x)",
    "RuntimeError: ", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "ValueError", "Error[", "]: ", "terminate called after throwing an instance of 'c10::Error'", "  what():  ",
    "frame #3: ", "Fatal Python error: ", "Aborted (core dumped)", "Segmentation fault      (core dumped)",
    "NCCL WARN ", "Watchdog caught collective operation timeout", "worker=gpu3", "rank=", "gpu=",
    "/usr/lib/python3/site-packages/", "C:\\Users\\", "0x7fff1234", "deadbeefdeadbeef", "10.0.0.2:29500",
    "1.5e-3", "-12,345.6", "pid 123", "\x1b[31m", "\x1b[0m", "\x1b]0;title\x07", "\x1b]", "\r", "\t",
    "\u202e", "\x00", "\udcff", "é", "█▌", "%|", " 45%|████▌     | 9/20 [00:01<00:02, 4.5it/s]", "Epoch 3",
    "The above exception was the direct cause of the following exception:", "-- Process 2 terminated with",
    "Root Cause (first observed failure):", "  rank      : 3", "{", "}", "\"msg\": ", ";", "|", "(", ")", "[", "]",
]
RUN_CHARS = [" ", "\t", "-", "a", "1", "[", "(", "a=b ", ", ", ".", ":", "/", "\\", "x.", "0", "=", "|", "█"]

runs_of = st.builds(lambda s, n: s * n, st.sampled_from(RUN_CHARS), st.integers(0, 30_000))
piece = st.one_of(st.sampled_from(PIECES), st.text(max_size=12), runs_of)
line = st.lists(piece, max_size=12).map(lambda parts: "".join(parts)[:LINE_CAP])
log_text = st.lists(line, min_size=1, max_size=30).map("\n".join)


class Stats:
    def __init__(self) -> None:
        self.inputs = 0
        self.slowest = 0.0
        self.slowest_what = ""
        self.total = 0.0

    def timed(self, what: str, fn):
        t0 = time.perf_counter()
        out = fn()
        took = time.perf_counter() - t0
        self.inputs += 1
        self.total += took
        if took > self.slowest:
            self.slowest, self.slowest_what = took, what
        assert took < HANG_SECONDS, f"{what} took {took:.1f} s"
        return out


STATS = Stats()


def _describe(text: str) -> str:
    """A short description of an input: its size and its head, printable."""
    return f"{len(text)} chars: {text[:80]!r}"


def _check(result, text_lines: int | None = None) -> None:
    doc = result.to_dict()
    json.dumps(doc, ensure_ascii=False).encode("utf-8")  # no lone surrogates in what goes out
    for f in doc["findings"]:
        assert f["line"] >= 1 and f["end_line"] >= f["line"], f
        if text_lines is not None:
            assert f["end_line"] <= text_lines + 1, (f, text_lines)
        for ev in f["evidence"]:
            assert "\n" not in ev, ev


def classify_text(text: str) -> None:
    res = STATS.timed("text " + _describe(text), lambda: sigclass.classify(text, as_text=True))
    _check(res, text.count("\n") + 1)


KINDS = ["plain", "gz", "zst", "zst-frames", "gz-cut", "zst-cut", "jsonl"]


def _write(folder: Path, data: bytes, kind: str) -> Path:
    import zstandard

    if kind == "plain":
        p = folder / "f.log"
        p.write_bytes(data)
    elif kind in ("gz", "gz-cut"):
        p = folder / "f.log.gz"
        z = gzip.compress(data)
        p.write_bytes(z[: max(10, len(z) * 2 // 3)] if kind == "gz-cut" else z)
    elif kind in ("zst", "zst-cut"):
        p = folder / "f.log.zst"
        z = zstandard.ZstdCompressor().compress(data)
        p.write_bytes(z[: max(4, len(z) * 2 // 3)] if kind == "zst-cut" else z)
    elif kind == "zst-frames":
        p = folder / "f.log.zst"
        half = len(data) // 2
        c = zstandard.ZstdCompressor()
        p.write_bytes(c.compress(data[:half]) + c.compress(data[half:]))
    else:
        p = folder / "f.jsonl"
        lines = data.decode("utf-8", "replace").split("\n")
        p.write_text("\n".join(json.dumps({"msg": x, "rank": i % 3, "ts": "2026-03-01T12:00:00Z"}) if i % 4 else x
                               for i, x in enumerate(lines)))
    return p


def classify_file(text: str, kind: str, folder: Path) -> None:
    data = text.encode("utf-8", "surrogateescape") if "\udcff" in text else text.encode("utf-8", "replace")
    path = _write(folder, data, kind)
    try:
        res = STATS.timed(f"file {kind} " + _describe(text), lambda: sigclass.classify(path))
    except sigclass.InputError as exc:  # allowed: one line that names the file
        assert "\n" not in str(exc) and path.name in str(exc), exc
        return
    _check(res)
    if kind in ("gz", "zst", "zst-frames"):
        plain = sigclass.classify(_write(folder, data, "plain"))
        got = [(f.family, f.line, f.count) for f in res.findings]
        want = [(f.family, f.line, f.count) for f in plain.findings]
        assert got == want, (kind, got, want)


def run(seconds: float, batch: int = 20, base_seed: int | None = None) -> dict:
    """Generate inputs for `seconds`; with `base_seed`, round r draws from seed base_seed + r, so a run (CI's)
    tries the same inputs in the same order on every machine and a failure can be replayed."""
    folder = Path(tempfile.mkdtemp(prefix="sigclass-fuzz-"))
    common = settings(max_examples=batch, deadline=None, database=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))

    def targets(r: int):
        def seeded(fn):
            return seed(base_seed + r)(fn) if base_seed is not None else fn

        @seeded
        @common
        @given(log_text)
        def text_target(text: str) -> None:
            classify_text(text)

        @seeded
        @common
        @given(log_text, st.sampled_from(KINDS))
        def file_target(text: str, kind: str) -> None:
            classify_file(text, kind, folder)

        return text_target, file_target

    # warm up: the ledger, the scanner and the learned model are built once, not timed with the first input
    sigclass.classify("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\nRuntimeError: warm up\n")
    t0 = time.monotonic()
    rounds = 0
    while time.monotonic() - t0 < seconds:
        for target in targets(rounds):
            target()
        rounds += 1
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()
    return {"inputs": STATS.inputs, "rounds": rounds, "seconds": round(time.monotonic() - t0, 1),
            "slowest_seconds": round(STATS.slowest, 3), "slowest_input": STATS.slowest_what,
            "mean_seconds": round(STATS.total / max(1, STATS.inputs), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="keep generating inputs for this long")
    ap.add_argument("--seed", type=int, default=None, help="draw round r from seed SEED + r (default: random)")
    args = ap.parse_args(argv)
    figures = run(args.seconds, base_seed=args.seed)
    print(json.dumps(figures, ensure_ascii=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
