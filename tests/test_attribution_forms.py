"""Root attribution on more launchers' and servers' formats: SGLang's scheduler prefix in all its forms, MPICH's
(Hydra's) rankless BAD TERMINATION table, Open MPI's `[host:pid]` lines, and the messages in which a framework
says that a failure began in another process (those are victims, whatever is printed first).

The worker forms follow the format strings of the frameworks' own source (SGLang's `configure_logger` prefix,
Hydra's pmiserv cleanup table, opal's `[%s:%05d] ` prefix, Horovod's shutdown error, c10d's monitoredBarrier).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
import pytest

import sigclass
from sigclass.text.workers import norm_worker, worker_in_text

from conftest import elastic_row, elastic_signal_row, elastic_summary
from test_attribution_properties import interleavings


def _cause(text: str) -> tuple[str | None, str | None]:
    v = sigclass.classify(text).verdict
    c = v.cause if v is not None else None
    return (c.family, norm_worker(c.worker)) if c is not None else (None, None)


# --------------------------------------------------------------------------- SGLang

@pytest.mark.parametrize("line, worker", [
    ("[2025-08-29 20:35:50 DP2 TP2 EP2 PP0] Scheduler hit an exception: Traceback (most recent call last):", "2"),
    ("[2026-06-27 08:55:14 PP2 ATTN_CP3 TP3 EP3] Scheduler hit an exception: Traceback (most recent call last):", "3"),
    # no tensor parallelism: the data- and pipeline-parallel ranks are the worker, as printed
    ("[2025-05-02 10:11:12 DP1 PP1] Scheduler hit an exception: Traceback (most recent call last):", "DP1 PP1"),
    ("DP0 PP1] Scheduler hit an exception: Traceback (most recent call last):", "DP0 PP1"),
    # the scheduler's process title in a native frame
    ("frame #44: + 0x29ac5d (0x55ba19095c5d in sglang::scheduler_DP1_PP1)", "DP1 PP1"),
    ("frame #45: PyEval_EvalCode + 0x9f (0x55ba1909539f in sglang::scheduler_TP0)", "0"),
])
def test_sglang_names_its_scheduler_in_every_form_of_its_prefix(line, worker):
    assert worker_in_text([line]) == worker


def test_a_plain_timestamp_in_brackets_is_not_an_sglang_worker():
    assert worker_in_text(["[2025-08-08 09:09:09] Received sigquit from a child process."]) is None


SGLANG_DP_PP = [
    "[2025-05-02 10:11:12 DP0 PP0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, ",
    "[2025-05-02 10:11:12 DP1 PP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2582, in run_scheduler_process',
    "    scheduler.event_loop_pp()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of 79.10 GiB "
    "of which 1.02 GiB is free.",
    "",
    "[2025-05-02 10:11:13] Received sigquit from a child process. It usually means the child failed.",
]


def test_an_sglang_worker_without_tensor_parallelism_is_named_by_its_ranks():
    assert _cause("\n".join(SGLANG_DP_PP) + "\n") == ("cuda-oom", norm_worker("DP1 PP1"))


# --------------------------------------------------------------------------- MPICH (Hydra)

# https://github.com/je-santos/MPLBM-UT/issues/92 (the reporter: "This problem is caused by a lack of memory")
HYDRA_RANKLESS_KILL = """\
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 92248 RUNNING AT fzh-desktop
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
"""


def test_hydra_exit_code_9_under_a_rankless_row_is_a_kill():
    assert _cause(HYDRA_RANKLESS_KILL) == ("host-oom-killed", None)


def test_hydra_exit_string_names_the_signal():
    text = ("===================================================================================\n"
            "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
            "=   PID 9665 RUNNING AT gpu-node-1\n"
            "=   EXIT CODE: 139\n"
            "=   CLEANING UP REMAINING PROCESSES\n"
            "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n"
            "===================================================================================\n"
            "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)\n")
    assert _cause(text) == ("segfault", None)


def test_a_ranked_hydra_row_keeps_its_rank_and_exit_status():
    text = ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
            "=   RANK 3 PID 27494 RUNNING AT node1\n"
            "=   KILLED BY SIGNAL: 9 (Killed)\n")
    assert _cause(text) == ("host-oom-killed", "3")


# --------------------------------------------------------------------------- Open MPI's own lines

OMPI_SEGV = [
    "[gpu-node-07:04211] *** Process received signal ***",
    "[gpu-node-07:04211] Signal: Segmentation fault (11)",
    "[gpu-node-07:04211] Signal code: Address not mapped (1)",
    "[gpu-node-07:04211] Failing at address: 0x10",
    "[gpu-node-07:04211] *** End of error message ***",
]
WATCHDOG_RANK0 = [
    "[1,0]<stderr>:[E1120 14:57:16.100000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for "
    "600012 milliseconds before timing out.",
]


def test_open_mpi_host_pid_prefix_names_the_process():
    assert _cause("\n".join(OMPI_SEGV) + "\n") == ("segfault", norm_worker("gpu-node-07:04211"))


def test_a_source_location_in_brackets_is_not_a_host_pid_prefix():
    from sigclass.text.lines import split_line

    assert split_line("[socket.cpp:663] [c10d] The client socket has failed to connect").worker is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([OMPI_SEGV, WATCHDOG_RANK0]))
def test_open_mpi_segfault_outranks_a_watchdog_in_any_interleaving(lines):
    assert _cause("\n".join(lines) + "\n") == ("segfault", norm_worker("gpu-node-07:04211"))


# UCX's fatal-signal handler on rank 7's process while the others still set up NCCL's channels (the NCCL INFO
# prefix `host:pid:tid [dev]` names the same process), then torchrun's word of the exit
UCX_SIGBUS = [
    "09677202c889:5283:5699 [7] NCCL INFO 24 coll channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
    "[09677202c889:5283 :0:5704] Caught signal 7 (Bus error: nonexistent physical address)",
    "09677202c889:5276:5696 [1] NCCL INFO Channel 21/0 : 1[101d0] -> 0[101c0] via P2P/IPC/read",
    "==== backtrace (tid:   5704) ====",
    " 0 0x0000000000043090 killpg()  ???:0",
    " 1 0x000000000008170d ncclGroupEnd()  ???:0",
    "=================================",
    "09677202c889:5277:5697 [2] NCCL INFO Channel 21/0 : 2[201c0] -> 1[101d0] via P2P/IPC/read",
]


def test_ucx_s_prefix_names_the_process_that_caught_the_signal():
    assert _cause("\n".join(UCX_SIGBUS) + "\n") == ("shm-exhausted", norm_worker("09677202c889:5283:5699 [7]"))
    assert norm_worker("[09677202c889:5283 :0:5704]") == norm_worker("09677202c889:5283")


def test_the_ucx_process_not_its_launcher_s_exit_line_is_the_cause():
    """The launcher's row for the same pid is its report of the exit: a victim, and the process keeps its own name
    (a container's host name may start with a digit)."""
    lines = ["[92c90024c028:157  :4:419] Caught signal 11 (Segmentation fault: address not mapped to object at "
             "address (nil))",
             "[2024-05-06 07:29:45,438] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -11) "
             "local_rank: 0 (pid: 157) of binary: /usr/bin/python"]
    v = sigclass.classify("\n".join(lines) + "\n").verdict
    assert (v.cause.family, v.cause.worker, v.cause.line) == ("segfault", "92c90024c028:157", 1)
    assert [(x.family, x.line) for x in v.victims] == [("segfault", 2)]


# --------------------------------------------------------------------------- victims that say so

HOROVOD_SHUTDOWN_RANK0 = [
    "[1,0]<stderr>:Traceback (most recent call last):",
    '[1,0]<stderr>:  File "/opt/conda/lib/python3.6/site-packages/horovod/torch/mpi_ops.py", line 436, in synchronize',
    "[1,0]<stderr>:    mpi_lib.horovod_torch_wait_and_clear(handle)",
    "[1,0]<stderr>:RuntimeError: Horovod has been shut down. This was caused by an exception on one of the ranks or an "
    "attempt to allreduce, allgather or broadcast a tensor after one of the ranks finished execution. If the shutdown "
    "was caused by an exception, you should see the exception in the log before the first shutdown message.",
]
VALUEERROR_RANK3 = [
    "[1,3]<stderr>:Traceback (most recent call last):",
    '[1,3]<stderr>:  File "train.py", line 38, in <module>',
    "[1,3]<stderr>:    batch = collate(items)",
    "[1,3]<stderr>:ValueError: could not broadcast input array from shape (3,224,224) into shape (3,256,256)",
]
MPIRUN_FIRST_RANK0 = [
    "--------------------------------------------------------------------------",
    "mpirun detected that one or more processes exited with non-zero status, thus causing",
    "the job to be terminated. The first process to do so was:",
    "",
    "  Process name: [[50371,1],0]",
    "  Exit code:    1",
    "--------------------------------------------------------------------------",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([HOROVOD_SHUTDOWN_RANK0, VALUEERROR_RANK3, MPIRUN_FIRST_RANK0]))
def test_horovod_shutdown_is_a_victim_of_the_rank_that_raised(lines):
    # the rank that raised may exit after the one whose shutdown error mpirun saw first
    assert _cause("\n".join(lines) + "\n") == ("unknown", "3")


BARRIER_VICTIM_RANK0 = [
    "[rank0]: Traceback (most recent call last):",
    '[rank0]:   File "train.py", line 40, in <module>',
    "[rank0]:     dist.monitored_barrier()",
    "[rank0]: RuntimeError: Rank 0 successfully reached monitoredBarrier, but received errors while waiting for "
    "send/recv from rank 2. Please check rank 2 logs for faulty rank.",
]
KEYERROR_RANK2 = [
    "[rank2]: Traceback (most recent call last):",
    '[rank2]:   File "train.py", line 31, in <module>',
    "[rank2]:     label = sample['label']",
    "[rank2]: KeyError: 'label'",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([BARRIER_VICTIM_RANK0, KEYERROR_RANK2]))
def test_monitored_barrier_points_at_the_faulty_rank(lines):
    assert _cause("\n".join(lines) + "\n") == ("unknown", "2")


# --------------------------------------------------------------------------- more launchers' exit lines and prefixes

@pytest.mark.parametrize("line, worker, code", [
    # text-generation-inference's shard manager (the tracing span's `rank=` follows the message)
    ("2024-08-11T09:36:31.932556Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to "
     "shutdown with signal 9 rank=1", "1", -9),
    ("2024-08-11T09:36:31.932556Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to "
     "shutdown with signal 11", None, -11),
    # PaddlePaddle's launcher (Container.__str__)
    ("Container rank 2 status failed cmd ['/usr/bin/python3', '-u', 'tools/train.py'] code -9 log log/workerlog.2",
     "2", -9),
])
def test_more_launchers_exit_lines(line, worker, code):
    from sigclass.text.workers import exits_in_line

    assert [(e.worker, e.code) for e in exits_in_line(line, 1, None)] == [(worker, code)]


@pytest.mark.parametrize("line, worker", [
    ("[pod/pytorchjob-worker-3/pytorch] RuntimeError: CUDA error: an illegal memory access was encountered",
     "pytorchjob-worker-3"),
])
def test_kubectl_prefix_names_the_pod(line, worker):
    from sigclass.text.lines import split_line

    assert split_line(line).worker == worker


# --------------------------------------------------------------------------- a launcher's teardown

SRUN_LABELLED_RANK3 = [
    "3: Traceback (most recent call last):",
    '3:   File "train.py", line 12, in <module>',
    "3:     cfg = load(args.config)",
    "3: FileNotFoundError: [Errno 2] No such file or directory: 'cfg.yaml'",
]
SRUN_REPORTS = [
    "srun: error: gpu-node-1: task 3: Exited with exit code 1",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    "srun: error: gpu-node-1: tasks 0-2: Killed",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([SRUN_LABELLED_RANK3, SRUN_REPORTS]))
def test_tasks_srun_kills_after_a_failed_task_are_its_teardown(lines):
    v = sigclass.classify("\n".join(lines) + "\n").verdict
    assert (v.cause.family, v.cause.worker) == ("unknown", "3")
    assert {(x.family, x.worker) for x in v.victims} >= {("process-killed-by-signal", w) for w in "012"}


def test_srun_out_of_memory_after_a_failed_task_stays_a_fault_of_its_own():
    text = ("srun: error: gpu-node-1: task 3: Exited with exit code 1\n"
            "srun: error: gpu-node-2: task 5: Out Of Memory\n")
    v = sigclass.classify(text).verdict
    assert (v.cause.family, v.cause.worker) == ("host-oom-killed", "5")


def test_hydra_kills_after_a_failed_rank_are_its_cleanup():
    block = ("===================================================================================\n"
             "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
             "=   RANK {r} PID 24473{r} RUNNING AT node0009\n"
             "=   {what}\n"
             "===================================================================================\n")
    text = block.format(r=2, what="EXIT CODE: 1") + "".join(block.format(r=r, what="KILLED BY SIGNAL: 9 (Killed)")
                                                           for r in (0, 1, 3))
    v = sigclass.classify(text).verdict
    assert (v.cause.family, v.cause.worker) == ("unknown", "2")


# --------------------------------------------------------------------------- a root printed without a prefix

TORCHRUN_UNPREFIXED_ROOT = [
    "W1120 14:47:20.551000 7710 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 7788 closing "
    "signal SIGTERM",
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 30, in <module>',
    '    ids = batch["input_ids"]',
    "KeyError: 'input_ids'",
    "E1120 14:47:21.000000 7710 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: "
    "0 (pid: 7787) of binary: /usr/bin/python",
]
WATCHDOG_RANK1 = [
    "[rank1]:[E1120 14:47:16.100000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for "
    "600012 milliseconds before timing out.",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([TORCHRUN_UNPREFIXED_ROOT, WATCHDOG_RANK1]))
def test_a_traceback_after_the_launcher_s_sigterm_line_is_a_worker_s_root(lines):
    # torchelastic's SIGTERM line raises nothing: the unprefixed traceback after it is the failed rank's own, and
    # the launcher's teardown line does not make it a part of the shutdown
    assert _cause("\n".join(lines) + "\n") == ("unknown", "0")


UNPREFIXED_WATCHDOG = WATCHDOG_RANK1[0].removeprefix("[rank1]:")
UNPREFIXED_KEYERROR = TORCHRUN_UNPREFIXED_ROOT[1:5]


def test_a_traceback_after_a_cpp_watchdog_record_is_another_process_s():
    # ProcessGroupNCCL's glog record is followed by C++ frames, never by a Python traceback: with no prefixes
    # (torchrun without --tee) the traceback next to it is the rank that failed, not the watchdog's
    assert _cause("\n".join([UNPREFIXED_WATCHDOG, *UNPREFIXED_KEYERROR]) + "\n")[0] == "unknown"


def test_the_launcher_s_own_signal_exception_after_its_sigterm_lines_stays_the_stop():
    # torchelastic told to stop: it stops its workers and raises its own SignalException (its traceback follows)
    text = "\n".join([
        "W0227 21:35:32.106000 140 torch/distributed/elastic/agent/server/api.py:723] Received 15 death signal, "
        "shutting down workers",
        "W0227 21:35:32.106000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 165 closing "
        "signal SIGTERM",
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/api.py", line 62, '
        "in _terminate_process_handler",
        "    raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", sigval=sigval)",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 140 got signal: 15",
    ]) + "\n"
    assert _cause(text)[0] == "process-killed-by-signal"


