"""Property-based tests: random bytes, random chunk boundaries, random interleavings."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sigclass.scan import reader
from sigclass.ledger.pack import load_ledger
from sigclass.scan.scanner import Scanner

from conftest import FILES

MINI = load_ledger([FILES / "ledger_min"], shipped=False, strict=True)
SC = Scanner(MINI, signatures="regex")

TB = [
    "Traceback (most recent call last):",
    '  File "/app/train.py", line 42, in <module>',
    "    loss = model(batch)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
]

noise_line = st.sampled_from([
    "INFO 03-01 12:00:00 [loggers.py:1] Avg prompt throughput: 100.0 tokens/s",
    "2026-03-01 12:00:00,000 INFO step 10 loss 1.234 error_rate=0.000",
    "Processed prompts:  10%|\u2588         | 64/640 [00:10<01:30]\rProcessed prompts:  20%|\u2588\u2588",
    "WARNING retrying request (1/3)",
    "",
    "   indented noise",
    "server1:1:2 [0] NCCL INFO Init COMPLETE",
    "\x1b[32mINFO\x1b[0m coloured",
])

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def block_size(n: int):
    old = reader.BLOCK
    reader.BLOCK = n
    try:
        yield
    finally:
        reader.BLOCK = old


def scan_bytes(data: bytes, chunk: int):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(data)
        with block_size(chunk):
            return SC.scan(str(p))


@SETTINGS
@given(st.binary(max_size=20000), st.integers(min_value=1, max_value=5000))
def test_random_bytes_never_raise(data, chunk):
    res = scan_bytes(data, chunk)
    assert isinstance(res.findings, list)


@SETTINGS
@given(st.lists(st.text(max_size=200), max_size=200), st.integers(min_value=1, max_value=3000))
def test_random_text_never_raises(lines, chunk):
    res = scan_bytes("\n".join(lines).encode("utf-8", "replace"), chunk)
    assert isinstance(res.findings, list)


@SETTINGS
@given(
    st.lists(noise_line, max_size=80),
    st.lists(noise_line, max_size=80),
    st.integers(min_value=16, max_value=4096),
)
def test_traceback_anywhere_in_noise_is_found_once_whatever_the_chunking(before, after, chunk):
    text = "\n".join([*before, *TB, *after]) + "\n"
    res = scan_bytes(text.encode(), chunk)
    assert [f.family for f in res.findings] == ["cuda-oom"]
    assert res.findings[0].line == len(before) + 1


@SETTINGS
@given(st.data(), st.integers(min_value=16, max_value=4096))
def test_interleaved_workers_do_not_break_a_traceback(data, chunk):
    other = data.draw(st.lists(st.sampled_from([
        "[rank1]:2026-03-01 12:00:00,000 INFO step 1 loss 1.0",
        "[rank2]:Processed prompts:  10%|\u2588  | 64/640",
        "[rank3]:WARNING slow step",
    ]), max_size=60))
    # merge rank0's traceback lines into the others' lines at random positions, keeping each order
    mine = [f"[rank0]:{x}" for x in TB]
    merged: list[str] = []
    i = j = 0
    while i < len(mine) or j < len(other):
        take_mine = j >= len(other) or (i < len(mine) and data.draw(st.booleans()))
        if take_mine:
            merged.append(mine[i])
            i += 1
        else:
            merged.append(other[j])
            j += 1
    res = scan_bytes(("\n".join(merged) + "\n").encode(), chunk)
    assert [(f.family, f.worker) for f in res.findings] == [("cuda-oom", "0")]
