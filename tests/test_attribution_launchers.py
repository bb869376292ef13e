"""Root attribution on real launcher output: which worker a verdict names, for the forms each launcher prints.

Every excerpt is quoted byte for byte from the public source named above it (a training-split thread of the
labelled corpus); the verdict is read through the public API. Format-level cases (a launcher's own format
string, from its source) are at the end, on `exits_in_line` and `norm_worker`.
"""

from __future__ import annotations

import pytest

import sigclass
from sigclass.ledger.pack import load_ledger
from sigclass.scan.scanner import Scanner
from sigclass.text.workers import exits_in_line, norm_worker, worker_in_text


def _cause(text: str):
    v = sigclass.classify(text, as_text=True).verdict
    assert v is not None
    return v.cause


def _assert_cause(text: str, family: str, worker: str) -> None:
    c = _cause(text)
    assert c is not None, "no cause"
    assert (c.family, norm_worker(c.worker)) == (family, norm_worker(worker)), c


# https://github.com/markxio/learning-model-of-life/blob/main/bionemo-framework/README.md (every rank runs out
# of memory the same way; rank 3 printed first)
EVO2 = """\
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 75.13 GiB. GPU 3 has a total capacity of 79.25 GiB of which 3.02 GiB is free. Process 1142987 has 76.22 GiB memory in use. Of the allocated memory 75.13 GiB is allocated by PyTorch, and 18.76 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 75.13 GiB. GPU 1 has a total capacity of 79.25 GiB of which 3.02 GiB is free. Process 1142985 has 76.22 GiB memory in use. Of the allocated memory 75.13 GiB is allocated by PyTorch, and 18.76 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 75.13 GiB. GPU 2 has a total capacity of 79.25 GiB of which 3.02 GiB is free. Process 1142986 has 76.22 GiB memory in use. Of the allocated memory 75.13 GiB is allocated by PyTorch, and 18.76 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 75.13 GiB. GPU 0 has a total capacity of 79.25 GiB of which 3.02 GiB is free. Process 1142984 has 76.22 GiB memory in use. Of the allocated memory 75.13 GiB is allocated by PyTorch, and 18.76 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""


def test_equal_faults_on_every_rank_name_the_rank_printed_first():
    _assert_cause(EVO2, "cuda-oom", "rank3")


def test_equal_faults_follow_the_printed_order_not_the_rank_number():
    lines = EVO2.splitlines(keepends=True)
    _assert_cause("".join(lines[1:] + lines[:1]), "cuda-oom", "rank1")


# https://github.com/sanghyun-son/EDSR-PyTorch/issues/239 (an unprefixed traceback; srun names the task)
EDSR = """\
 File "trainCNNmodel.py", line 358, in <module>
    outputs = net(inputs)
  File "/N/u/user/anaconda3/lib/python3.7/site-packages/torch/nn/modules/module.py", line 541, in __call__
    result = self.forward(*input, **kwargs)
  File "trainCNNmodel.py", line 171, in forward
    x = self.pool(F.relu(self.conv1(x)))
  File "/N/u/user/anaconda3/lib/python3.7/site-packages/torch/nn/modules/module.py", line 541, in __call__
    result = self.forward(*input, **kwargs)
  File "/N/u/user/anaconda3/lib/python3.7/site-packages/torch/nn/modules/conv.py", line 345, in forward
    return self.conv2d_forward(input, self.weight)
  File "/N/u/user/anaconda3/lib/python3.7/site-packages/torch/nn/modules/conv.py", line 342, in conv2d_forward
    self.padding, self.dilation, self.groups)
RuntimeError: Given groups=1, weight of size 128 4 2 2, expected input[175, 3, 256, 256] to have 4 channels, but got 3 channels instead
srun: error: j-071: task 0: Exited with exit code 1
"""


def test_srun_exited_with_exit_code_names_the_task_of_an_unprefixed_fault():
    _assert_cause(EDSR, "unknown", "task 0")


# https://github.com/xorbitsai/inference/issues/4455 (Xoscar relays the model actor's error with its pid)
XINFERENCE = """\
2026-01-08 04:57:04,362 xinference.core.supervisor 83 ERROR    Failed to launch replica PaddleOCR-VL-0: [address=0.0.0.0:44163, pid=584] cannot import name 'TransformersKwargs' from 'transformers.utils' (/usr/local/lib/python3.10/dist-packages/transformers/utils/__init__.py)
2026-01-08 04:57:04,362 xinference.core.supervisor 83 DEBUG    [request 87f11c18-ec91-11f0-98c2-0242ac110002] Enter terminate_model, args: <xinference.core.supervisor.SupervisorActor object at 0x7f4efabeccc0>,PaddleOCR-VL, kwargs: suppress_exception=True
2026-01-08 04:57:04,362 xinference.core.supervisor 83 DEBUG    [request 87f11c18-ec91-11f0-98c2-0242ac110002] Leave terminate_model, elapsed time: 0 s
2026-01-08 04:57:04,362 xinference.core.supervisor 83 ERROR    [request 80e3d76c-ec91-11f0-98c2-0242ac110002] Leave launch_builtin_model, error: [address=0.0.0.0:44163, pid=584] cannot import name 'TransformersKwargs' from 'transformers.utils' (/usr/local/lib/python3.10/dist-packages/transformers/utils/__init__.py), elapsed time: 11 s
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/xinference/core/utils.py", line 94, in wrapped
    ret = await func(*args, **kwargs)
