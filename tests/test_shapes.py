"""Failures printed without a Python traceback (scan/shapes.py): every shape's lines that must match and must
not, on every prefilter engine; launcher-only exits and other reports as `unknown` findings when nothing else
explains them, and never a second finding beside a fault that was found; stable fingerprints."""

from __future__ import annotations

import re

import pytest

from sigclass.ledger.pack import load_ledger
from sigclass.scan.prefilter import available_engines
from sigclass.scan.scanner import Scanner
from sigclass.scan.shapes import FAULTS, REPORTS, report_of, starts_fault
from sigclass.text.lines import split_line
from sigclass.vocab import Role

from conftest import FILES

SHAPES = FAULTS + REPORTS


@pytest.fixture(scope="module")
def mini():
    return load_ledger([FILES / "ledger_min"], shipped=False, strict=True)


@pytest.fixture(scope="module")
def shipped():
    return Scanner(load_ledger(), signatures="regex")


def _hits(shape, line: str) -> bool:
    """Whether this shape takes the line: its trigger and its confirm pattern match, and (a report) the line
    says something failed (an exit code other than 0 or one a family names)."""
    ln = split_line(line)
    if not re.search(shape.trigger, line):
        return False
    if not any(shape.confirm.search(t) for t in (ln.content.strip(), ln.body.strip())):
        return False
    return starts_fault(ln) if shape in FAULTS else report_of(ln, 1, None) is not None


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_every_shape_has_examples_both_ways(shape):
    assert shape.examples and shape.counter
    for x in shape.examples:
        assert _hits(shape, x), x
    for x in shape.counter:
        assert not _hits(shape, x), x


def test_shape_names_are_unique():
    assert len({s.name for s in SHAPES}) == len(SHAPES)


@pytest.mark.parametrize("engine", available_engines())
def test_each_fault_example_is_one_unknown_finding_on_every_engine(mini, engine):
    sc = Scanner(mini, signatures="regex", engine=engine)
    for shape in FAULTS:
        for x in shape.examples:
            res = sc.scan_text(f"INFO step 1 ok\n{x}\n")
            assert [f.family for f in res.findings] == ["unknown"], (shape.name, x)
            assert res.findings[0].line == 2


@pytest.mark.parametrize("engine", available_engines())
def test_each_report_example_alone_is_one_unknown_finding_on_every_engine(mini, engine):
    sc = Scanner(mini, signatures="regex", engine=engine)
    for shape in REPORTS:
        for x in shape.examples:
            res = sc.scan_text(f"INFO step 1 ok\n" + f"{x}\n" * shape.least)
            assert [(f.family, f.line) for f in res.findings] == [("unknown", 2)], (shape.name, x)


@pytest.mark.parametrize("engine", available_engines())
def test_counter_examples_stay_quiet_on_every_engine(mini, engine):
    sc = Scanner(mini, signatures="regex", engine=engine)
    text = "".join(f"{x}\n" for s in SHAPES for x in s.counter
                   if "terminate called after" not in x and "non-zero exit status" not in x)
    assert sc.scan_text(text).findings == []


# a rank exits 1 and its launcher says only that (DeepSpeed's launcher; nothing of the rank's own)
DEEPSPEED_EXIT_ONLY = """\
[2024-03-20 20:31:29,210] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3353707
[2024-03-20 20:31:29,269] [ERROR] [launch.py:321:sigkill_handler] ['/env/bin/python', '-u', 'train.py', '--local_rank=4'] exits with return code = 1
"""

# torchelastic stops the siblings, then names the rank that failed
TORCHRUN_EXIT_ONLY = """\
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 226262 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 226263) of binary: /env/bin/python
"""

