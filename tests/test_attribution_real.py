"""Root attribution on real multi-worker text: one verdict per log, naming the cause's family AND worker.

Every excerpt below is quoted as printed in the public thread named above it. They are exercised only
through public entry points: the `sigclass` command (jsonl verdict record) and `sigclass.classify`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import sigclass


def _norm_worker(w: object) -> str | None:
    """'rank3' == '[rank3]:' == '3' == 'local_rank: 3'; 'pid=2421' == '2421'."""
    if w is None:
        return None
    s = str(w).strip().strip("[]():").strip().lower()
    s = re.sub(r"^(?:global_rank|local_rank|rank|default|task|pid|worker|gpu)\s*[=:_ -]?\s*", "", s)
    return s.strip("[]():").strip() or None


def _scan_jsonl(text: str) -> tuple[list[dict], list[dict]]:
    """(findings, verdicts) printed by `sigclass scan --format jsonl` for a log read from stdin."""
    proc = subprocess.run([sys.executable, "-m", "sigclass", "scan", "--format", "jsonl", "-"], input=text,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback (most recent call last)" not in proc.stderr, proc.stderr
    recs = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    verdicts = [r for r in recs if r.get("kind") == "verdict"]
    findings = [r for r in recs if r.get("kind") != "verdict"]
    return findings, verdicts


def _cause(text: str) -> dict | None:
    findings, verdicts = _scan_jsonl(text)
    assert len(verdicts) == 1, verdicts
    v = verdicts[0]
    assert set(v) >= {"kind", "source", "cause", "victims", "independent"}, v
    # the verdict comes after the source's last finding
    if findings:
        assert v["cause"] is None or v["cause"]["line"] >= 1
    c = v["cause"]
    if c is not None:
        assert set(c) >= {"family", "worker", "line", "fingerprint", "confidence"}, c
        assert 0.0 < c["confidence"] <= 1.0
    return c


def _assert_cause(text: str, family: str, worker: str) -> dict:
    c = _cause(text)
    assert c is not None, "no cause found"
    assert (c["family"], _norm_worker(c["worker"])) == (family, _norm_worker(worker)), c
    return c


# --------------------------------------------------------------------------- torchelastic

# https://github.com/hpcaitech/ColossalAI/issues/3514
COLOSSAL_TORCHELASTIC_MINUS9 = """\
                             environment is initialized, data parallel size: 4, 
                             pipeline parallel size: 1, tensor parallel size: 1 
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812914 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812915 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812916 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary: /data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/python
Traceback (most recent call last):
  File "/data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/data/chenhao/anaconda3/envs/ColossalAI-Chat/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper
    return f(*args, **kwargs)
  File "/data/chenhao/anaconda3/envs/ColossalAI-Chat/lib/python3.10/site-packages/torch/distributed/run.py", line 762, in main
    run(args)
"""


def test_torchelastic_failed_line_names_the_killed_local_rank():
    c = _assert_cause(COLOSSAL_TORCHELASTIC_MINUS9, "host-oom-killed", "3")
    assert c["confidence"] < 1.0  # inferred from an exit code, not seen in the rank's own lines


# https://github.com/lmzpai/roboMamba/issues/10 (glog header before the launcher's message)
ROBOMAMBA_GLOG_MINUS9 = """\
E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python
Traceback (most recent call last):
  File "/root/miniconda3/bin/torchrun", line 8, in <module>
    sys.exit(main())
             ^^^^^^
"""


def test_torchelastic_failed_line_after_a_glog_header():
    _assert_cause(ROBOMAMBA_GLOG_MINUS9, "host-oom-killed", "5")


# https://github.com/lzhxmu/CPPO/issues/6 (the ChildFailedError table)
CPPO_CHILDFAILED_TABLE = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
src/open_r1/grpo_gsm.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-05-21_15:43:03
  host      : mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 14750)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 14750
============================================================
"""


def test_childfailederror_table_names_the_rank():
    _assert_cause(CPPO_CHILDFAILED_TABLE, "host-oom-killed", "0")


# --------------------------------------------------------------------------- DeepSpeed launcher