# --------------------------------------------------------------------------- pdsh's bare host names

@pytest.mark.parametrize("line, worker", [
    ("gpu1504: [2023-03-24 10:26:51,118] [INFO] [launch.py:142:main] WORLD INFO DICT: {'gpu1504': [0]}", "gpu1504"),
    ("node01: Traceback (most recent call last):", "node01"),
    ("python3: can't open file '/w/train.py': [Errno 2] No such file or directory", None),
    ("step100: loss 3.2514", None),
    ("node01: [rank3]: Traceback (most recent call last):", "3"),
    # a cluster's cabinet/rack/node names (letters and numbers in turn), and what is not one
    ("c05r2n11: RuntimeError: HIP out of memory. Tried to allocate 576.00 MiB (GPU 3; 15.98 GiB total capacity)",
     "c05r2n11"),
    ("x1000c0s0b0n0: Traceback (most recent call last):", "x1000c0s0b0n0"),
    ("e4m3: max 448.0", None),
])
def test_a_bare_host_name_before_a_line_is_pdsh_s(line, worker):
    from sigclass.text.lines import split_line

    assert split_line(line).worker == worker


# --------------------------------------------------------------------------- a stop from outside and its victims

AGENT_STOPPED = [
    "W0616 16:14:04.056000 3791882 site-packages/torch/distributed/elastic/agent/server/api.py:739] Received 2 death "
    "signal, shutting down workers",
    "W0616 16:14:04.059000 3791882 site-packages/torch/distributed/elastic/multiprocessing/api.py:1012] Sending "
    "process 3792016 closing signal SIGINT",
]
ENGINE_DEAD_AFTER = [
    "(APIServer pid=3792016) ERROR 06-16 16:14:05 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
]