# the same, but the rank's own fault was printed: the launcher's summary is part of it
TORCHRUN_AFTER_OOM = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/src/train.py", line 12, in <module>
[rank1]:     loss.backward()
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 226262 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 226263) of binary: /env/bin/python
make: *** [Makefile:12: train] Error 1
"""

# the scheduler cancelled the job: the non-zero exits after it are what the stop did
SCHEDULER_STOP = """\
slurmstepd: error: *** JOB 1234 ON node1 CANCELLED AT 2024-01-01T10:00:00 ***
srun: error: node1: task 0: Exited with exit code 1
"""


def test_launcher_exit_alone_is_an_unknown_of_that_worker(shipped):
    res = shipped.scan_text(DEEPSPEED_EXIT_ONLY)
    # the kills above the exit line are the launcher's teardown: that failure's victim, as torchelastic's are
    assert [(f.family, f.worker) for f in res.findings if f.role != Role.SECONDARY] == [("unknown", "4")]
    assert [f.family for f in res.findings if f.role == Role.SECONDARY] == ["process-killed-by-signal"]
    assert res.verdict.cause.family == "unknown" and res.verdict.cause.worker == "4"


def test_teardown_before_the_exit_is_its_victim(shipped):
    res = shipped.scan_text(TORCHRUN_EXIT_ONLY)
    roots = [(f.family, f.worker) for f in res.findings if f.role != Role.SECONDARY]
    assert roots == [("unknown", "1")]
    stop = next(f for f in res.findings if f.family == "process-killed-by-signal")
    assert stop.role == Role.SECONDARY and stop.root["line"] == 2


def test_launcher_summary_after_a_found_fault_is_no_second_finding(shipped):
    res = shipped.scan_text(TORCHRUN_AFTER_OOM)
    assert "unknown" not in {f.family for f in res.findings}
    assert res.findings[0].family == "cuda-oom"


def test_exit_after_a_stop_from_outside_is_no_unknown(shipped):
    res = shipped.scan_text(SCHEDULER_STOP)
    assert [f.family for f in res.findings] == ["process-killed-by-signal"]


def test_one_report_finding_per_worker(shipped):
    text = ('ERROR 03-18 09:02:03 [serving_chat.py:133] Error with model object=\'error\' message=\'The model `a` '
            'does not exist.\' type=\'NotFoundError\' param=None code=404\n'
            'INFO:     10.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 404 Not Found\n') * 3
    res = shipped.scan_text(text)
    assert [(f.family, f.line) for f in res.findings] == [("unknown", 1)]


# Open MPI's two words for one rank's death: the help text names no rank, the `mpirun noticed` line does
MPIRUN_PAIR = """\
[1,1]<stderr>:[node-1:00093] *** End of error message ***
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 0 on node node-1 exited on signal 6 (Aborted).
"""


def test_a_wrapper_s_report_without_a_worker_is_the_named_worker_s_failure(shipped):
    res = shipped.scan_text(MPIRUN_PAIR)
    assert [(f.family, f.worker, f.line) for f in res.findings] == [("unknown", "1", 6)]


def test_signal_exit_codes_are_left_to_their_families():
    for line in ("Process finished with exit code 137", "trainer-1 exited with code 139", "exit status 143"):
        assert report_of(split_line(line), 1, None) is None, line
    assert report_of(split_line("Process finished with exit code 134"), 1, None) is not None  # SIGABRT: no family


def test_fingerprint_stable_across_runs(shipped):
    a = shipped.scan_text("F0315 12:00:00.123456  4242 tensor.cc:42] Check failed: dims == 2 (3 vs. 2)\n"
                          "*** Check failure stack trace: ***\n")
    b = shipped.scan_text("some noise first\nF0402 09:13:07.000001  977 tensor.cc:57] Check failed: dims == 2 (4 vs. 2)\n"
                          "*** Check failure stack trace: ***\n")
    assert a.findings[0].fingerprint == b.findings[0].fingerprint
    x = shipped.scan_text(TORCHRUN_EXIT_ONLY)
    y = shipped.scan_text(TORCHRUN_EXIT_ONLY.replace("226263", "91").replace("/env/bin", "/opt/conda/bin"))
    assert [f.fingerprint for f in x.findings] == [f.fingerprint for f in y.findings]
    other = shipped.scan_text("F0315 12:00:00.123456  4242 tensor.cc:42] Check failed: ptr != nullptr\n")
    assert other.findings[0].fingerprint != a.findings[0].fingerprint


def test_worker_from_the_prefix(shipped):
    res = shipped.scan_text("[rank3]: thread 'main' panicked at src/lib.rs:10:5:\n[rank3]: index out of bounds\n")
    assert [(f.family, f.worker) for f in res.findings] == [("unknown", "3")]


def test_dead_ray_worker_then_the_task_error_it_relays(shipped):
    res = shipped.scan_text(
        "2023-01-17 17:21:35,472\tWARNING worker.py:1829 -- A worker died or was killed while executing a task by an "
        "unexpected system error. To troubleshoot the problem, check the logs for the dead worker.\n"
        "2023-01-17 17:21:35,509\tERROR trial_runner.py:980 -- Trial TorchTrainer_b13e7_00000: Error processing event.\n"
        "ray.exceptions.RayTaskError(RuntimeError): ray::TrainTrainable.train() (pid=1876, ip=10.0.0.1)\n")
    roots = [f.family for f in res.findings if f.role != Role.SECONDARY]
    assert roots[0] == "unknown"


CLEAN = """\
INFO:     10.0.0.1:5 - "GET /health HTTP/1.1" 404 Not Found
INFO:     10.0.0.1:5 - "GET /health HTTP/1.1" 503 Service Unavailable
INFO:     10.0.0.1:5 - "POST /v1/completions HTTP/1.1" 429 Too Many Requests
INFO:     10.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK
INFO 03-01 12:00:00 [async_llm.py:406] Aborted request chatcmpl-42.
ERROR:root:Download failed: ConnectionError: reset by peer, retrying in 5s
INFO download complete
WARNING: Could not find 'nvidia-smi', skipping GPU info
trainer-1 exited with code 0
Process finished with exit code 0
"""


def test_clean_look_alikes_stay_quiet(shipped):
    assert shipped.scan_text(CLEAN).findings == []


def test_a_report_names_the_rank_it_reports(shipped):
    res = shipped.scan_text("MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n")
    assert [(f.family, f.worker) for f in res.findings] == [("unknown", "3")]


def test_a_report_that_needs_repeats_waits_for_them(shipped):
    beat = ("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'n1_187281_0' has failed to "
            "send a keep-alive heartbeat to the rendezvous 'none' due to an error of type RendezvousConnectionError.\n")
    assert shipped.scan_text(beat * 2).findings == []
    assert [(f.family, f.line) for f in shipped.scan_text(beat * 3).findings] == [("unknown", 1)]


def test_a_fault_shape_is_an_error_of_its_own_for_the_verdict(shipped):
    # a worker's panic outranks what the others print after it (an NCCL error is most often a victim's)
    res = shipped.scan_text("[rank2]: thread 'main' panicked at src/lib.rs:3:9:\n[rank2]: index out of bounds\n"
                            "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                            "remote process exited or there was a network error, NCCL version 2.21.5\n")
    assert (res.verdict.cause.family, res.verdict.cause.worker) == ("unknown", "2")
    assert res.verdict.cause.confidence == 0.5


def _glog_dump(signal_line: str) -> str:
    # glog's failure-signal handler (InstallFailureSignalHandler), each line under glog's own prefix as PaddlePaddle
    # logs it: `*** Aborted at` first whatever the signal, then `PC:`, then the line naming the signal
    head = "W0312 08:15:02.{:06d}  4242 init.cc:234] "
    body = ['*** Aborted at 1710231302 (unix time) try "date -d @1710231302" if you are using GNU date ***',
            "PC: @                0x0 (unknown)", signal_line,
            "    @     0x7f3a1c2e4980 (unknown)", "    @     0x7f3a1bf6fe6d (unknown)"]
    return "".join(head.format(17 + i) + b + "\n" for i, b in enumerate(body))


@pytest.mark.parametrize("signal_line, family", [
    ("*** SIGSEGV (@0x110) received by PID 4242 (TID 0x7f3a1c3f0740) stack trace: ***", "segfault"),
    ("*** SIGBUS (@0x7f3a0142f000) received by PID 4242 (TID 0x7f3a1c3f0740) from PID 21164032; stack trace: ***",
     "shm-exhausted"),
    ("*** SIGFPE (@0x7f3a1c2e4980) received by PID 4242 (TID 0x7f3a1c3f0740) from PID 4242; stack trace: ***", "unknown"),
])
def test_a_glog_failure_signal_dump_is_the_signal_s_failure_alone(shipped, signal_line, family):
    # the `*** Aborted at` line says only that some signal came: no unknown failure of its own in front of the signal's
    res = shipped.scan_text(_glog_dump(signal_line))
    roots = [f.family for f in res.findings if f.role != Role.SECONDARY]
    assert roots == [family]
    assert res.verdict.cause.family == family and res.verdict.cause.line == 3


# rich's logging handler (accelerate's launcher) prints a record under the last one's time column, so the records
# after the first start with spaces: each is a record of its own, not a frame of the failure on the line below it
RICH_SIGHUP = """\
[16:21:34] WARNING  Received 1 death signal, shutting down workers    api.py:729
           WARNING  Sending process 2928786 closing signal SIGHUP     api.py:698
           WARNING  Sending process 2928787 closing signal SIGHUP     api.py:698
           WARNING  Sending process 2928788 closing signal SIGHUP     api.py:698