# https://github.com/deepspeedai/DeepSpeed/issues/3232
DEEPSPEED_RETURN_CODE_MINUS9 = """\
[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266
[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', '--local_rank=0', '--data_path', 'Dahoas/rm-static', 'Dahoas/full-hh-rlhf', 'Dahoas/synthetic-instruct-gptj-pairwise', 'yitingxie/rlhf-reward-datasets', 'openai/webgpt_comparisons', 'stanfordnlp/SHP', '--data_split', '2,4,4', '--model_name_or_path', 'facebook/opt-125m', '--per_device_train_batch_size', '2', '--per_device_eval_batch_size', '8', '--max_seq_len', '512', '--learning_rate', '9.65e-6', '--weight_decay', '0.1', '--num_train_epochs', '2', '--gradient_accumulation_steps', '1', '--lr_scheduler_type', 'cosine', '--num_warmup_steps', '0', '--seed', '1234', '--zero_stage', '2', '--deepspeed', '--output_dir', '/content/DeepSpeedExamples/applications/DeepSpeed-Chat/output/actor-models/125m'] exits with return code = -9
"""


def test_deepspeed_launcher_return_code_names_the_local_rank_of_its_command():
    _assert_cause(DEEPSPEED_RETURN_CODE_MINUS9, "host-oom-killed", "0")


# DeepSpeed's launcher (deepspeed/launcher/launch.py) in its own formats: `process {pid} spawned with command: {cmd}`
# per local rank, then `sigkill_handler` logs `Killing subprocess {pid}` for each and `{cmd} exits with return code =
# {last_return_code}`, where `cmd` is the command built last (the last local rank), whichever process failed
def _deepspeed_lines(n: int, code: int) -> tuple[str, str]:
    spawn = "".join(f"[2024-05-02 11:20:01,10{i}] [INFO] [launch.py:256:main] process {4101 + i} spawned with command: "
                    f"['/usr/bin/python', '-u', 'train.py', '--local_rank={i}']\n" for i in range(n))
    kill = "".join(f"[2024-05-02 11:21:07,31{i}] [INFO] [launch.py:319:sigkill_handler] Killing subprocess {4101 + i}\n"
                   for i in range(n))
    kill += (f"[2024-05-02 11:21:07,530] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
             f"'--local_rank={n - 1}'] exits with return code = {code}\n")
    return spawn, kill


def test_deepspeed_return_code_line_is_not_the_failed_worker_when_another_is_named():
    spawn, kill = _deepspeed_lines(3, -9)
    nccl = ("[rank0]:[E502 11:21:07.700000 4101 ProcessGroupNCCL.cpp:1594] [PG 0 Rank 0] Process group watchdog thread "
            "terminated with exception: NCCL error: remote process exited or there was a network error\n")
    c = _cause(spawn + kill + nccl)
    # the code still says how a process ended (-9 with nothing else: a host OOM kill), but not which one did
    assert c is not None and c["family"] == "host-oom-killed", c
    assert c["worker"] is None, c


def test_deepspeed_return_code_line_adds_no_victim_for_the_last_started_rank():
    spawn, kill = _deepspeed_lines(2, 1)
    oom = ("[rank0]: Traceback (most recent call last):\n"
           "[rank0]:   File \"train.py\", line 40, in <module>\n"
           "[rank0]:     loss.backward()\n"
           "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
           "capacity of 79.15 GiB of which 1.02 GiB is free.\n")
    _, (v,) = _scan_jsonl(spawn + oom + kill)
    assert (v["cause"]["family"], _norm_worker(v["cause"]["worker"])) == ("cuda-oom", "0"), v
    assert all(_norm_worker(x["worker"]) != "1" for x in v["victims"] + v["independent"]), v


def test_deepspeed_return_code_line_names_its_rank_when_no_other_worker_is_named():
    _, kill = _deepspeed_lines(2, -11)
    _assert_cause(kill, "segfault", "1")


def test_deepspeed_return_code_exit_keeps_the_code_and_marks_the_worker_as_last_started():
    from sigclass.text.workers import exits_in_line, worker_in_text

    line = _deepspeed_lines(4, 137)[1].splitlines()[-1]
    (e,) = exits_in_line(line, 9, None)
    assert (e.code, e.worker, e.last_started) == (-9, "3", True)
    assert worker_in_text([line]) is None
    # a command line elsewhere (subprocess's `died with <Signals...>`) still names its rank
    assert worker_in_text(["Command '['python', 'main.py', '--local_rank=3']' died with <Signals.SIGKILL: 9>."]) == "3"


# --------------------------------------------------------------------------- launchers that say `died with <Signals...>`

# https://github.com/microsoft/Swin-Transformer/issues/267
SWIN_DIED_WITH_SIGKILL = """\
My error: 
_subprocess.CalledProcessError: Command '['/usr/bin/python3', '-u', 'main.py', '--local_rank=3', '--cfg', 'configs/swin/swin_tiny_patch4_window7_224.yaml', '--data-path', '/content/Swin-Transformer/dataset/cats_and_dogs_filtered', '--batch-size', '32']' died with <Signals.SIGKILL: 9>._
"""