def test_a_victim_printed_after_the_launcher_was_told_to_stop_is_the_stop_s():
    v = sigclass.classify("\n".join(AGENT_STOPPED + ENGINE_DEAD_AFTER) + "\n").verdict
    assert v.cause.family == "process-killed-by-signal"


def test_a_watchdog_that_began_waiting_before_the_stop_is_not_its_victim():
    # ran for 600012 ms: it began waiting ten minutes before Ctrl-C (the hang is why the run was stopped)
    watchdog = ("[rank1]:[E0616 16:14:05.100000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
                "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
    v = sigclass.classify("\n".join(AGENT_STOPPED + [watchdog]) + "\n").verdict
    assert (v.cause.family, v.cause.worker) == ("nccl-watchdog-timeout", "1")


# --------------------------------------------------------------------------- srun's padded and heterogeneous labels

# Slurm's `_build_label` (src/api/step_io.c): `"%*d: "` with the width of the largest task id, `"P%u %*d: "` for a
# component of a heterogeneous job
@pytest.mark.parametrize("line, worker", [
    (" 3: Traceback (most recent call last):", "3"),  # 10 to 99 tasks
    ("  7: RuntimeError: CUDA error: an illegal memory access was encountered", "7"),  # 100 to 999 tasks
    ("12: Traceback (most recent call last):", "12"),
    ("P1  3: Traceback (most recent call last):", "P1:3"),
    ("P0 12: Traceback (most recent call last):", "P0:12"),
    # a Rust backtrace's frame numbers are four wide (tokenizers, a training excerpt): not labels
    ("   0: rust_begin_unwind", None),
    ("  10: tokenizers::tokenizer::PyTokenizer::train", None),
])
def test_srun_labels_padded_to_the_task_width_name_the_task(line, worker):
    from sigclass.text.lines import split_line

    assert split_line(line).worker == worker


OOM_TASK = [
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 88, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB "
    "of which 1.02 GiB is free.",
]
WATCHDOG_TASK = ("[E1120 14:47:16.100000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                 "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=interleavings([[f" 3: {x}" for x in OOM_TASK],
                           [f" 0: {WATCHDOG_TASK.format(r=0)}"], [f"11: {WATCHDOG_TASK.format(r=11)}"]]))
def test_a_padded_srun_task_s_fault_is_the_cause_however_the_tasks_interleave(data):
    assert _cause("\n".join(data) + "\n") == ("cuda-oom", "3")


# --------------------------------------------------------------------------- colour codes as pastes keep them

# a training excerpt (ray-project/ray#31828): Ray's dim cyan prefix whose ESC bytes the web page dropped
RAY_BARE_SGR = ("[2m[36m(RayTrainWorker pid=1942, ip=100.97.252.234)[0m 17-Jan-23 17:21:19 [Worker:0] [INFO] "
                "Returning from train func!!")
# a training excerpt (vllm-project/vllm#33297): vLLM's prefix in caret notation, after a CI runner's timestamp
VLLM_CARET = ("[2026-01-26T17:25:37Z] ^[[0;36m(EngineCore_DP0 pid=738)^[[0;0m ^[[31mERROR^[[0m ^[[90m01-26 "
              "09:25:37^[[0m ^[[90m[core.py:935]^[[0m ValueError: Free memory on device cuda:0")


def test_a_prefix_in_colour_codes_without_their_escape_byte_is_read():
    from sigclass.text.lines import split_line

    ln = split_line(RAY_BARE_SGR)
    assert (ln.stream.kind, ln.worker) == ("RayTrainWorker", "1942")
    assert ln.content.startswith("17-Jan-23 17:21:19 [Worker:0] [INFO] Returning")


def test_a_prefix_in_caret_notation_is_read():
    from sigclass.text.lines import split_line

    ln = split_line(VLLM_CARET)
    assert (ln.stream.kind, ln.stream.id) == ("EngineCore_DP0", "738")
    assert "^[" not in ln.content and ln.content.endswith("ValueError: Free memory on device cuda:0")


@pytest.mark.parametrize("line", [
    "[5m] elapsed, [3 items] left",  # brackets that are no colour code
    "[rank0]: [INFO] step 10",
])
def test_text_in_brackets_that_is_not_a_colour_code_is_kept(line):
    from sigclass.text.lines import clean

    assert clean(line) == line


# --------------------------------------------------------------------------- the process the OOM killer took

# the kernel's report (mm/oom_kill.c, `__oom_kill_process`): `Out of memory: Killed process %d (%s) total-vm:...`
KERNEL_KILLED_5556 = ("[Tue Nov 19 14:40:01 2024] Out of memory: Killed process 5556 (python) total-vm:81234567kB, "
                      "anon-rss:61234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:120000kB oom_score_adj:0")
def _elastic_row(i: int, rank: int, pid: int, sig: int = 9, name: str = "SIGKILL") -> str:
    """One failure of torchelastic's ChildFailedError table, ended by a signal."""
    return elastic_signal_row(i, rank, pid, sig, name, time="2024-11-19_14:47:20", host="node")


ELASTIC_TABLE_TWO_KILLED = ("Traceback (most recent call last):\n"
                            + elastic_summary(_elastic_row(0, 0, 5555), _elastic_row(1, 3, 5556)))


def test_the_pid_the_kernel_killed_names_the_worker_over_the_launcher_s_first_observed():
    # both ranks exited -9; the launcher lists rank 0 as its first observed failure, the kernel took pid 5556
    text = "[rank0]: step 100 loss 1.2\n" + KERNEL_KILLED_5556 + "\n" + ELASTIC_TABLE_TWO_KILLED
    assert _cause(text) == ("host-oom-killed", "3")


def test_the_pid_the_kernel_killed_is_a_ray_worker_s_that_printed_nothing():
    text = "\n".join([
        "(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 11-19 14:39:00 step 1",
        "(RayWorkerWrapper pid=4243, ip=10.0.0.2) INFO 11-19 14:39:00 step 1",
        "[Tue Nov 19 14:40:01 2024] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
        "global_oom,task_memcg=/user.slice,task=ray::RayWorkerW,pid=4243,uid=1000",
        "[Tue Nov 19 14:40:01 2024] Out of memory: Killed process 4243 (ray::RayWorkerW) total-vm:81234567kB, "
        "anon-rss:61234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:120000kB oom_score_adj:0",
        "(RayWorkerWrapper pid=4242, ip=10.0.0.2) [E1119 14:50:01.100000000 ProcessGroupNCCL.cpp:616] [Rank 0] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
    ]) + "\n"
    assert _cause(text) == ("host-oom-killed", "4243")


def test_a_killed_pid_no_line_maps_to_a_rank_names_no_worker():
    # ranks named by prefix, and no launcher line that says which pid was which rank: the pid is not a rank
    text = "\n".join(["[rank0]: step 100 loss 1.2", "[rank1]: step 100 loss 1.2", KERNEL_KILLED_5556]) + "\n"
    assert _cause(text) == ("host-oom-killed", None)


# --------------------------------------------------------------------------- a worker named inside a message

@pytest.mark.parametrize("line, worker", [
    # ProcessGroupNCCL's log prefix with a process group (`[PG 1 Rank 1]`, and since 2.4 its id and GUID)
    ("[PG 1 Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST)", "1"),
    ("[PG ID 2 PG GUID 3(TP) Rank 5] Exception (either an error or timeout) detected by watchdog at work: 808", "5"),
    # Lightning's `rank_prefixed_message` (`[rank: {rank}] {message}`), its SIGTERM notice
    ("[rank: 3] Received SIGTERM: 15", "3"),
    # JAX's multi-process runtime
    ("jax.errors.JaxRuntimeError: INTERNAL: process_index=3 failed to connect", "3"),
    # Lightning's per-rank start-up lines say which rank prints, they are no failure of a rank
    ("LOCAL_RANK: 3 - CUDA_VISIBLE_DEVICES: [0,1,2,3]", None),
    ("Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/8", None),
])
def test_a_worker_a_message_names(line, worker):
    assert worker_in_text([line]) == worker


def test_nemo_s_log_header_is_a_header():
    from sigclass.text.lines import split_line

    ln = split_line("[NeMo W 2024-05-01 10:00:00 nemo_logging:349] /usr/lib/python3/dist-packages/x.py:12: UserWarning: y")
    assert ln.header.startswith("[NeMo W 2024-05-01") and ln.body.startswith("/usr/lib/python3")


@pytest.mark.parametrize("stamp", ["[2025-05-20T10:47:04Z] ", "2025-05-20T10:47:04.123456789Z ", "2025-05-20 10:47:04,512 "])
def test_a_vllm_header_after_a_runner_s_timestamp_is_one_header(stamp):
    """A CI runner's (or `docker logs -t`') time before vLLM's own header: the frames under it stay frames."""
    from sigclass.ledger.pack import load_ledger
    from sigclass.scan.scanner import Scanner
    from sigclass.text.lines import split_line

    head = stamp + "ERROR 05-20 03:47:04 [core.py:489] "
    ln = split_line(head + '  File "/vllm/v1/engine/core.py", line 480, in run_engine_core')
    assert ln.header == head and ln.body.startswith('  File "/vllm/')
    text = "\n".join(head + x for x in [
        "EngineCore failed to start.", "Traceback (most recent call last):",
        '  File "/vllm/v1/engine/core.py", line 480, in run_engine_core', "    engine_core = EngineCoreProc()",
        "                  ^^^^^^^^^^^^^^^^", '  File "/vllm/v1/executor/multiproc_executor.py", line 202, in get_response',
        "    raise RuntimeError(",
        "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered"]) + "\n"
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert [(f.family, f.line) for f in res.findings if f.role != "secondary"] == [("cuda-illegal-memory-access", 2)]


# --------------------------------------------------------------------------- vLLM V1's worker names

# vLLM V1 names a worker by its parallel ranks (`setup_worker_process_title_and_logging`: `Worker`, then `_DP{r}`,
# `_PP{r}`, `_TP{r}`, `_EP{r}` where that size is over 1) and prefixes its lines `({name} pid={pid}) `; the worker's
# exception is what its EngineCore and the API server then report
VLLM_TP1_IMA = [
    "(Worker_TP1 pid=4242) ERROR 11-19 14:40:01 [multiproc_executor.py:671] WorkerProc hit an exception.",
    "(Worker_TP1 pid=4242) ERROR 11-19 14:40:01 [multiproc_executor.py:671] Traceback (most recent call last):",
    '(Worker_TP1 pid=4242) ERROR 11-19 14:40:01 [multiproc_executor.py:671]   File "/vllm/v1/executor/'
    'multiproc_executor.py", line 666, in worker_busy_loop',
    "(Worker_TP1 pid=4242) ERROR 11-19 14:40:01 [multiproc_executor.py:671] torch.AcceleratorError: CUDA error: an "
    "illegal memory access was encountered",
]
VLLM_ENGINE_AFTER = [
    "(EngineCore_DP0 pid=4200) ERROR 11-19 14:40:02 [core.py:710] EngineCore encountered a fatal error.",
    "(EngineCore_DP0 pid=4200) ERROR 11-19 14:40:02 [core.py:710] Traceback (most recent call last):",
    "(EngineCore_DP0 pid=4200) ERROR 11-19 14:40:02 [core.py:710] RuntimeError: Worker failed with error 'CUDA error: "
    "an illegal memory access was encountered', please check the stack trace above for the root cause",
]
VLLM_API_AFTER = [
    "(APIServer pid=4100) ERROR 11-19 14:40:02 [async_llm.py:480] AsyncLLM output_handler failed.",
    "(APIServer pid=4100) ERROR 11-19 14:40:02 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=interleavings([VLLM_TP1_IMA, VLLM_ENGINE_AFTER, VLLM_API_AFTER,
                           ["(Worker_TP0 pid=4241) INFO 11-19 14:40:00 [gpu_model_runner.py:1] step"]]))