"""


def test_an_actor_error_relayed_with_its_address_and_pid_names_that_pid():
    _assert_cause(XINFERENCE, "import-error", "pid=584")


# https://github.com/sgl-project/sglang/issues/3713 (SGLang's `[time TP0]` log prefix)
SGLANG = """\
[2025-02-21 22:59:28 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1825, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/usr/local/lib/python3.10/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context
    return func(*args, **kwargs)
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 519, in event_loop_overlap
    self.process_batch_result(tmp_batch, tmp_result)
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1116, in process_batch_result
    self.process_batch_result_decode(batch, result)
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1308, in process_batch_result_decode
    self.current_stream.synchronize()
  File "/usr/local/lib/python3.10/dist-packages/torch/cuda/streams.py", line 100, in synchronize
    super().synchronize()
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""


def test_sglang_tp_prefix_names_the_tensor_parallel_rank():
    _assert_cause(SGLANG, "cuda-illegal-memory-access", "TP0")


# https://github.com/vllm-project/vllm/issues/33297 (a CI runner's timestamp before vLLM's process prefix)
VLLM_TS = """\
[2026-01-28T23:59:42Z] (EngineCore_DP0 pid=972) ERROR 01-28 15:59:42 [core.py:935] ValueError: Free memory on device cuda:0 (1.53/22.05 GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.
"""


def test_a_timestamp_before_a_vllm_process_prefix_keeps_the_process():
    _assert_cause(VLLM_TS, "vllm-orphan-gpu-memory", "EngineCore_DP0 pid=972")


# https://github.com/vllm-project/vllm/issues/29265 (the engine reports the Ray actor it lost)
VLLM_ACTOR = """\
(EngineCore_DP0 pid=726)                  ^^^^^^^^
(EngineCore_DP0 pid=726)   File "/usr/local/lib/python3.12/dist-packages/ray/_private/auto_init_hook.py", line 22, in auto_init_wrapper
(EngineCore_DP0 pid=726)     return fn(*args, **kwargs)
(EngineCore_DP0 pid=726)            ^^^^^^^^^^^^^^^^^^^
(EngineCore_DP0 pid=726)   File "/usr/local/lib/python3.12/dist-packages/ray/_private/client_mode_hook.py", line 104, in wrapper
(EngineCore_DP0 pid=726)     return func(*args, **kwargs)
(EngineCore_DP0 pid=726)            ^^^^^^^^^^^^^^^^^^^^^
(EngineCore_DP0 pid=726)   File "/usr/local/lib/python3.12/dist-packages/ray/_private/worker.py", line 2961, in get
(EngineCore_DP0 pid=726)     values, debugger_breakpoint = worker.get_objects(
(EngineCore_DP0 pid=726)                                   ^^^^^^^^^^^^^^^^^^^
(EngineCore_DP0 pid=726)   File "/usr/local/lib/python3.12/dist-packages/ray/_private/worker.py", line 1028, in get_objects
(EngineCore_DP0 pid=726)     raise value
(EngineCore_DP0 pid=726) ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
(EngineCore_DP0 pid=726) \tclass_name: RayWorkerWrapper
(EngineCore_DP0 pid=726) \tactor_id: eb6661ac8260c64e89bc2be601000000
(EngineCore_DP0 pid=726) \tpid: 676
(EngineCore_DP0 pid=726) \tnamespace: 64fcde30-4f4e-4642-8ab7-c24a8a33dab9
"""


def test_a_dead_actor_reported_by_the_engine_is_the_engine_s_finding():
    _assert_cause(VLLM_ACTOR, "ray-actor-died", "EngineCore_DP0 pid=726")


# https://github.com/huggingface/lerobot/issues/3818 (Ctrl-C; a DataLoader traceback cut short follows)
LEROBOT = """\
^CW0616 16:14:04.056000 3791882 site-packages/torch/distributed/elastic/agent/server/api.py:739] Received 2 death signal, shutting down workers
W0616 16:14:04.059000 3791882 site-packages/torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 3792016 closing signal SIGINT
W0616 16:14:04.060000 3791882 site-packages/torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 3792017 closing signal SIGINT
Exception ignored in atexit callback: <function _MultiProcessingDataLoaderIter._clean_up_worker at 0x7f9c62150360>
Traceback (most recent call last):
  File "/userpath/application/miniconda3/envs/lb_server/lib/python3.12/site-packages/torch/utils/data/dataloader.py", line 1703, in _clean_up_worker
    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
  File "/userpath/application/miniconda3/envs/lb_server/lib/python3.12/multiprocessing/process.py", line 149, in join
    res = self._popen.wait(timeout)
          ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/userpath/application/miniconda3/envs/lb_server/lib/python3.12/multiprocessing/popen_fork.py", line 40, in wait
    if not wait([self.sentinel], timeout):
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
"""


def test_a_stop_signal_before_a_traceback_cut_short_stays_the_cause():
    c = _cause(LEROBOT)
    assert c is not None and c.family == "process-killed-by-signal", c


# --------------------------------------------------------------------------- launchers' own format strings


@pytest.mark.parametrize("lines, worker, code", [
    # Open MPI's help text (help-orterun.txt, non-zero-exit): the first failed process and its exit code
    (["mpirun detected that one or more processes exited with non-zero status, thus causing",
      "the job to be terminated. The first process to do so was:", "",
      "  Process name: [[2403,1],1]", "  Exit code:    3"], "1", 3),
    # PRRTE (Open MPI 5)
    (["   Process name: [prterun-host-147515@1,0]", "   Exit code:    6"], "0", 6),
    # MPICH / Intel MPI (Hydra)
    (["=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "=   RANK 1 PID 27494 RUNNING AT node1",
      "=   KILLED BY SIGNAL: 11 (Segmentation fault)"], "1", -11),
    (["=   RANK 3 PID 65033 RUNNING AT gn59", "=   EXIT CODE: 137"], "3", -9),
    # torchelastic's ChildFailedError table
    (["  rank      : 3 (local_rank: 3)", "  exitcode  : -9 (pid: 7791)"], "3", -9),
])
def test_a_launcher_table_names_the_worker_of_its_exit_row(lines, worker, code):
    from sigclass.text.workers import TABLE_RANK, rank_of_row

    rank = None
    exits = []
    for n, ln in enumerate(lines, 1):
        row = TABLE_RANK.match(ln)
        if row is not None:
            rank = rank_of_row(row)
        else:
            exits.extend(exits_in_line(ln, n, rank))
    assert [(e.worker, e.code) for e in exits] == [(worker, code)]


def test_a_hydra_row_without_a_rank_does_not_lend_the_previous_one():
    from sigclass.text.workers import TABLE_RANK, rank_of_row

    assert rank_of_row(TABLE_RANK.match("=   RANK 2 PID 5 RUNNING AT a")) == "2"
    row = rank_of_row(TABLE_RANK.match("=   PID 5491 RUNNING AT gn59"))
    assert [(e.worker, e.code) for e in exits_in_line("=   EXIT CODE: 1", 2, row)] == [(None, -1)]


@pytest.mark.parametrize("status, code", [("9", -9), ("139", -11), ("134", -6), ("11", -11)])
def test_a_hydra_exit_code_under_a_row_without_a_rank_is_the_wait_status(status, code):
    # MPICH's pmiserv prints `PID n RUNNING AT host` without a rank only for a process that did not exit by itself;
    # the code under it is the raw wait status (the signal, plus 128 with a core dump)
    from sigclass.text.workers import TABLE_RANK, rank_of_row

    row = rank_of_row(TABLE_RANK.match("=   PID 92248 RUNNING AT fzh-desktop"))
    assert [(e.worker, e.code) for e in exits_in_line(f"=   EXIT CODE: {status}", 3, row)] == [(None, code)]


def test_a_hydra_exit_code_under_a_ranked_row_is_the_exit_status():
    from sigclass.text.workers import TABLE_RANK, rank_of_row

    row = rank_of_row(TABLE_RANK.match("=   RANK 3 PID 27494 RUNNING AT node1"))
    assert [(e.worker, e.code) for e in exits_in_line("=   EXIT CODE: 9", 3, row)] == [("3", 9)]


@pytest.mark.parametrize("line, worker, code", [
    # vLLM before V1 (multiproc_worker_utils: "Worker %s pid %s died, exit code: %s")
    ("ERROR 07-04 10:05:00 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 3283517 died, exit code: -15",
     "3283517", -15),
    # Horovod's Gloo launcher
    ("Process 0 exit with status code 137.", "0", -9),
    # vLLM's Ray executor (v2): "RayWorkerProc rank=%s died unexpectedly, shutting down executor."
    ("ERROR ... [ray_executor_v2.py:464] RayWorkerProc rank=[3] died unexpectedly, shutting down executor.", "3", 1),
    # srun
    ("srun: error: j-071: task 0: Exited with exit code 1", "0", 1),
    ("srun: error: gpu-node-3: task 2: Out Of Memory", "2", -9),
])
def test_a_launcher_exit_line_names_the_worker_and_its_code(line, worker, code):
    assert [(e.worker, e.code) for e in exits_in_line(line, 1, None)] == [(worker, code)]


@pytest.mark.parametrize("lines, worker", [
    # torch.multiprocessing.spawn relays a child's error under its index
    (["Exception:", "", "-- Process 6 terminated with the following error:", "Traceback (most recent call last):"], "6"),
    # Open MPI's first failed process
    (["  Process name: [[29973,1],1]"], "1"),
    # Hydra
    (["=   RANK 1 PID 31671 RUNNING AT s001-n020"], "1"),
    # Xoscar's relayed actor error
    (["Failed to launch replica: [address=0.0.0.0:44163, pid=584] cannot import name"], "584"),
    # SGLang, with and without the time the header takes
    (["[2025-02-21 22:59:28 TP3] Scheduler hit an exception: Traceback (most recent call last):"], "3"),
    (["DP0 TP2] Scheduler hit an exception: Traceback (most recent call last):"], "2"),
])
def test_a_failure_s_own_text_names_its_worker(lines, worker):
    assert worker_in_text(lines) == worker


@pytest.mark.parametrize("a, b, same", [
    ("gpu187:2", "gpu187:2:", True),
    ("gpu187:2", "gpu187:0", False),  # pdsh's host before a local rank: two ranks of one host
    ("rank:3", "3", True),
    ("TP0", "0", True),
    ("Worker_TP1 pid=5642", "5642", True),  # a vLLM worker process is named by its pid
    ("address=0.0.0.0:44163, pid=584", "584", True),
    # Open MPI's process name `[[jobfamily,job],rank]` (`Process name: [[29973,1],3]`) and its 5.0 tag's namespace
    ("[[29973,1],3]", "3", True),
    ("[[29973,1],3]", "1", False),
    ("prterun-node01-4242@1,3", "3", True),
])
def test_worker_ids_compare_as_the_launchers_print_them(a, b, same):
    assert (norm_worker(a) == norm_worker(b)) is same


def test_an_unprefixed_fault_takes_the_worker_the_launcher_saw_fail_first():
    # torchelastic's own lines around an unprefixed OOM: two ranks exit 1, the agent saw local rank 3 first
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/w/train.py", line 88, in <module>',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
        "79.15 GiB of which 1.02 GiB is free.",
        "E1120 14:47:20.900000 7710 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 3 (pid: 7791) of binary: /usr/bin/python",
        "Failures:",
        "[1]:",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 7789)",
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : 1 (pid: 7791)",
    ]) + "\n"
    _assert_cause(text, "cuda-oom", "3")