def test_died_with_sigkill_names_the_local_rank_of_the_command():
    _assert_cause(SWIN_DIED_WITH_SIGKILL, "host-oom-killed", "3")


# --------------------------------------------------------------------------- Slurm

# https://github.com/chrisknewman/tusas/issues/149
TUSAS_SLURM_OOM_TASKS = """\
slurmstepd: error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks have been OOM Killed.
srun: error: nid001277: tasks 1-3: Out Of Memory
srun: Terminating StepId=440575.0
slurmstepd: error: *** STEP 440575.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***
"""


def test_srun_tasks_out_of_memory_names_the_tasks_and_says_it_is_systematic():
    c = _assert_cause(TUSAS_SLURM_OOM_TASKS, "host-oom-killed", "1")
    assert c["confidence"] >= 0.8  # the scheduler says OOM itself, not just an exit code
    _, (v,) = _scan_jsonl(TUSAS_SLURM_OOM_TASKS)
    assert sorted((x["family"], _norm_worker(x["worker"])) for x in v["independent"]) == [
        ("host-oom-killed", "2"), ("host-oom-killed", "3")]


# --------------------------------------------------------------------------- mpirun

# https://github.com/open-mpi/ompi/issues/2661
OMPI_MPIRUN_SIGNAL_9 = """\
 [puneet@host02 bin]$ mpirun -np 4 -npernode 1 -machinefile hosts.txt ./bt.E.4.mpi_io_full 
mpirun noticed that process rank 0 with PID 21183 on node host01 exited on signal 9 (Killed).
[puneet@host02 bin]$ echo $?
137
"""


def test_mpirun_notice_names_the_process_rank():
    _assert_cause(OMPI_MPIRUN_SIGNAL_9, "host-oom-killed", "0")


# --------------------------------------------------------------------------- torchrun rank prefixes

# https://github.com/QwenLM/Qwen3-Coder/issues/174 (a timestamp before the rank prefix)
QWEN_TIMESTAMPED_RANK3_OOM = """\
2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3 has a total capacity of 79.10 GiB of which 98.00 MiB is free. Process 387746 has 78.89 GiB memory in use. Of the allocated memory 70.12 GiB is allocated by PyTorch, and 765.81 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
2024-11-20 14:37:16 DEBUG:filelock:Attempting to acquire lock 140341412642880 on /root/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock
2024-11-20 14:37:16 DEBUG:filelock:Lock 140341412642880 acquired on /root/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock
2024-11-20 14:37:16 DEBUG:filelock:Attempting to release lock 140341412642880 on /root/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock
2024-11-20 14:37:16 DEBUG:filelock:Lock 140341412642880 released on /root/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock
"""


def test_timestamp_before_the_rank_prefix():
    findings, verdicts = _scan_jsonl(QWEN_TIMESTAMPED_RANK3_OOM)
    (v,) = verdicts
    assert (v["cause"]["family"], _norm_worker(v["cause"]["worker"])) == ("cuda-oom", "3"), v
    assert v["cause"]["time"] == "2024-11-20T14:37:16.000Z"
    assert v["independent"] == []


# https://github.com/DachengLi1/LongChat/issues/9 (eight siblings stopped, one rank killed)
LONGCHAT_EIGHT_SIGTERMS_ONE_KILL = """\
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24901 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24902 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24903 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24904 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24906 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24907 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24908 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 24909 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 4 (pid: 24905) of binary: /home/chat_glm6b/anaconda3/envs/longeval/bin/python
Traceback (most recent call last):
  File "/home/chat_glm6b/anaconda3/envs/longeval/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/home/chat_glm6b/anaconda3/envs/longeval/lib/python3.10/runpy.py", line 86, in _run_code
    exec(code, run_globals)
"""


def test_the_killed_rank_is_the_cause_not_the_siblings_the_launcher_stopped():
    _assert_cause(LONGCHAT_EIGHT_SIGTERMS_ONE_KILL, "host-oom-killed", "4")


# https://github.com/XPixelGroup/BasicSR/issues/737 (every rank prints the watchdog; each one names itself)
BASICSR_WATCHDOGS = """\
[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.
[rank0]:[E626 06:24:44.159932949 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600030 milliseconds before timing out.
[rank0]:[E626 06:24:44.160366013 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 0] Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.
"""