def test_a_vllm_v1_worker_s_fault_is_the_cause_not_its_engine_s_report(data):
    assert _cause("\n".join(data) + "\n") == ("cuda-illegal-memory-access", "4242")


# --------------------------------------------------------------------------- how long a victim had waited

@pytest.mark.parametrize("waited", [
    # ProcessGroupNCCL's heartbeat monitor (`handleStall`): the watchdog itself was stuck for 8 minutes
    "[rank1]:[E0616 16:14:05.100000000 ProcessGroupNCCL.cpp:1423] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
    "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.",
    # Gloo's unbound buffer: `Timed out waiting {timeout}ms for recv operation to complete`
    "[rank1]:[E0616 16:14:05.100000000 unbound_buffer.cc:81] [/pytorch/third_party/gloo/gloo/transport/tcp/"
    "unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete",
])
def test_a_wait_that_began_before_the_stop_is_not_the_stop_s_victim(waited):
    v = sigclass.classify("\n".join(AGENT_STOPPED + [waited]) + "\n").verdict
    assert v.cause.family != "process-killed-by-signal" and v.cause.worker == "1"


def test_a_wait_longer_than_any_clock_is_read_as_no_wait():
    # `ran for` with more digits than a time span holds: the failure keeps the time it was printed, no error
    text = ("[rank0]:[E1120 14:47:16.100 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "999999999999999999999999 milliseconds before timing out.\n[rank1]: RuntimeError: CUDA error: an illegal "
            "memory access was encountered\n")
    assert _cause(text) == ("cuda-illegal-memory-access", "1")


