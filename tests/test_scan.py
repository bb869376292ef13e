"""The streaming scanner: segmentation, normalisation, facts, roles, folding, bad input.

These use a small fixed ledger (tests/files/ledger_min) so that they test the
scanner, not the shipped pack's current wording.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import zstandard

from sigclass.records import fold
from sigclass.ledger.pack import load_ledger
from sigclass.scan.prefilter import available_engines
from sigclass.scan.scanner import Scanner

from conftest import FILES

OOM_TB = """\
Traceback (most recent call last):
  File "/app/train.py", line 42, in <module>
    loss = model(batch)
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _call_impl
    return forward_call(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB
"""

IMA_ENGINE = """\
(EngineCore_DP0 pid=4242) ERROR 03-23 11:21:16 [core.py:583] EngineCore encountered a fatal error.
(EngineCore_DP0 pid=4242) ERROR 03-23 11:21:16 [core.py:583] Traceback (most recent call last):
(EngineCore_DP0 pid=4242) ERROR 03-23 11:21:16 [core.py:583]   File "/usr/lib/vllm/v1/engine/core.py", line 290, in step
(EngineCore_DP0 pid=4242) ERROR 03-23 11:21:16 [core.py:583]     model_output = self.execute_model(scheduler_output)
(EngineCore_DP0 pid=4242) ERROR 03-23 11:21:16 [core.py:583] torch.AcceleratorError: CUDA error: an illegal memory access was encountered
(EngineCore_DP0 pid=4242) ERROR 03-23 11:21:16 [core.py:583] CUDA kernel errors might be asynchronously reported at some other API call.
(EngineCore_DP0 pid=4242) ERROR 03-23 11:21:16 [core.py:583]
ERROR 03-23 11:21:19 [core_client.py:574] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.
Traceback (most recent call last):
  File "/app/gen.py", line 110, in process_shard
    outputs = llm.generate(prompts)
vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
"""


@pytest.fixture(scope="module")
def mini():
    return load_ledger([FILES / "ledger_min"], shipped=False, strict=True)


@pytest.fixture(scope="module")
def sc(mini):
    return Scanner(mini, signatures="regex")


def fams(res):
    return [f.family for f in res.findings]


def test_traceback_is_one_finding_with_lines(sc):
    res = sc.scan_text("INFO start\n" + OOM_TB + "INFO next epoch\n")
    assert fams(res) == ["cuda-oom"]
    f = res.findings[0]
    assert (f.line, f.end_line) == (2, 7)
    assert f.role == "root" and f.method == "regex"
    assert "Tried to allocate" in f.evidence[-1]


def test_unknown_failure_has_fingerprint_and_groups_repeats(sc):
    a = "Traceback (most recent call last):\n  File \"a.py\", line 3, in f\nKeyError: 'sample_17'\n"
    b = "Traceback (most recent call last):\n  File \"a.py\", line 9, in f\nKeyError: 'sample_99123'\n"
    res = sc.scan_text(a + "INFO ok\n" + b)
    assert fams(res) == ["unknown", "unknown"]
    assert res.findings[0].fingerprint == res.findings[1].fingerprint
    folded = fold(res.findings)
    assert len(folded) == 1 and folded[0].count == 2 and folded[0].lines == [1, 5]


def test_clean_log_with_tempting_words_gives_nothing(sc):
    text = (
        "epoch 3 error_rate=0.000 loss=1.23\n"
        "WARNING retry 1/5 failed, retrying\n"
        "wandb: Network error (TransientError), entering retry loop.\n"
        "server1:117950:118334 [6] NCCL INFO comm 0x7f2240001ca0 rank 6 nranks 32 - Init COMPLETE\n"
        "          8             2     float     sum      -1    12.90    0.00    0.00      0\n"
    )
    assert fams(sc.scan_text(text)) == []


def test_prefix_cache_ima_needs_the_h100_facts(sc):
    h100 = "INFO device cuda:0 -> NVIDIA H100 PCIe\nINFO non-default args: {'enable_prefix_caching': True}\n"
    a100 = "INFO device cuda:0 -> NVIDIA A100-SXM4-80GB\nINFO non-default args: {'enable_prefix_caching': True}\n"
    r1 = sc.scan_text(h100 + IMA_ENGINE)
    r2 = sc.scan_text(a100 + IMA_ENGINE)
    assert fams(r1)[0] == "vllm-h100-prefix-cache-ima"
    assert fams(r2)[0] == "cuda-illegal-memory-access"
    assert r1.findings[0].facts["gpu_model"] == "H100"


def test_secondary_after_root_points_at_it(sc):
    res = sc.scan_text(IMA_ENGINE)
    assert fams(res) == ["cuda-illegal-memory-access", "vllm-engine-dead"]
    root, dead = res.findings
    assert root.role == "root" and dead.role == "secondary"
    assert dead.root == root.pointer()


def test_secondary_alone_is_reported_as_the_first_failure(sc):
    res = sc.scan_text(IMA_ENGINE.split("ERROR 03-23 11:21:19")[1])
    assert fams(res) == ["vllm-engine-dead"] and res.findings[0].role == "root"


def test_interleaved_ranks_are_reassembled(sc):
    tb0 = ["Traceback (most recent call last):", '  File "t.py", line 1, in <module>',
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB"]
    tb1 = ["Traceback (most recent call last):", '  File "t.py", line 7, in step',
           "ValueError: bad shape (3, 4)"]
    lines = []
    for a, b in zip(tb0, tb1):
        lines += [f"[rank0]:{a}", "[rank2]:2026-03-01 12:00:00,000 INFO step 10 loss 1.0", f"[rank1]:{b}"]
    res = sc.scan_text("\n".join(lines) + "\n")
    got = sorted((f.worker, f.family) for f in res.findings)
    assert got == [("0", "cuda-oom"), ("1", "unknown")]


def test_chained_traceback_is_one_block(sc):
    text = (
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        + OOM_TB
    )
    res = sc.scan_text(text)
    assert len(res.findings) == 1 and res.findings[0].family == "cuda-oom"
    assert res.findings[0].line == 1


def test_crlf_ansi_and_progress_bars(sc):
    bar = "Processed prompts:  10%|\u2588         | 64/640 [00:10<01:30]\r" * 3
    text = "\x1b[32mINFO\x1b[0m ok\r\n" + bar + "\r\n" + OOM_TB.replace("\n", "\r\n")
    res = sc.scan_text(text)
    assert fams(res) == ["cuda-oom"]
    assert all("\x1b" not in e and "\r" not in e for e in res.findings[0].evidence)


def test_invalid_utf8_inside_a_traceback(sc, tmp_path: Path):
    p = tmp_path / "bad.log"
    p.write_bytes(OOM_TB.replace("loss = model(batch)", "loss = model(\xff\xfe batch)").encode("latin-1"))
    res = sc.scan(str(p))
    assert fams(res) == ["cuda-oom"]


def test_binary_file_is_reported_not_scanned(sc, tmp_path: Path):
    p = tmp_path / "junk.log"
    p.write_bytes(bytes(range(256)) * 64)
    res = sc.scan(str(p))
    assert res.findings == [] and any("binary" in x for x in res.problems)


def test_truncated_gzip_keeps_findings_before_the_cut(sc, tmp_path: Path):
    body = ("INFO noise line\n" * 2000 + OOM_TB) * 3 + "INFO tail\n" * 50000
    data = gzip.compress(body.encode())
    p = tmp_path / "cut.log.gz"
    p.write_bytes(data[: int(len(data) * 0.6)])
    res = sc.scan(str(p))
    assert fams(res) == ["cuda-oom"] * 3
    assert any("truncated" in x for x in res.problems)


def test_zstd_and_gzip_sources(sc, tmp_path: Path):
    (tmp_path / "a.log.zst").write_bytes(zstandard.ZstdCompressor().compress(OOM_TB.encode()))
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(OOM_TB.encode()))
    assert fams(sc.scan(str(tmp_path / "a.log.zst"))) == ["cuda-oom"]
    assert fams(sc.scan(str(tmp_path / "b.log.gz"))) == ["cuda-oom"]


def test_huge_line_without_newline_costs_no_memory_and_keeps_findings(sc, tmp_path: Path):
    p = tmp_path / "huge.log"
    with open(p, "wb") as fh:
        fh.write(OOM_TB.encode())
        chunk = b"x" * (1 << 20)
        for _ in range(200):  # a 200 MB line with no newline at all
            fh.write(chunk)
    res = sc.scan(str(p))
    assert fams(res) == ["cuda-oom"]
    assert any("longer than 64 KiB" in x for x in res.problems)


def test_one_line_errors_and_counted_families(sc):
    text = "INFO a\n/bin/sh: line 1: 4242 Segmentation fault      (core dumped) python x.py\nINFO b\n"
    assert fams(sc.scan_text(text)) == ["segfault"]
    tok = "".join(f"INFO loading file tokenizer.json from cache item {i}\n" for i in range(2))
    assert fams(sc.scan_text(tok)) == []
    tok = "".join(f"INFO loading file tokenizer.json from cache item {i}\n" for i in range(6))
    res = sc.scan_text(tok)
    assert fams(res) == ["tokenizer-reload-per-call"] and res.findings[0].count == 6


def test_jsonl_events_carry_worker_unit_time_and_source_line(sc, tmp_path: Path):
    import json

    recs = [
        {"ts": "2026-03-01T12:00:00Z", "worker": "gpu3", "shard": 17, "msg": "[shard 17] starting"},
        {"ts": 1772366460, "worker": "gpu3", "shard": 17, "level": "ERROR", "msg": OOM_TB},
    ]
    p = tmp_path / "events.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    res = sc.scan(str(p))
    assert fams(res) == ["cuda-oom"]
    f = res.findings[0]
    assert (f.worker, f.unit, f.line, f.end_line) == ("gpu3", "17", 2, 2)
    assert f.time == "2026-03-01T12:01:00.000Z"
    assert [(m.unit, m.kind, m.line) for m in res.markers] == [("17", "start", 1)]


def test_timestamps_of_every_form(sc):
    from sigclass.text.lines import parse_time

    assert parse_time("2026-03-01T12:34:56.789Z x") == "2026-03-01T12:34:56.789Z"
    assert parse_time("2026-03-01T14:34:56+02:00 x") == "2026-03-01T12:34:56.000Z"
    assert parse_time("2026-03-01 12:34:56,789 INFO x") == "2026-03-01T12:34:56.789Z"
    assert parse_time("INFO 03-01 12:34:56 [core.py:123] x", 2026) == "2026-03-01T12:34:56.000Z"
    assert parse_time("E0301 12:34:56.789012  1234 file.cc:42] x", 2026) == "2026-03-01T12:34:56.789Z"
    assert parse_time("[E301 12:34:56.408271257 ProcessGroupNCCL.cpp:1]", 2026) == "2026-03-01T12:34:56.408Z"
    assert parse_time("[INFO|file.py:12] 2026-03-01 12:34:56,000 >> x") == "2026-03-01T12:34:56.000Z"
    assert parse_time("no time here") is None


def test_lines_without_time_inherit_the_last_one(sc):
    text = "2026-03-01 12:00:00,000 INFO start\nplain line\n" + OOM_TB
    assert sc.scan_text(text).findings[0].time == "2026-03-01T12:00:00.000Z"


@pytest.mark.parametrize("engine", available_engines())
def test_every_engine_gives_the_same_answers(mini, engine):
    text = "INFO device NVIDIA H100\n" + OOM_TB + IMA_ENGINE + "x Segmentation fault (core dumped)\n"
    base = Scanner(mini, signatures="regex", engine="regex").scan_text(text)
    other = Scanner(mini, signatures="regex", engine=engine).scan_text(text)
    key = lambda r: [(f.family, f.line, f.end_line, f.fingerprint) for f in r.findings]  # noqa: E731
    assert key(other) == key(base)


def test_missing_path_is_an_input_error(sc):
    from sigclass.errors import InputError

    with pytest.raises(InputError, match="no such file"):
        sc.scan("/nonexistent/x.log")


def test_an_exception_of_another_family_below_an_exception_s_message_is_a_failure_of_its_own():
    """Two processes' exception lines with a stray line between them were one block, and the second fault was lost."""
    import sigclass

    text = ("INFO step 1\n" * 3 + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            "worker 3 flushing logs\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert [(f.family, f.line) for f in sigclass.classify(text).findings] == [
        ("cuda-oom", 4), ("cuda-illegal-memory-access", 6)]


def test_an_exception_line_inside_one_failure_s_message_stays_in_it():
    """NCCL's own error class under torch's DistBackendError is the same failure's message, not a second one."""
    import sigclass

    text = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:81, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
            "Last error:\n"
            "Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n")
    assert [(f.family, f.line) for f in sigclass.classify(text).findings] == [("shm-exhausted", 1)]