def test_watchdog_findings_carry_their_own_rank():
    findings, _ = _scan_jsonl(BASICSR_WATCHDOGS)
    got = {(f["family"], _norm_worker(f["worker"])) for f in findings}
    assert got == {("nccl-watchdog-timeout", "1"), ("nccl-watchdog-timeout", "0")}, got


def test_watchdog_only_log_the_cause_is_the_watchdog_that_started_waiting_first():
    # rank 1 ran for 600020 ms at 06:24:44.9039, rank 0 for 600030 ms at 06:24:44.1599: rank 0 began waiting first
    c = _assert_cause(BASICSR_WATCHDOGS, "nccl-watchdog-timeout", "0")
    assert c["confidence"] < 0.9  # a watchdog is what a victim prints: the cause is only a best guess


# https://github.com/hiyouga/LlamaFactory/issues/7396 (line numbers of the paste before the rank prefix)
LLAMAFACTORY_NUMBERED_PASTE = """\
[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
[80747] [rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600067 milliseconds before timing out.
"""


def test_rank_prefix_after_a_leading_number_is_recognised():
    findings, _ = _scan_jsonl(LLAMAFACTORY_NUMBERED_PASTE)
    assert {_norm_worker(f["worker"]) for f in findings} == {"0", "4"}, findings


# --------------------------------------------------------------------------- vLLM and Ray processes

# https://github.com/rhymes-ai/Aria/issues/24
ARIA_VLLM_WORKER_PROCESS_OOM = """\
(VllmWorkerProcess pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB. GPU 3 has a total capacity of 21.96 GiB of which 1.29 GiB is free. Including non-PyTorch memory, this process has 0 bytes memory in use. Of the allocated memory 19.02 GiB is allocated by PyTorch, and 1.32 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
(VllmWorkerProcess pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] 
(VllmWorkerProcess pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] The above exception was the direct cause of the following exception:
"""


def test_vllm_worker_process_pid_is_the_worker():
    _assert_cause(ARIA_VLLM_WORKER_PROCESS_OOM, "cuda-oom", "2421")


# https://github.com/noonghunna/club-3090/issues/138
CLUB3090_WORKER_TP0_OOM = """\
(Worker_TP0 pid=160) ERROR 05-20 20:54:32 [multiproc_executor.py:962]             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

(Worker_TP0 pid=160) ERROR 05-20 20:54:32 [multiproc_executor.py:962] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 136.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 117.38 MiB is free. Including non-PyTorch memory, this process has 22.82 GiB memory in use. Of the allocated memory 21.98 GiB is allocated by PyTorch, with 21.71 MiB allocated in private pools (e.g., CUDA Graphs), and 391.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)
"""


def test_vllm_worker_tp_process_pid_is_the_worker():
    _assert_cause(CLUB3090_WORKER_TP0_OOM, "cuda-oom", "160")


# https://github.com/OpenRLHF/OpenRLHF/issues/866
OPENRLHF_RAY_WORKER_WRAPPER = """\
(RayWorkerWrapper pid=392789) ERROR 03-13 16:32:15 worker_base.py:574] torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/CUDAContext.cpp":49, please report a bug to PyTorch. device=1, num_gpus=
(RayWorkerWrapper pid=392789) ERROR 03-13 16:32:15 worker_base.py:574] 
(RayWorkerWrapper pid=392789) ERROR 03-13 16:32:15 worker_base.py:574] CUDA call was originally invoked at:
(RayWorkerWrapper pid=392789) ERROR 03-13 16:32:15 worker_base.py:574] 
"""