"""

# tqdm's bars start with spaces too: the step counter above a kernel assertion is no frame of it
TQDM_THEN_ASSERT = """\
  6%|▌         | 88/1398 [1:31:02<25:44:02, 70.72s/it]
  6%|▋         | 89/1398 [1:32:11<25:28:13, 70.05s/it]
../aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: [134,0,0], thread: [1,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
"""


def test_indented_log_records_are_not_frames_of_the_record_below(shipped):
    found = shipped.scan_text(RICH_SIGHUP).findings
    assert found, "the launcher's death-signal records are a failure"
    # no finding reaches back over the record above its own evidence (before, each record took the ones above it
    # as frames and was reported again as the block grew: lines 2-2, 2-3, 2-4): one finding per record, each on
    # its own line (a stop is an event each time, not a condition that goes on: no record joins another's finding)
    assert [(f.line, f.end_line) for f in found] == [(n, n) for n in range(1, 5)]


# a NaN loss reported again a few steps on is one condition going on: one finding, those steps its lines; far
# apart, two findings (a record's finding takes only evidence near it)
NAN_RECORD = "Warning: loss became nan at step 5, skipping batch\n"


def test_a_nan_loss_record_again_soon_is_one_finding_and_far_apart_two(shipped):
    def nan_lines(gap: int) -> list[list[int]]:
        text = NAN_RECORD + "".join(f"step {i} done\n" for i in range(gap)) + NAN_RECORD
        return [f.lines for f in shipped.scan_text(text).findings if f.family == "nan-loss"]

    assert nan_lines(3) == [[1, 5]]
    assert nan_lines(80) == [[1], [82]]


# torch's `Error(s) in loading state_dict` list pasted without its RuntimeError line (corpus/real: DeepSpeed 5570,
# EasyOCR 879), against mmcv's loader logging the same words flush left as a warning while the run goes on
TORCH_STATE_DICT_LIST = (
    "[rank1]:\tsize mismatch for model.layers.21.mlp.up_proj.weight: copying a param with shape torch.Size([2816, 1024])"
    " from checkpoint, the shape in current model is torch.Size([11008, 4096]).\n"
    "[rank1]:\tsize mismatch for model.layers.21.mlp.down_proj.weight: copying a param with shape torch.Size([1024, 2816])"
    " from checkpoint, the shape in current model is torch.Size([4096, 11008]).\n"
)
MMCV_LOADER_WARNING = (
    "2021-03-01 10:00:00,123 - mmdet - WARNING - The model and loaded state dict do not match exactly\n\n"
    "size mismatch for bbox_head.fc_cls.weight: copying a param with shape torch.Size([81, 1024]) from checkpoint, the"
    " shape in current model is torch.Size([21, 1024]).\n"
    "2021-03-01 10:00:05,123 - mmdet - INFO - Epoch [1][50/1000]\tlr: 2.000e-02, loss: 1.2034\n"
)


def test_a_state_dict_list_without_its_error_line_is_one_failure(shipped):
    res = shipped.scan_text(TORCH_STATE_DICT_LIST)
    assert [(f.family, f.worker) for f in res.findings] == [("unknown", "1")]
    assert res.findings[0].evidence[0].startswith("size mismatch for model.layers.21.mlp.up_proj.weight")
    assert shipped.scan_text(MMCV_LOADER_WARNING).findings == []