# --------------------------------------------------------------------------- a process's prefix inside a rank's

@pytest.mark.parametrize("line, worker", [
    # inside a rank's prefix the rank names the worker (mpirun's, torchrun's), also for Open MPI's own `[host:pid]`
    ("[rank0]:[node01:04211] Signal: Segmentation fault (11)", "0"),
    # NCCL's own `host:pid:tid [dev]` lines stay the stream they are printed in (the Python traceback that follows
    # them is the same process's)
    ("gpu-node-3:2345:2411 [1] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'", None),
])
def test_a_process_s_prefix_inside_a_rank_s_keeps_the_rank(line, worker):
    from sigclass.text.lines import split_line

    assert split_line(line).worker == worker


# --------------------------------------------------------------------------- a launcher's first observed failure

def test_torchelastic_s_report_names_the_failure_it_observed_first_when_nothing_else_tells():
    # every rank aborted at once and printed nothing: the table's `Root Cause (first observed failure)` row is
    # the best word there is (its first row is just the first of the others)
    text = "Traceback (most recent call last):\n" + elastic_summary(
        _elastic_row(0, 3, 7003, 6, "SIGABRT"),
        _elastic_row(1, 1, 7001, 6, "SIGABRT") + _elastic_row(2, 2, 7002, 6, "SIGABRT"), script="tools/train.py", width=56)
    assert _cause(text) == ("unknown", "3")