# https://github.com/sgl-project/sglang/issues/8296 (no line prefix: the rank is named inside the message)
SGLANG_PG_RANK_IN_MESSAGE = """\
  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""


def test_pg_rank_inside_the_message_names_the_worker():
    _assert_cause(SGLANG_PG_RANK_IN_MESSAGE, "cuda-illegal-memory-access", "1")


# https://github.com/vllm-project/vllm/issues/798 (Ray's `(Name pid=N, ip=...)` prefix)
VLLM_PID_IP_PREFIX = """\
(LLMEngine pid=2347640, ip=10.58.226.15) ncclInternalError: Internal check failed.
(LLMEngine pid=2347640, ip=10.58.226.15) Last error:
(LLMEngine pid=2347640, ip=10.58.226.15) Proxy Call to rank 7 failed (Connect)
"""


def test_pid_and_ip_prefix_names_the_worker():
    _assert_cause(VLLM_PID_IP_PREFIX, "nccl-error", "2347640")


# https://github.com/vllm-project/vllm/issues/28910 (vLLM's engine process names itself `EngineCore_DP0 pid=N`)
VLLM_ENGINECORE_DP0 = """\
(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]     self.workers = WorkerProc.wait_for_ready(unready_workers)
(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]   File "/home/cheng/anaconda3/envs/vllm/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 509, in wait_for_ready
(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]     raise e from None
(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708] Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.
"""


@pytest.mark.parametrize("text, pid", [(OPENRLHF_RAY_WORKER_WRAPPER, "392789"), (VLLM_ENGINECORE_DP0, "33630")],
                         ids=["RayWorkerWrapper", "EngineCore_DP0"])
def test_a_process_prefix_without_a_rank_names_its_pid(text, pid):
    # no family explains these errors (a lazy CUDA init assertion, a bare Exception): the verdict names the
    # same failure the scan printed, and the process it came from
    findings, verdicts = _scan_jsonl(text)
    (v,) = verdicts
    assert findings and v["cause"]["family"] == findings[0]["family"]
    assert _norm_worker(v["cause"]["worker"]) == pid


# https://github.com/verl-project/verl/issues/316 (the raylet's death notice is printed before the fault)
VERL_RAYLET_THEN_IMA = """\
(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffffa1c8eaa4c4d82b37803c0cd101000000 Worker ID: c11941743afb2844fc911f07a15f71a4b06918218e0b932276ce5255 Node ID: c841facebde7fc045123353bfbf0a44fe3eddd50189e48864242b3e7 Worker IP address: 10.49.144.10 Worker port: 32827 Worker PID: 93658 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.
(WorkerDict pid=93663) INFO 02-21 04:32:47 model_runner_base.py:120] Writing input of failed execution to /tmp/err_execute_model_input_20250221-043247.pkl...
(WorkerDict pid=93663) WARNING 02-21 04:32:47 model_runner_base.py:143] Failed to pickle inputs of failed execution: CUDA error: an illegal memory access was encountered
(WorkerDict pid=93663) WARNING 02-21 04:32:47 model_runner_base.py:143] Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""


def test_a_victim_printed_earlier_is_not_the_cause():
    findings, verdicts = _scan_jsonl(VERL_RAYLET_THEN_IMA)
    (v,) = verdicts
    assert (v["cause"]["family"], _norm_worker(v["cause"]["worker"])) == ("cuda-illegal-memory-access", "93663"), v
    assert any(x["family"] == "ray-actor-died" for x in v["victims"]), v


# https://github.com/spawnaga/GeneticTrading (a torchrun log kept in the repository: rank 0 ran a long phase alone
# while the others waited in an all-reduce): NCCL's error traces (`misc/socket.cc:64 -> 3`) come from the watchdog
# aborting the communicator after the timeout, not from an NCCL failure of their own
TORCHRUN_WATCHDOG_THEN_NCCL_TRACES = """\
[rank3]:[E625 03:24:33.089668066 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800099 milliseconds before timing out.
[rank3]:[E625 03:24:33.089804819 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 3]  failure detected by watchdog at work sequence id: 2 PG status: last enqueued work: 2, last completed work: 1
[rank3]:[E625 03:24:33.089809080 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.
[rank3]:[E625 03:24:33.089830417 ProcessGroupNCCL.cpp:2103] [PG ID 0 PG GUID 0(default_pg) Rank 3] First PG on this rank to signal dumping.
[rank1]:[E625 03:24:33.204852544 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800051 milliseconds before timing out.
[rank1]:[E625 03:24:33.205020419 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 1]  failure detected by watchdog at work sequence id: 2 PG status: last enqueued work: 2, last completed work: 1
[rank1]:[E625 03:24:33.205025321 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.
[rank1]:[E625 03:24:33.205065805 ProcessGroupNCCL.cpp:2103] [PG ID 0 PG GUID 0(default_pg) Rank 1] First PG on this rank to signal dumping.
[rank2]:[E625 03:24:33.258673965 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due to a collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work: 2, last completed NCCL work: 1.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be caused by GIL deadlock or other reasons such as network errors or bugs in the communications library (e.g. NCCL), etc. 
[rank2]:[E625 03:24:33.258837592 ProcessGroupNCCL.cpp:1533] [PG ID 0 PG GUID 0(default_pg) Rank 2] ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1
alex-System-Product-Name:36673:39804 [2] NCCL INFO misc/socket.cc:64 -> 3
alex-System-Product-Name:36673:39804 [2] NCCL INFO misc/socket.cc:80 -> 3
alex-System-Product-Name:36673:39804 [2] NCCL INFO misc/socket.cc:829 -> 3
alex-System-Product-Name:36673:39804 [2] NCCL INFO misc/socket.cc:64 -> 3
alex-System-Product-Name:36673:39804 [2] NCCL INFO misc/socket.cc:80 -> 3
alex-System-Product-Name:36673:39804 [2] NCCL INFO misc/socket.cc:829 -> 3
alex-System-Product-Name:36673:36979 [2] NCCL INFO misc/socket.cc:881 -> 3
[rank1]:[E625 03:24:33.269275017 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump signal due to a collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work: 2, last completed NCCL work: 1.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be caused by GIL deadlock or other reasons such as network errors or bugs in the communications library (e.g. NCCL), etc. 
[rank3]:[E625 03:24:33.269275029 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 3] Received a dump signal due to a collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work: 2, last completed NCCL work: 1.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be caused by GIL deadlock or other reasons such as network errors or bugs in the communications library (e.g. NCCL), etc. 
[rank3]:[E625 03:24:33.269345377 ProcessGroupNCCL.cpp:1533] [PG ID 0 PG GUID 0(default_pg) Rank 3] ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1
"""