def test_a_chain_of_ray_relays_names_the_actor_where_the_error_began():
    # Ray prints a relayed error's outermost task first (`ray.exceptions.RayTaskError(E): ray::Class.method()
    # (pid=N, ip=...)`); the last relay in the chain is the actor that raised it
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/w/main.py", line 94, in run',
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::Runner.run() (pid=104449, ip=10.130.71.7, "
        "actor_id=36b6798a692f88dfb0e149e301000000, repr=<main.Runner object at 0x783e766c0ca0>)",
        '  File "/w/ray_trainer.py", line 657, in fit',
        "    actor_output = self.actor_rollout_ref_wg.update_actor(batch)",
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_ref_update_actor() "
        "(pid=118848, ip=10.130.71.7, actor_id=b2ba64f62469495ea505301701000000)",
        '  File "/w/fsdp_workers.py", line 432, in update_actor',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.02 GiB is free.",
    ]) + "\n"
    _assert_cause(text, "cuda-oom", "pid=118848")


# https://github.com/vllm-project/vllm/pull/41834 (vLLM under Docker Compose: the service column before the
# process prefix)
COMPOSE = """\
vllm-sm120  | (EngineCore pid=494) INFO 06-19 14:45:12 [multiproc_executor.py:426] [shutdown] Executor: waiting for worker exit count=2
vllm-sm120  | (Worker_TP0_EP0 pid=635) INFO 06-19 14:45:12 [multiproc_executor.py:790] Parent process exited, terminating worker queues
vllm-sm120  | (Worker_TP1_EP1 pid=636) Process VllmWorker-1:
vllm-sm120  | (Worker_TP0_EP0 pid=635) Process VllmWorker-0:
vllm-sm120  | (Worker_TP1_EP1 pid=636) Traceback (most recent call last):
vllm-sm120  | (Worker_TP0_EP0 pid=635) Traceback (most recent call last):
"""