# --------------------------------------------------------------------------- srun's teardown

# Slurm's srun (`_handle_max_wait`, `_print_task_exits`): `srun: error: %s: task%s %s: Exited with exit code %d`, then
# the step is terminated and the other tasks are reported `Killed`, several at once
SRUN_ONE_FAILED_OTHERS_KILLED = """\
srun: error: gpu-a17: task 6: Exited with exit code 1
srun: launch/slurm: _step_signal: Terminating StepId=5123.0
slurmstepd: error: *** STEP 5123.0 ON gpu-a17 CANCELLED AT 2024-03-02T10:11:12 ***
srun: error: gpu-a17: tasks 0-5,7: Killed
srun: error: gpu-a18: tasks 8-15: Killed
srun: Force Terminated StepId=5123.0
"""


def test_the_tasks_srun_kills_after_one_failed_are_its_teardown_not_an_oom():
    assert _cause(SRUN_ONE_FAILED_OTHERS_KILLED) == ("unknown", "6")


def test_a_task_srun_reports_out_of_memory_after_another_failed_is_still_an_oom():
    text = SRUN_ONE_FAILED_OTHERS_KILLED.replace("tasks 8-15: Killed", "tasks 8-15: Out Of Memory")
    assert _cause(text)[0] == "host-oom-killed"