def test_nccl_traces_below_a_watchdog_timeout_are_its_teardown():
    findings, verdicts = _scan_jsonl(TORCHRUN_WATCHDOG_THEN_NCCL_TRACES)
    (v,) = verdicts
    assert any(f["family"] == "nccl-error" for f in findings), findings  # the traces are still a finding
    assert v["cause"]["family"] == "nccl-watchdog-timeout", v


# https://github.com/boris-dotv/search-r1.v (a verl run's log kept in the repository): the driver prints the relay of
# main_task, whose call to a WorkerDict actor failed because that actor's process died while saving a checkpoint
VERL_DRIVER_RELAYS_ACTOR_DIED = """\
[36m(WorkerDict pid=2370037)[0m /public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.
[36m(WorkerDict pid=2370037)[0m   with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), recompute_context:  # type: ignore[attr-defined]
[36m(WorkerDict pid=2370037)[0m Saving actor checkpoint to verl_checkpoints/nq-search-r1-grpo-qwen2.5-3b-instruct-em/actor/global_step_2
[33m(raylet)[0m A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. Lease ID: 000000003b5c1359eaba804df7a6f676b30fdb2ab6a0d42a4149d273495e02f9 Worker ID: a5f83b036b37b94fb115881b5b9d9d1c32ccd636395a830f223c96ee Node ID: 2b49af218cdef8583384e193e4185785c71b735618a63da4d54ac276 Worker IP address: 172.18.103.5 Worker port: 33979 Worker PID: 2370037 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.
Error executing job with overrides: ['data.train_files=data/nq_search/train.parquet', 'data.val_files=data/nq_search/test.parquet', 'data.train_data_num=null', 'data.val_data_num=256', 'data.train_batch_size=64', 'data.val_batch_size=64', 'data.max_prompt_length=4096', 'data.max_response_length=500', 'data.max_start_length=2048', 'data.max_obs_length=2048', 'data.shuffle_train_dataloader=True', 'algorithm.adv_estimator=grpo', 'actor_rollout_ref.model.path=/public_hw/share/cit_ztyu/cz/models/Qwen2.5-3B-Instruct', 'actor_rollout_ref.model.enable_gradient_checkpointing=true', 'actor_rollout_ref.model.use_remove_padding=True', 'actor_rollout_ref.actor.optim.lr=1e-6', 'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0.285', 'actor_rollout_ref.actor.use_kl_loss=true', 'actor_rollout_ref.actor.ppo_mini_batch_size=32', 'actor_rollout_ref.actor.ppo_micro_batch_size=8', 'actor_rollout_ref.actor.fsdp_config.param_offload=false', 'actor_rollout_ref.actor.fsdp_config.grad_offload=false', 'actor_rollout_ref.actor.fsdp_config.optimizer_offload=false', 'actor_rollout_ref.rollout.log_prob_micro_batch_size=64', 'actor_rollout_ref.rollout.tensor_model_parallel_size=1', 'actor_rollout_ref.rollout.name=vllm', 'actor_rollout_ref.rollout.gpu_memory_utilization=0.45', 'actor_rollout_ref.ref.log_prob_micro_batch_size=64', 'actor_rollout_ref.ref.fsdp_config.param_offload=true', 'actor_rollout_ref.actor.kl_loss_coef=0.001', 'actor_rollout_ref.actor.kl_loss_type=low_var_kl', 'algorithm.no_think_rl=false', 'actor_rollout_ref.rollout.n_agent=4', 'actor_rollout_ref.rollout.temperature=1', 'actor_rollout_ref.actor.state_masking=true', 'trainer.logger=[wandb]', '+trainer.val_only=false', '+trainer.val_before_train=false', 'trainer.default_hdfs_dir=null', 'trainer.n_gpus_per_node=2', 'trainer.nnodes=1', 'trainer.save_freq=1', 'trainer.test_freq=100', 'trainer.project_name=Search-R1', 'trainer.experiment_name=nq-search-r1-grpo-qwen2.5-3b-instruct-em', 'trainer.total_epochs=15', 'trainer.total_training_steps=1005', 'trainer.default_hdfs_dir=null', 'trainer.default_local_dir=verl_checkpoints/nq-search-r1-grpo-qwen2.5-3b-instruct-em', 'max_turns=2', 'retriever.url=http://127.0.0.1:8009/retrieve', 'retriever.topk=3']
Traceback (most recent call last):
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/runpy.py", line 197, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/runpy.py", line 87, in _run_code
    exec(code, run_globals)
  File "/public_hw/share/cit_ztyu/cz/Search-R1/verl/trainer/main_ppo.py", line 207, in <module>
    main()
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/main.py", line 94, in decorated_main
    _run_hydra(
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/_internal/utils.py", line 394, in _run_hydra
    _run_app(
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/_internal/utils.py", line 457, in _run_app
    run_and_report(
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/_internal/utils.py", line 223, in run_and_report
    raise ex
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/_internal/utils.py", line 220, in run_and_report
    return func()
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/_internal/utils.py", line 458, in <lambda>
    lambda: hydra.run(
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/_internal/hydra.py", line 132, in run
    _ = ret.return_value
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/core/utils.py", line 260, in return_value
    raise self._return_value
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/hydra/core/utils.py", line 186, in run_job
    ret.return_value = task_function(task_cfg)
  File "/public_hw/share/cit_ztyu/cz/Search-R1/verl/trainer/main_ppo.py", line 114, in main
    ray.get(main_task.remote(config))
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/ray/_private/auto_init_hook.py", line 22, in auto_init_wrapper
    return fn(*args, **kwargs)
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/ray/_private/client_mode_hook.py", line 104, in wrapper
    return func(*args, **kwargs)
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/ray/_private/worker.py", line 2961, in get
    values, debugger_breakpoint = worker.get_objects(
  File "/public_hw/home/cit_zhishuliu/miniconda3/envs/searchr1/lib/python3.9/site-packages/ray/_private/worker.py", line 1026, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(ActorDiedError): [36mray::main_task()[39m (pid=2368471, ip=172.18.103.5)
  File "/public_hw/share/cit_ztyu/cz/Search-R1/verl/trainer/main_ppo.py", line 203, in main_task
    trainer.fit()
  File "/public_hw/share/cit_ztyu/cz/Search-R1/verl/trainer/ppo/ray_trainer.py", line 835, in fit
    self._save_checkpoint()
  File "/public_hw/share/cit_ztyu/cz/Search-R1/verl/trainer/ppo/ray_trainer.py", line 629, in _save_checkpoint
    self.actor_rollout_wg.save_checkpoint(actor_local_path, actor_remote_path)
  File "/public_hw/share/cit_ztyu/cz/Search-R1/verl/single_controller/ray/base.py", line 42, in func
    output = ray.get(output)
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
	class_name: create_colocated_worker_cls.<locals>.WorkerDict
	actor_id: 944845519790ea751c6613aa01000000
	pid: 2370037
	name: UpWnbxWorkerDict_0:0
	namespace: d4367eba-c8ee-422d-b133-f7de44c99a15
	ip: 172.18.103.5
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.
"""