def test_a_compose_service_column_before_a_process_prefix_keeps_the_process():
    from sigclass.text.lines import split_line

    got = [(ln.stream.kind, ln.stream.id) if ln.stream else None for ln in map(split_line, COMPOSE.splitlines())]
    assert got == [("EngineCore", "494"), ("Worker_TP0_EP0", "635"), ("Worker_TP1_EP1", "636"),
                   ("Worker_TP0_EP0", "635"), ("Worker_TP1_EP1", "636"), ("Worker_TP0_EP0", "635")]
    # the service column alone names its service (a traceback's frames under it stay one failure)
    alone = split_line("single-1   |   File \"/app/serve.py\", line 3, in <module>")
    assert (alone.stream.id, alone.worker, alone.content) == ("single-1", "single-1", '  File "/app/serve.py", line 3, in <module>')
    # a table row's one space before the bar is no service column
    assert split_line("epoch | loss | acc").stream is None


COMPOSE_TRACEBACK = """\
inference_engine  | [2025-02-12 12:54:32 TP0] Scheduler hit an exception: Traceback (most recent call last):
inference_engine  |   File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1796, in run_scheduler_process
inference_engine  |     scheduler.event_loop_overlap()
inference_engine  |   File "/usr/local/lib/python3.10/dist-packages/outlines/models/transformers.py", line 117, in __hash__
inference_engine  |     from datasets.fingerprint import Hasher
inference_engine  | ModuleNotFoundError: No module named 'datasets'
"""