@pytest.mark.parametrize("label, got", [("1,12", "12"), ("[1,12]<stderr>:", "12"), ("[1,3]", "3")])
def test_open_mpi_s_job_and_rank_name_the_rank(label, got):
    assert norm_worker(label) == got


def test_a_step_the_scheduler_cancelled_with_no_task_failed_before_is_a_stop():
    text = ("slurmstepd: error: *** STEP 5123.0 ON gpu-a17 CANCELLED AT 2024-03-02T10:11:12 DUE TO TIME LIMIT ***\n"
            "srun: error: gpu-a17: tasks 0-7: Killed\n")
    assert _cause(text)[0] == "process-killed-by-signal"


# --------------------------------------------------------------------------- Ray's relayed error in colour

# Ray's RayTaskError prints the remote process title in cyan (`colorama.Fore.CYAN ... Fore.RESET`); a training
# excerpt (ray-project/ray#31828) keeps the codes without their ESC byte
@pytest.mark.parametrize("line", [
    "ray.exceptions.RayTaskError(RuntimeError): [36mray::TrainTrainable.train()[39m (pid=1876, ip=100.97.252.234, "
    "repr=TorchTrainer)",
    "ray.exceptions.RayTaskError(RuntimeError): \x1b[36mray::TrainTrainable.train()\x1b[39m (pid=1876, "
    "ip=100.97.252.234, repr=TorchTrainer)",
    "ray.exceptions.RayTaskError(RuntimeError): ray::TrainTrainable.train() (pid=1876, ip=100.97.252.234)",
])
def test_a_relayed_ray_error_names_its_process_in_colour_or_not(line):
    from sigclass.text.workers import RELAYED_FROM

    assert worker_in_text([line]) == "1876" and RELAYED_FROM.search(line)["w"] == "1876"



# --------------------------------------------------------------------------- JAX's coordination service

# every surviving task stops when the coordination service finds one unhealthy (xla's `client.h`: `Terminating process
# because the JAX distributed service detected fatal errors. This most likely indicates that another task died`),
# srun's label naming each task's lines
JAX_PEER_DIED = [
    " 0: F0926 17:26:32.075587  157988 client.h:77] Terminating process because the JAX distributed service detected "
    "fatal errors. This most likely indicates that another task died; see the other task logs for more details. "
    "absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):",
    " 0: /job:jax_worker/replica:0/task:3",
    " 0: The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, "
    "eviction) to debug further.",
]
JAX_TASK3_FAILED = [
    " 3: Traceback (most recent call last):",
    ' 3:   File "/w/train.py", line 88, in <module>',
    " 3: ValueError: the batch has 7 examples, not a multiple of the 8 devices",
]


def test_jax_s_coordination_service_names_the_task_it_found_unhealthy():
    assert worker_in_text(["/job:jax_worker/replica:0/task:3"]) == "3"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=interleavings([JAX_PEER_DIED, JAX_TASK3_FAILED]))