def test_an_actor_died_relay_names_the_dead_actor_not_the_caller():
    _assert_cause(VERL_DRIVER_RELAYS_ACTOR_DIED, "ray-actor-died", "2370037")


# https://github.com/vllm-project/vllm/issues/4108: the Ray worker's interpreter reports its abort first; the NCCL
# watchdog's error that aborted it (an illegal memory access) is printed just below, in the same second, unprefixed
RAY_WORKER_ABORT_THEN_ITS_ERROR = """\
(RayWorkerVllm pid=7046) [2024-04-16 00:03:25,080 E 7046 7269] logging.cc:361:     @     0x7f514b634520  (unknown)  (unknown)
(RayWorkerVllm pid=7046) Fatal Python error: Aborted
(RayWorkerVllm pid=7046) 
(RayWorkerVllm pid=7046) 
(RayWorkerVllm pid=7046) Extension modules: msgpack._cmsgpack, google._upb._message, psutil._psutil_linux, psutil._psutil_posix, setproctitle, yaml._yaml, charset_normalizer.md, simplejson._speedups, uvloop.loop, ray._raylet, numpy.core._multiarray_umath, numpy.core._multiarray_tests, numpy.linalg._umath_linalg, numpy.fft._pocketfft_internal, numpy.random._common, numpy.random.bit_generator, numpy.random._bounded_integers, numpy.random._mt19937, numpy.random.mtrand, numpy.random._philox, numpy.random._pcg64, numpy.random._sfc64, numpy.random._generator, torch._C, torch._C._fft, torch._C._linalg, torch._C._nested, torch._C._nn, torch._C._sparse, torch._C._special, sentencepiece._sentencepiece, pyarrow.lib, pyarrow._hdfsio, pyarrow._json, PIL._imaging, __triton_launcher, cuda_utils (total: 37)
[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
"""