def test_a_traceback_under_a_compose_service_column_is_one_failure_of_that_service():
    res = Scanner(load_ledger(), signatures="regex").scan_text(COMPOSE_TRACEBACK)
    # one failure; the scheduler's own header (`[... TP0]`) names the process inside the service
    assert [(f.family, f.line, f.end_line, f.worker) for f in res.findings] == [("import-error", 1, 6, "0")]
    # with no rank in its lines, the service is the worker
    plain = COMPOSE_TRACEBACK.replace(" TP0]", "]")
    res = Scanner(load_ledger(), signatures="regex").scan_text(plain)
    assert [(f.family, f.line, f.end_line, f.worker) for f in res.findings] == [("import-error", 1, 6, "inference_engine")]


# https://github.com/horovod/horovod/pull/2829 (horovodrun on Gloo: `[N]<stderr>:` prefixes, then its exit lines;
# rank 0's own error came first, the others lost their peer)
HOROVOD_GLOO = """\
[0]<stderr>:RuntimeError: check_rank and exit epoch=1 batch=0 start_rank=0 rank=0
[0]<stderr>:Killed

[1]<stderr>:Terminated
[1]<stderr>:terminate called after throwing an instance of 'gloo::IoException'
[1]<stderr>:  what():  [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:3977: Connection reset by peer
[1]<stderr>:Aborted (core dumped)

[2]<stderr>:terminate called after throwing an instance of 'gloo::IoException'
[2]<stderr>:  what():  [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:54168
[2]<stderr>:Aborted (core dumped)

[3]<stderr>:terminate called after throwing an instance of 'gloo::IoException'
[3]<stderr>:  what():  [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:52398: Connection reset by peer
[3]<stderr>:Aborted (core dumped)
Process 0 exit with status code 137.
Process 3 exit with status code 134.
Process 2 exit with status code 134.
"""


def test_horovod_gloo_prefixes_and_exit_lines_name_the_ranks():
    from sigclass.text.lines import split_line

    assert {ln.worker for ln in map(split_line, HOROVOD_GLOO.splitlines()) if ln.stream} == {"0", "1", "2", "3"}
    c = _cause(HOROVOD_GLOO)
    assert c is not None and c.worker == "0" and c.line == 1, c


def test_an_engine_core_copy_printed_first_does_not_hide_the_worker_that_raised_it():
    # vLLM's engine process re-raises a worker's error (`EngineCore encountered a fatal error.`); with the same
    # fault and time in the worker's own lines, the worker is the cause
    text = """\
(EngineCore_DP0 pid=5500) ERROR 05-01 12:00:01 [core.py:634] EngineCore encountered a fatal error.
(EngineCore_DP0 pid=5500) ERROR 05-01 12:00:01 [core.py:634] Traceback (most recent call last):
(EngineCore_DP0 pid=5500) ERROR 05-01 12:00:01 [core.py:634]   File "/v/core.py", line 10, in run_engine_core
(EngineCore_DP0 pid=5500) ERROR 05-01 12:00:01 [core.py:634] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.
(VllmWorker rank=1 pid=5640) ERROR 05-01 12:00:01 [multiproc_executor.py:522] WorkerProc hit an exception.
(VllmWorker rank=1 pid=5640) ERROR 05-01 12:00:01 [multiproc_executor.py:522] Traceback (most recent call last):
(VllmWorker rank=1 pid=5640) ERROR 05-01 12:00:01 [multiproc_executor.py:522]   File "/v/worker.py", line 10, in worker_busy_loop
(VllmWorker rank=1 pid=5640) ERROR 05-01 12:00:01 [multiproc_executor.py:522] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.
"""
    _assert_cause(text, "cuda-oom", "VllmWorker rank=1 pid=5640")
    _assert_cause(text.replace("VllmWorker rank=1 pid=5640", "Worker_TP1 pid=5640"), "cuda-oom", "Worker_TP1 pid=5640")