def test_a_jax_task_stopped_for_a_dead_peer_is_that_peer_s_victim(data):
    assert _cause("\n".join(data) + "\n") == ("unknown", "3")


@pytest.mark.parametrize("label, got", [("default3", "3"), ("[default3]:", "3")])
def test_torchelastic_s_role_prefix_names_the_local_rank(label, got):
    assert norm_worker(label) == got


def test_slurm_s_step_daemon_naming_its_node_is_no_pdsh_host():
    # slurmstepd's `slurmstepd-<node>: error: ...` (Slurm 21.08 on): the node, not a worker's stream; the task srun
    # reports out of memory is the worker
    from sigclass.text.lines import split_line

    assert split_line("slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411.0.").worker is None
    text = ("slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411.0. Some of your processes may have "
            "been killed by the cgroup out-of-memory handler.\nsrun: error: gpu20-15: task 2: Out Of Memory\n")
    assert _cause(text) == ("host-oom-killed", "2")


# --------------------------------------------------------------------------- NCCL's own prefix, Ray actors with a path

NCCL_INIT_FAILURE = """\
gpu-node-3:4410:4512 [1] NCCL INFO Channel 00/02 :    0   1
gpu-node-3:4411:4513 [2] misc/nvmlwrap.cc:187 NCCL WARN nvmlDeviceGetHandleByPciBusId() failed: Not Found
gpu-node-3:4411:4513 [2] NCCL INFO init.cc:1012 -> 2
gpu-node-3:4411:4411 [2] NCCL INFO init.cc:1929 -> 2
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    dist.barrier()
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5
"""


@pytest.mark.parametrize("worker, same", [
    ("gpu-node-3:4411:4513 [2]", "gpu-node-3:4411"), ("10-0-4-11:62452:62548 [0]", "10-0-4-11:62452"),
])
def test_nccl_s_host_pid_tid_prefix_is_its_process(worker, same):
    assert norm_worker(worker) == norm_worker(same)
    assert norm_worker(worker) != norm_worker(worker.replace(":4411:", ":4410:").replace(":62452:", ":62453:"))


def test_nccl_s_warning_names_the_process_that_failed():
    line = "gpu-node-3:4411:4513 [2] misc/nvmlwrap.cc:187 NCCL WARN nvmlDeviceGetHandleByPciBusId() failed: Not Found"
    assert norm_worker(worker_in_text([line])) == norm_worker("gpu-node-3:4411")
    assert worker_in_text(["gpu-node-3:4411:4513 [2] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>"]) is not None
    assert worker_in_text(["node:12:34 [1] is not NCCL's line"]) is None
    family, worker = _cause(NCCL_INIT_FAILURE)
    assert family == "nccl-error" and worker == norm_worker("gpu-node-3:4411")


def test_a_ray_actor_named_with_a_path_is_a_worker_prefix():
    from sigclass.text.lines import split_line

    ln = split_line("(model_worker/7 pid=20331) ncclRemoteError: A call failed possibly due to a network error")
    assert ln.prefix_kind == "ray" and ln.stream.id == "20331" and ln.body.startswith("ncclRemoteError")


@pytest.mark.parametrize("whole", [True, False])
def test_alike_exits_of_every_rank_take_the_launcher_s_first_observed(whole):
    """Every rank exited 1 at once, their errors out of view: the table's Root Cause row, printed last, is the cause
    (with its header, and in a paste that starts inside the Failures list)."""
    tb = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    failures = "".join(elastic_row(i, i, 69811 + i, 1, tb) for i in (1, 2, 3))
    text = elastic_summary(elastic_row(0, 0, 69811, 1, tb), failures)
    if not whole:
        text = text[text.index("  host      : node1\n  rank      : 1"):]
    assert _cause(text) == ("unknown", "0")


def test_a_report_that_points_at_the_root_cause_above_is_that_root_s_victim():
    res = sigclass.classify("\n".join(VLLM_TP1_IMA + VLLM_ENGINE_AFTER + VLLM_API_AFTER) + "\n")
    roots = [f for f in res.findings if f.role == "root"]
    assert [(f.family, f.line) for f in roots] == [("cuda-illegal-memory-access", 2)]
    engine = next(f for f in res.findings if f.family == "cuda-illegal-memory-access" and f.line > len(VLLM_TP1_IMA))
    assert engine.role == "secondary" and engine.root["line"] == 2


# SGLang under Docker Compose: the service column, then the scheduler's own record header naming its TP rank
COMPOSE_SGLANG = [
    "sglang  | [2025-06-06 10:23:37 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    'sglang  |   File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2501, in run_scheduler_process',
    "sglang  |     scheduler.event_loop_overlap()",
    "sglang  | TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'",
    "sglang  | [2025-06-06 10:23:37] Received sigquit from a child process. It usually means the child failed.",
]


def test_a_rank_inside_a_compose_service_s_lines_names_the_process():
    assert _cause("\n".join(COMPOSE_SGLANG) + "\n") == ("unknown", "1")


def test_a_compose_service_whose_lines_name_no_rank_is_the_worker():
    line = "vllm-1  | ERROR 03-06 06:49:30 [core.py:123] RuntimeError: CUDA error: an illegal memory access was encountered"
    assert _cause(line + "\n") == ("cuda-illegal-memory-access", norm_worker("vllm-1"))