def test_an_abort_printed_before_the_error_that_caused_it_is_its_victim():
    res = sigclass.classify(RAY_WORKER_ABORT_THEN_ITS_ERROR)
    roots = [f.family for f in res.findings if f.role != "secondary"]
    assert roots == ["cuda-illegal-memory-access"]  # the first finding presented as a cause
    (abort,) = [f for f in res.findings if f.role == "secondary"]
    assert abort.family == "unknown" and abort.root["family"] == "cuda-illegal-memory-access"
    assert res.verdict.cause.family == "cuda-illegal-memory-access"


# --------------------------------------------------------------------------- the API and the MCP result carry it

def test_classify_api_carries_the_same_verdict():
    res = sigclass.classify(QWEN_TIMESTAMPED_RANK3_OOM)
    v = res.verdict
    assert v is not None and v.cause is not None
    assert (v.cause.family, _norm_worker(v.cause.worker)) == ("cuda-oom", "3")
    d = res.to_dict()
    assert d["verdict"]["cause"]["family"] == "cuda-oom"
    again = type(res).from_dict(d)
    assert again.verdict == v


def test_a_clean_log_has_a_verdict_without_cause():
    findings, verdicts = _scan_jsonl("[rank0]: step 10 loss 1.23\n[rank1]: step 10 loss 1.25\n")
    assert findings == []
    assert verdicts == [] or verdicts[0]["cause"] is None


def test_text_and_json_show_the_verdict_first(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(QWEN_TIMESTAMPED_RANK3_OOM)
    proc = subprocess.run([sys.executable, "-m", "sigclass", "scan", "--format", "json", str(log)],
                          capture_output=True, text=True, timeout=300)
    doc = json.loads(proc.stdout)
    assert list(doc)[0] == "verdicts", list(doc)
    assert doc["verdicts"][0]["cause"]["family"] == "cuda-oom"
    proc = subprocess.run([sys.executable, "-m", "sigclass", "scan", str(log)], capture_output=True, text=True, timeout=300)
    first = proc.stdout.lstrip().splitlines()[0]
    assert "cuda-oom" in first and "3" in first, proc.stdout


def test_mcp_classify_log_carries_the_same_verdict(tmp_path):
    pytest.importorskip("mcp")
    import asyncio
    import shutil

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    exe = shutil.which("sigclass")
    command, args = (exe, []) if exe else (sys.executable, ["-m", "sigclass"])
    params = StdioServerParameters(command=command, args=[*args, "mcp", "--root", str(tmp_path)], cwd=str(tmp_path))

    async def drive() -> dict:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=120) as session:
                    await session.initialize()
                    res = await session.call_tool("classify_log", {"text": LONGCHAT_EIGHT_SIGTERMS_ONE_KILL})
                    assert not res.is_error, res.content
                    return res.structured_content

    got = asyncio.run(drive())
    want = sigclass.classify(LONGCHAT_EIGHT_SIGTERMS_ONE_KILL).verdict
    assert got["verdict"]["cause"] == want.cause.to_dict()
    assert (got["verdict"]["cause"]["family"], _norm_worker(got["verdict"]["cause"]["worker"])) == ("host-oom-killed", "4")