# https://github.com/Azure/azureml-assets/issues/302 (DeepSpeed's multi-node launcher runs each node through pdsh,
# which puts the host before every line)
PDSH = """\
10.0.0.6:   File "/opt/conda/envs/ptca/lib/python3.9/site-packages/deepspeed/runtime/fp16/fused_optimizer.py", line 126, in initialize_optimizer_states
10.0.0.6:     self.optimizer.step()
10.0.0.7: Traceback (most recent call last):
10.0.0.7:   File "/mnt/azureml/cr/j/ec39bdadbe7d4062acf9f19c950cb39a/exe/wd/train.py", line 98, in <module>
"""


def test_a_pdsh_host_prefix_names_the_host_of_each_line():
    from sigclass.text.lines import split_line

    lines = [split_line(x) for x in PDSH.splitlines()]
    assert [ln.worker for ln in lines] == ["10.0.0.6", "10.0.0.6", "10.0.0.7", "10.0.0.7"]
    assert lines[2].body == "Traceback (most recent call last):"


@pytest.mark.parametrize("line", [
    "python3: can't open file '/w/train.py': [Errno 2] No such file or directory",
    "RuntimeError: CUDA error: out of memory",
    "Epoch 1: 100%|##########| 10/10",
    "2024-01-01 12:00:00: step 5",
    "Tue Nov 27 13:49:06 2018 job started",  # a ctime time alone is no prefix
    "(see VllmWorker TP1 for details) pid=5",
    "(VllmWorker TP1) ERROR no pid",
    "[1,3]: a list, not Open MPI's tag",
    "[Tue Nov 27 13:49:06 2018] job started",
])
def test_a_line_that_only_looks_like_a_worker_prefix_keeps_its_text(line):
    from sigclass.text.lines import split_line

    ln = split_line(line)
    assert ln.stream is None and ln.content == line


def test_pdsh_s_own_exit_line_names_the_host():
    [e] = exits_in_line("pdsh@node-0: 10.0.0.7: ssh exited with exit code 1", 1, None)
    assert (e.worker, e.code) == ("10.0.0.7", 1)


# https://github.com/facebookresearch/habitat-lab/issues/298 (srun reports each task's end as it happens: task 1
# first, then the step is terminated and task 0 goes down too; the lines keep the thread's indentation)
SRUN_TWO_SEGFAULTS = """\
        srun: error: nid04277: task 1: Segmentation fault (core dumped)
        srun: Terminating job step 20370799.1
        srun: error: nid04276: task 0: Segmentation fault (core dumped)
"""


def test_srun_s_first_reported_task_is_the_cause_not_the_lowest_task_id():
    _assert_cause(SRUN_TWO_SEGFAULTS, "segfault", "task 1")
    # the same with the tasks' numbers swapped: the order srun printed them in decides, not the ids
    swapped = (SRUN_TWO_SEGFAULTS.replace("task 1:", "task X:").replace("task 0:", "task 1:")
               .replace("task X:", "task 0:"))
    _assert_cause(swapped, "segfault", "task 0")


# https://github.com/PaddlePaddle/Paddle/issues/14625 (mpirun --timestamp-output --tag-output: ctime's time with no
# space before Open MPI's `[job,rank]<stream>:` tag)
MPI_TIMESTAMPED = """\
Tue Nov 27 13:49:06 2018[1,10]<stdout>:F1127 13:49:06.743296 17418 hl_cuda_device.cc:565] Check failed: cudaSuccess == cudaStat (0 vs. 35) Cuda Error: CUDA driver version is insufficient for CUDA runtime version
Tue Nov 27 13:49:06 2018[1,10]<stdout>:*** Check failure stack trace: ***
"""


def test_open_mpi_s_timestamped_tag_names_the_rank():
    _assert_cause(MPI_TIMESTAMPED, "cuda-env-mismatch", "1,10")


