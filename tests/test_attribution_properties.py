"""Property tests: the verdict of a multi-worker log does not depend on how the workers' streams interleave."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sigclass

# Worker streams in the shapes torchrun prints (each list is one stream, in its own order).
OOM_RANK2 = [
    "[rank2]: Traceback (most recent call last):",
    '[rank2]:   File "/w/train.py", line 88, in <module>',
    "[rank2]:     loss = model(batch).loss",
    "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
]
WATCHDOG = [
    "[rank{r}]:[E1120 14:47:16.{ns} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 6000{r}0 "
    "milliseconds before timing out.",
    "[rank{r}]:[E1120 14:47:16.{ns} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Exception "
    "(either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.",
]
LAUNCHER = [
    "W1120 14:47:20.551000 7710 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 7788 closing signal SIGTERM",
    "W1120 14:47:20.552000 7710 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 7789 closing signal SIGTERM",
]


def _streams() -> list[list[str]]:
    out = [list(OOM_RANK2), list(LAUNCHER)]
    for r in (0, 1, 3):
        out.append([x.format(r=r, ns=f"{100000000 + r:09d}") for x in WATCHDOG])
    return out


@st.composite
def interleavings(draw, streams: list[list[str]]) -> list[str]:
    """Any merge of the streams that keeps each stream's own order."""
    cursors = [0] * len(streams)
    out: list[str] = []
    while any(c < len(s) for c, s in zip(cursors, streams)):
        live = [i for i, (c, s) in enumerate(zip(cursors, streams)) if c < len(s)]
        i = draw(st.sampled_from(live))
        out.append(streams[i][cursors[i]])
        cursors[i] += 1
    return out


def _victims(v) -> list[tuple[str, str]]:
    return sorted((x.family or "", x.worker or "") for x in v.victims)


def _key(v) -> tuple:
    c = v.cause
    return (c.family, c.worker, c.fingerprint) if c is not None else None


@functools.lru_cache(maxsize=1)
def _base():
    return sigclass.classify("\n".join(line for s in _streams() for line in s) + "\n").verdict


def test_the_base_order_names_the_oom_rank():
    assert _key(_base()) is not None and _key(_base())[:2] == ("cuda-oom", "2")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings(_streams()))
def test_shuffling_worker_streams_keeps_the_verdict(lines):
    v = sigclass.classify("\n".join(lines) + "\n").verdict
    assert _key(v) == _key(_base())
    assert _victims(v) == _victims(_base())



# vLLM's multiprocessing workers titled by their TP rank (`(VllmWorker TP3 pid=403)`): TP3 runs out of memory, the
# other workers' collectives then time out in the watchdog, and the engine core reports the dead worker
VLLM_OOM_TP3 = [
    "(VllmWorker TP3 pid=403) ERROR 08-25 12:24:17 [multiproc_executor.py:596] WorkerProc hit an exception.",
    "(VllmWorker TP3 pid=403) ERROR 08-25 12:24:17 [multiproc_executor.py:596] Traceback (most recent call last):",
    "(VllmWorker TP3 pid=403) ERROR 08-25 12:24:17 [multiproc_executor.py:596] torch.OutOfMemoryError: CUDA out of "
    "memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
]
VLLM_WATCHDOG = [
    "(VllmWorker TP{r} pid=40{r}) [rank{r}]:[E825 12:34:17.{ns} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=91, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, "
    "Timeout(ms)=600000) ran for 60000{r} milliseconds before timing out.",
]


def _vllm_streams() -> list[list[str]]:
    return [list(VLLM_OOM_TP3)] + [[x.format(r=r, ns=f"{100000000 + r:09d}") for x in VLLM_WATCHDOG] for r in (0, 1, 2)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings(_vllm_streams()))
def test_shuffling_vllm_tp_worker_streams_keeps_the_verdict(lines):
    v = sigclass.classify("\n".join(lines) + "\n").verdict
    assert (v.cause.family, v.cause.worker) == ("cuda-oom", "3")

# Two root faults on two ranks, each with its own time: the earlier one is the cause whatever the file order.
EARLY_ASSERT_RANK5 = [
    "2024-11-20 14:37:16 [rank5]: Traceback (most recent call last):",
    '2024-11-20 14:37:16 [rank5]:   File "/w/train.py", line 88, in <module>',
    "2024-11-20 14:37:16 [rank5]:     logits = model(batch)",
    "2024-11-20 14:37:16 [rank5]: RuntimeError: CUDA error: device-side assert triggered",
]
LATE_OOM_RANK1 = [
    "2024-11-20 14:39:02 [rank1]: Traceback (most recent call last):",
    '2024-11-20 14:39:02 [rank1]:   File "/w/train.py", line 90, in <module>',
    "2024-11-20 14:39:02 [rank1]:     loss.backward()",
    "2024-11-20 14:39:02 [rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([EARLY_ASSERT_RANK5, LATE_OOM_RANK1]))
def test_time_not_file_order_picks_the_cause(lines):
    v = sigclass.classify("\n".join(lines) + "\n").verdict
    assert (v.cause.family, v.cause.worker) == ("cuda-device-side-assert", "5")
    assert [(x.family, x.worker) for x in v.independent] == [("cuda-oom", "1")]


def test_jsonl_prints_one_verdict_per_source_after_its_last_finding(tmp_path):
    a = tmp_path / "a.log"
    b = tmp_path / "b.log"
    a.write_text("\n".join(line for s in _streams() for line in s) + "\n")
    b.write_text("\n".join(LATE_OOM_RANK1) + "\n")
    proc = subprocess.run([sys.executable, "-m", "sigclass", "scan", "--format", "jsonl", str(a), str(b)],
                          capture_output=True, text=True, timeout=300)
    recs = [json.loads(x) for x in proc.stdout.splitlines()]
    kinds = [(r.get("kind", "finding"), r["source"]) for r in recs]
    va = kinds.index(("verdict", str(a)))
    vb = kinds.index(("verdict", str(b)))
    assert all(k == ("finding", str(a)) for k in kinds[:va])
    assert all(k == ("finding", str(b)) for k in kinds[va + 1:vb])
    assert recs[vb]["cause"]["worker"] == "1"


def test_runs_names_the_rank_that_failed_first(tmp_path):
    run = tmp_path / "job"
    run.mkdir()
    (run / "train.log").write_text("\n".join(LATE_OOM_RANK1 + EARLY_ASSERT_RANK5) + "\n")
    res = sigclass.analyze_run(run, n_jobs=1)
    first = min(res.roots, key=lambda r: r.time or "")
    assert (first.family, first.worker) == ("cuda-device-side-assert", "5")
    assert {(r.family, r.worker) for r in res.roots} == {("cuda-device-side-assert", "5"), ("cuda-oom", "1")}