@pytest.mark.parametrize("line, worker, body", [
    # Open MPI's iof: `"%s[%s,%s]<%s>:"` with ctime's time (its day of month padded with a space)
    ("Wed Nov  7 09:05:01 2018[1,3]<stderr>:Traceback (most recent call last):", "3",
     "Traceback (most recent call last):"),
    # Open MPI 5 (PMIx's `"[%s,%s]<%s>: "`): `--output tag-fullname` keeps the namespace, `tag-detailed` adds host and
    # pid, and a timestamp stands in brackets before the tag
    ("[prterun-node01-4242@1,3]<stderr>:Traceback (most recent call last):", "3", "Traceback (most recent call last):"),
    ("[1,3][node01:4242]<stderr>:Traceback (most recent call last):", "3", "Traceback (most recent call last):"),
    ("[Wed Nov  7 09:05:01 2018][1,3]<stderr>:Traceback (most recent call last):", "3",
     "Traceback (most recent call last):"),
    # vLLM's multiprocessing worker: `decorate_logs(f"VllmWorker {suffix}")`, the suffix `TP<n>` when only tensor
    # parallel (the TP rank is the worker's rank), `PP<n>_TP<n>` with pipeline parallel too (named by its pid)
    ("(VllmWorker TP1 pid=406) ERROR 08-25 12:24:17 [multiproc_executor.py:596] WorkerProc hit an exception.", "1",
     "WorkerProc hit an exception."),
    ("(VllmWorker PP1_TP0 pid=722) ERROR 08-25 12:24:17 [multiproc_executor.py:596] WorkerProc hit an exception.",
     None, "WorkerProc hit an exception."),
    # ... inside its engine core's prefix, and as syslog writes it to a file (ESC as `#033`, the line's CR as `#015`)
    ("(EngineCore_0 pid=715) (VllmWorker TP0 pid=720) ERROR 10-04 05:07:25 [multiproc_executor.py:596] WorkerProc hit "
     "an exception.", "0", "WorkerProc hit an exception."),
    ("#033[1;36m(VllmWorker TP2 pid=415)#033[0;0m ERROR 08-31 04:18:45 [multiproc_executor.py:559] WorkerProc failed "
     "to start.#015", "2", "WorkerProc failed to start."),
])
def test_launcher_prefixes_from_their_format_strings(line, worker, body):
    from sigclass.text.lines import split_line

    ln = split_line(line)
    assert ln.stream is not None and ln.worker == worker and ln.body == body


VLLM_TP_OOM = [
    "(VllmWorker TP{r} pid=40{r}) ERROR 08-25 12:24:17 [multiproc_executor.py:596] WorkerProc hit an exception.",
    "(VllmWorker TP{r} pid=40{r}) ERROR 08-25 12:24:17 [multiproc_executor.py:596] Traceback (most recent call last):",
    '(VllmWorker TP{r} pid=40{r}) ERROR 08-25 12:24:17 [multiproc_executor.py:596]   File "/vllm/worker.py", line 9, '
    "in execute_model",
    "(VllmWorker TP{r} pid=40{r}) ERROR 08-25 12:24:17 [multiproc_executor.py:596] torch.OutOfMemoryError: CUDA out of "
    "memory. Tried to allocate 2.00 GiB. GPU {r} has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
]


def test_a_vllm_tp_worker_s_fault_names_its_tp_rank():
    text = "\n".join([
        "(VllmWorker TP0 pid=400) INFO 08-25 12:24:10 [gpu_model_runner.py:1] Model loading took 8.1 GiB",
        *(x.format(r=3) for x in VLLM_TP_OOM),
    ]) + "\n"
    _assert_cause(text, "cuda-oom", "VllmWorker TP3 pid=403")


# NCCL's lines name their process by host and pid (`"%s:%d:%d [%d] "`); torchelastic names the same process by
# its local rank and pid. The ring check that failed (graph/rings.cc returns ncclInternalError) is quoted from
# https://github.com/taoyanda/Galvatron/blob/174c52dab1578b50dcf3fc9397294bb1e2e68a55/doc/_legacy/p2p_disable_postmortem.md
# the exit line is torchelastic's format for the same pid
NCCL_RING_THEN_SIGSEGV = """\
hetml-a100:69966:69966 [2] graph/rings.cc:51 NCCL WARN Error : ring 1 does not contain rank 0
[2026-05-04 17:40:52] torch.distributed.elastic.multiprocessing.api: [ERROR]
  failed (exitcode: -11) local_rank: 2 (pid: 69966) of binary: /opt/conda/bin/python
"""


def test_a_failed_nccl_check_is_its_process_s_own_fault():
    # ncclInternalError from a ring check: the process's own failure, which its -11 ended
    c = _cause(NCCL_RING_THEN_SIGSEGV)
    assert c is not None and c.family == "nccl-error" and norm_worker(c.worker) == norm_worker("hetml-a100:69966")


# an NCCL failure that says nothing of a peer (NCCL's `WARN("Call to ibv_create_cq failed")`), by pid
IBV_FAILED = "hetml-a100:69966:69966 [2] NCCL WARN Call to ibv_create_cq failed\n"
PEER_LOST = "hetml-a100:69966:69966 [2] NCCL WARN Net : Connection closed by remote peer\n"
EXIT_11 = ("[2026-05-04 17:40:52] torch.distributed.elastic.multiprocessing.api: [ERROR]\n"
           "  failed (exitcode: -11) local_rank: 2 (pid: {pid}) of binary: /opt/conda/bin/python\n")


def test_the_exit_code_of_the_pid_that_printed_an_nccl_error_is_how_that_error_ended():
    # the launcher names the process by its local rank, NCCL by host:pid: the same process
    c = _cause(IBV_FAILED + EXIT_11.format(pid=69966))
    assert c is not None and c.family == "nccl-error", c


def test_a_segfault_of_another_process_outranks_an_nccl_error_that_lost_its_peer():
    _assert_cause(PEER_LOST + EXIT_11.format(pid=70001), "segfault", "2")
    _assert_cause(IBV_FAILED + EXIT_11.format(pid=70001), "segfault", "2")


# https://github.com/vllm-project/vllm/issues/6106 (a Ray TP worker's ncclCommInitRank fails with an internal error,
# a peer reports that a remote process exited, and a third worker then segfaults in NCCL's proxy thread)
VLLM_NCCL_INTERNAL_THEN_SIGSEGV = """\
2024-07-03 14:42:55,264 INFO worker.py:1586 -- Connecting to existing Ray cluster at address: 128.1.219.178:6379...
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148] Traceback (most recent call last):
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148]   File "/model/anaconda3/envs/vllm/lib/python3.11/site-packages/vllm/distributed/device_communicators/pynccl_wrapper.py", line 244, in ncclCommInitRank
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148]     self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148]   File "/model/anaconda3/envs/vllm/lib/python3.11/site-packages/vllm/distributed/device_communicators/pynccl_wrapper.py", line 223, in NCCL_CHECK
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148]     raise RuntimeError(f"NCCL error: {error_str}")
(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148] RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers
(RayWorkerWrapper pid=9821) *** SIGSEGV received at time=1720017831 on cpu 54 ***
(RayWorkerWrapper pid=9821) PC: @     0x7f0a10469996  (unknown)  ncclProxyServiceUDS()
(RayWorkerWrapper pid=9821)     @     0x7f2757e09520       3384  (unknown)
(RayWorkerWrapper pid=9821)     @ ... and at least 1 more frames
(RayWorkerWrapper pid=9821) [2024-07-03 14:43:51,034 E 9821 10625] logging.cc:440: *** SIGSEGV received at time=1720017831 on cpu 54 ***
(RayWorkerWrapper pid=9821) [2024-07-03 14:43:51,034 E 9821 10625] logging.cc:440: PC: @     0x7f0a10469996  (unknown)  ncclProxyServiceUDS()
(RayWorkerWrapper pid=9821) [2024-07-03 14:43:51,034 E 9821 10625] logging.cc:440:     @     0x7f2757e09520       3384  (unknown)
(RayWorkerWrapper pid=9821) [2024-07-03 14:43:51,034 E 9821 10625] logging.cc:440:     @ ... and at least 1 more frames
(RayWorkerWrapper pid=9821) Fatal Python error: Segmentation fault
"""


def test_an_nccl_internal_error_is_not_a_victim_of_a_later_segfault_elsewhere():
    # ncclInternalError is the calling process's own failure (a peer lost says `remote process exited`): it is no
    # weak sign of another worker's crash, and it began a second before the segfault
    _assert_cause(VLLM_NCCL_INTERNAL_THEN_SIGSEGV, "nccl-error", "4139")


# `srun --label`: slurmstepd's word of the OOM kill comes through task 0's stream (tagged `0:`), srun's names the
# task the kernel killed (a Perlmutter run's log, saforem2/vault)
SRUN_LABEL_OOM = """\
0: [2023-10-16 15:16:38,210] [INFO] [profiler.py:80:start_profile] Flops profiler started
2: [Rank 2] (after 1 iterations) memory (MB) | allocated: 7063.2 | max allocated: 23105.0
0: slurmstepd: error: Detected 1 oom_kill event in StepId=17109804.0. Some of the step tasks have been OOM Killed.
srun: error: nid008576: task 2: Out Of Memory
srun: Terminating StepId=17109804.0
"""


def test_slurmstepd_s_word_under_a_task_s_label_is_the_step_s_and_srun_names_the_killed_task():
    res = sigclass.classify(SRUN_LABEL_OOM)
    (step,) = [f for f in res.findings if "slurmstepd" in f.evidence[0]]
    assert step.worker is None  # not task 0's: the daemon's, for the whole step
    assert (res.verdict.cause.family, res.verdict.cause.worker) == ("host-oom-killed", "2")


# icefall's (k2's) log header names the rank and the world size (`[train.py:1057] (2/4) `)
ICEFALL_TWO_RANKS = """\
2024-01-14 01:03:00,826 WARNING [train.py:1057] (2/4) Grad scale is small: 1.2924697071141057e-26
2024-01-14 01:03:00,826 INFO [checkpoint.py:75] (2/4) Saving checkpoint to zipformer/exp/bad-model-2.pt
2024-01-14 01:03:01,769 WARNING [train.py:1057] (0/4) Grad scale is small: 1.2924697071141057e-26
"""


def test_a_rank_named_in_icefall_s_record_header_is_the_failure_s_worker():
    res = sigclass.classify(ICEFALL_TWO_RANKS)
    assert res.findings[0].worker == "2"
    assert (res.verdict.cause.family, res.verdict.cause.worker) == ("nan-loss", "2")
    # an enumeration in a message is no rank: `(1/3) Downloading` names no worker
    assert sigclass.classify("(1/3) Downloading shards\nRuntimeError: CUDA out of memory.\n").findings[0].worker is None
