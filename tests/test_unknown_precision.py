"""Unknowns stay unknown: a user's exception followed by the shell's or the scheduler's word of the stop is that
exception's failure (the stop a finding of its own, its victim), and the runtimes' failure lines that print no
Python exception (ONNX Runtime, TensorRT, Open MPI, glog FATAL, C assert) open an `unknown` finding with a
fingerprint that does not depend on where or when they were printed."""

from __future__ import annotations

import pytest

from conftest import elastic_row, elastic_signal_row, elastic_summary

from sigclass.authoring.examples import first_root_family
from sigclass.ledger.pack import load_ledger
from sigclass.scan.scanner import Scanner
from sigclass.scan.triggers import SHELL_STOP


@pytest.fixture(scope="module")
def shipped():
    return Scanner(load_ledger(), signatures="regex")


USER_TRACEBACK = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    main()
ValueError: invalid literal for int() with base 10: 'x'
"""


@pytest.mark.parametrize("stop", [
    "Terminated",
    "Killed",
    "srun: error: node12: task 0: Exited with exit code 1",
    "[1]+  Terminated              python train.py",
    "./run.sh: line 12: 41234 Killed                  python train.py",
    "slurmstepd: error: *** STEP 402211.0 ON node-a CANCELLED AT 2024-09-18T10:21:55 ***",
])
def test_a_stop_after_a_user_exception_does_not_name_it(shipped, stop):
    res = shipped.scan_text(USER_TRACEBACK + stop + "\n")
    assert first_root_family(res.findings) == "unknown"
    unknown = res.findings[0]
    assert unknown.end_line == 4 and stop not in unknown.block


def test_a_stop_alone_is_still_its_family(shipped):
    res = shipped.scan_text("step 10 loss 2.1\nslurmstepd: error: *** JOB 1234 ON node1 CANCELLED AT 2024-01-01T10:00:00 ***\n")
    assert first_root_family(res.findings) == "process-killed-by-signal"


# torchelastic's summary: its exit code lines are the message of its ChildFailedError, not a stop after it
CHILD_FAILED_KILL = elastic_summary(elastic_signal_row(0, 0, 1234, 9, "SIGKILL"))


def test_a_launcher_summary_keeps_its_exit_code(shipped):
    res = shipped.scan_text(CHILD_FAILED_KILL)
    assert first_root_family(res.findings) == "host-oom-killed"


@pytest.mark.parametrize("line", [
    "Killed", "Terminated", "\x1b[0;31mKilled\x1b[0m", "srun: error: n1: task 3: Killed", "[2]-  Killed   python a.py",
    "srun: forcing job termination",
])
def test_shell_stop_lines(line):
    assert SHELL_STOP.match(line)


@pytest.mark.parametrize("line", [
    "Killed process 1234 (python) total-vm:1234kB", "Terminated workers: 0", "KilledByUser: no",
    "  exitcode  : -9 (pid: 1234)", "INFO srun: error: none", "[1] Epoch 3 Killed 0 samples",
])
def test_shell_stop_lines_not(line):
    assert not SHELL_STOP.match(line)


# the same failure printed at another time, by another process: one fingerprint
@pytest.mark.parametrize("a,b", [
    ("[02/19/2022-21:14:43] [TRT] [E] 10: [optimizer.cpp::computeCosts::2011] Error Code 10: Internal Error "
     "(Could not find any implementation for node {ForeignNode[w...MatMul_2899]}.)",
     "[03/01/2023-08:00:01] [TRT] [E] 10: [optimizer.cpp::computeCosts::2011] Error Code 10: Internal Error "
     "(Could not find any implementation for node {ForeignNode[w...MatMul_2899]}.)"),
    ("*** An error occurred in MPI_Init_thread\n*** on a NULL communicator\n[host1:71142] Local abort before MPI_INIT",
     "*** An error occurred in MPI_Init_thread\n*** on a NULL communicator\n[host2:90210] Local abort before MPI_INIT"),
    ("F0612 08:53:36.491003 140171 pjrt_client.cc:2104] Non-OK-status: status",
     "F0613 11:02:07.000101 99 pjrt_client.cc:2104] Non-OK-status: status"),
])
def test_runtime_failures_are_unknown_with_a_stable_fingerprint(shipped, a, b):
    fa = shipped.scan_text(f"INFO start\n{a}\n").findings
    fb = shipped.scan_text(f"INFO start\nINFO loading\n{b}\n").findings
    assert [f.family for f in fa] == [f.family for f in fb] == ["unknown"]
    assert fa[0].fingerprint == fb[0].fingerprint


def test_runtime_warnings_stay_quiet(shipped):
    text = """\
[TRT] [W] TensorRT was linked against cuDNN 8.6.0 but loaded cuDNN 8.5.0
[TRT] [I] [MemUsageChange] Init CUDA: CPU +328, GPU +0, now: CPU 402, GPU 3370 (MiB)
I0612 08:53:36.491003 140171 gpu_helpers.cc:21] Using BFC allocator.
W0612 08:53:36.491003 140171 cuda_executor.cc:1040] could not open file to read NUMA node
2021-05-01 10:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:142] This TensorFlow binary is optimized
[W:onnxruntime:, session_state.cc:1166 VerifyEachNodeIsAssignedToAnEp] Some nodes were not assigned to the preferred execution providers
"""
    assert shipped.scan_text(text).findings == []


# a secondary family's block that holds the exception that failed first: that exception is the failure
RAY_TRAIN_CHAIN = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    result = trainer.fit()
ray.exceptions.RayTaskError(KeyError): ray::_Inner.train() (pid=1200, ip=10.0.0.2, repr=TorchTrainer)
  File "/home/u/train.py", line 12, in train_func
    x = batch["pixel"]
KeyError: 'pixel'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    result = trainer.fit()
ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please inspect the previous error messages for a cause.
"""

RAY_CREATION_TASK = """\
Traceback (most recent call last):
  File "/home/u/run.py", line 20, in <module>
    ray.get(actor.ping.remote())
ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, ray::Trainer.__init__() (pid=5, ip=10.0.0.1, actor_id=ab12)
  File "/home/u/run.py", line 9, in __init__
    wandb.init(project="x")
wandb.errors.errors.CommError: Run initialization has timed out after 90.0 sec
"""

RAY_CREATION_OOM = RAY_CREATION_TASK.replace(
    "wandb.errors.errors.CommError: Run initialization has timed out after 90.0 sec",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")


@pytest.mark.parametrize("text", [RAY_TRAIN_CHAIN, RAY_CREATION_TASK])
def test_a_secondary_family_gives_way_to_the_exception_it_holds(shipped, text):
    res = shipped.scan_text(text)
    assert {f.family for f in res.findings} == {"unknown"}


def test_a_family_the_held_exception_names_wins(shipped):
    assert first_root_family(shipped.scan_text(RAY_CREATION_OOM).findings) == "cuda-oom"


@pytest.mark.parametrize("text", [
    RAY_TRAIN_CHAIN.split("\n\n", 1)[1].split("\n", 1)[1],  # the wrapper alone: nothing says why
    RAY_CREATION_TASK.split("  File \"/home/u/run.py\", line 9")[0],  # the creation error cut off below
    "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
    "\tclass_name: RayTrainWorker\n\tpid: 3415\nThe actor is dead because its worker process has died. "
    "Worker exit type: SYSTEM_ERROR\n",
])
def test_a_secondary_family_alone_keeps_its_name(shipped, text):
    assert first_root_family(shipped.scan_text(text).findings) == "ray-actor-died"


# CPython's word that it ignored the exception below: the run goes on, or exits as it would have
FINALIZER = """\
Epoch 3: 100%|##########| 500/500 [01:00<00:00, 8.3it/s, loss=0.12]
Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f8b2c1e5e50>
Traceback (most recent call last):
  File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1479, in __del__
    self._shutdown_workers()
AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers_status'
"""

AT_EXIT = """\
Training complete. Saved to out/
Error in atexit._run_exitfuncs:
Traceback (most recent call last):
  File "/usr/lib/python3.10/logging/__init__.py", line 2182, in shutdown
    h.flush()
ValueError: I/O operation on closed file.
"""

NO_TRACEBACK = """\
step 10 loss 0.4
Exception ignored while calling deallocator <function Pool.__del__ at 0x7f00>:
ResourceWarning: unclosed running multiprocessing pool
"""


@pytest.mark.parametrize("text", [FINALIZER, AT_EXIT, NO_TRACEBACK])
def test_an_ignored_exception_is_no_failure(shipped, text):
    assert shipped.scan_text(text).findings == []


def test_the_same_exception_not_ignored_is_a_failure(shipped):
    text = FINALIZER.replace("Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f8b2c1e5e50>\n", "")
    assert [f.family for f in shipped.scan_text(text).findings] == ["unknown"]


def test_an_ignored_exception_a_family_names_keeps_it(shipped):
    text = FINALIZER.replace("AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers_status'",
                             "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert first_root_family(shipped.scan_text(text).findings) == "cuda-illegal-memory-access"


@pytest.mark.parametrize("probe", ["GET /health HTTP/1.1\" 500", "GET /metrics HTTP/1.1\" 500", "GET /ping HTTP/1.1\" 502"])
def test_a_health_probe_answered_5xx_is_no_failure(shipped, probe):
    text = f'INFO:     Started server process [1]\nINFO:     10.0.0.5:41234 - "{probe} Internal Server Error\n'
    assert shipped.scan_text(text).findings == []


def test_a_request_answered_5xx_is_a_failure(shipped):
    text = 'INFO:     Started server process [1]\nINFO:     10.0.0.5:41234 - "GET /v1/models HTTP/1.1" 500 Internal Server Error\n'
    assert [f.family for f in shipped.scan_text(text).findings] == ["unknown"]


# Slurm ends the step after one task failed: its siblings are killed by the teardown, not by the OOM killer
SRUN_TEARDOWN = """\
srun: error: node12: task 5: Exited with exit code 1
srun: launch/slurm: _step_signal: Terminating StepId=4357.0
slurmstepd: error: *** STEP 4357.0 ON node12 CANCELLED AT 2021-07-14T08:00:36 ***
srun: error: node12: tasks 3,7: Killed
srun: error: node13: task 8: Killed
"""

# the OOM killer's own word before the same teardown: host RAM it is
SRUN_OOM_TEARDOWN = """\
slurmstepd: error: Detected 1 oom_kill event in StepId=4357.0. Some of the step tasks have been OOM Killed.
srun: error: node12: tasks 1-3: Out Of Memory
srun: Terminating StepId=4357.0
slurmstepd: error: *** STEP 4357.0 ON node12 CANCELLED AT 2023-12-05T07:16:01 ***
srun: error: node12: task 0: Killed
"""


def test_tasks_killed_by_the_step_teardown_are_not_host_oom(shipped):
    res = shipped.scan_text(SRUN_TEARDOWN)
    assert first_root_family(res.findings) == "unknown"
    assert "host-oom-killed" not in {f.family for f in res.findings}
    assert res.verdict.cause.family == "unknown" and res.verdict.cause.worker == "5"


def test_the_oom_killers_word_before_a_teardown_keeps_host_oom(shipped):
    assert first_root_family(shipped.scan_text(SRUN_OOM_TEARDOWN).findings) == "host-oom-killed"


def test_tasks_killed_with_no_teardown_above_stay_host_oom(shipped):
    text = "step 40 loss 1.2\nsrun: error: node12: task 3: Killed\n"
    assert first_root_family(shipped.scan_text(text).findings) == "host-oom-killed"


def test_a_cancel_with_a_reason_after_a_failed_task_stays_the_stop(shipped):
    text = SRUN_TEARDOWN.replace("CANCELLED AT 2021-07-14T08:00:36 ***", "CANCELLED AT 2021-07-14T08:00:36 DUE TO TIME LIMIT ***")
    assert first_root_family(shipped.scan_text(text).findings) == "process-killed-by-signal"


# Ray's driver reports the dead actor before the worker's own last words reach it
RAY_DEAD_THEN_OWN = """\
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
\tclass_name: WorkerDict
\tpid: 27497
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.
(WorkerDict pid=27497) [2025-03-04 19:28:30,014 E 27497 27497] logging.cc:113: Unhandled exception: N5boost10wrapexceptINS_6system12system_errorEEE. what(): thread: Resource temporarily unavailable [system:11]
"""


def test_a_dead_actor_follows_the_workers_own_fatal_line(shipped):
    res = shipped.scan_text(RAY_DEAD_THEN_OWN)
    assert first_root_family(res.findings) == "unknown"
    dead = next(f for f in res.findings if f.family == "ray-actor-died")
    assert dead.role == "secondary"


@pytest.mark.parametrize("line", [
    "Error: [bentoml-cli] `serve` failed: Invalid Tag _service:svc",
    "llama_model_load: error loading model: llama_model_loader: failed to load model",
    "| tensorrt_llm | 1 | UNAVAILABLE: Internal: unexpected error when creating modelInstanceState",
    "2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model server: division by zero",
    "2024-01-01 10:00:00.123 | ERROR    | app.worker:run:88 - Failed to process batch: KeyError('labels')",
])
def test_serving_and_tool_failures_are_unknown(shipped, line):
    res = shipped.scan_text(f"INFO starting\n{line}\n")
    assert [f.family for f in res.findings] == ["unknown"]


@pytest.mark.parametrize("line", [
    "2024-01-01 10:00:00,000 INFO Error: 0.0213 on the validation split",
    "2024-01-01 10:00:00,000 WARNING Error: the cache is cold, filling it",
    "Error: 0.0213",
    "ERROR Failed to start metrics exporter, retrying in 5s",
])
def test_error_words_that_are_no_failure_stay_quiet(shipped, line):
    assert shipped.scan_text(f"INFO starting\n{line}\n").findings == []


# pip retries a failed wheel build with setup.py: the install that then succeeds is no failure
PIP_RETRIED = """\
Building wheels for collected packages: fairscale
  Building wheel for fairscale (setup.py) ... error
  ERROR: Failed building wheel for fairscale
  Running setup.py clean for fairscale
Failed to build fairscale
Installing collected packages: fairscale
  Running setup.py install for fairscale ... done
Successfully installed fairscale-0.4.13
"""


def test_a_wheel_build_pip_retried_is_no_failure(shipped):
    assert shipped.scan_text(PIP_RETRIED).findings == []


def test_an_install_pip_gave_up_on_is_unknown(shipped):
    text = PIP_RETRIED.rsplit("Installing", 1)[0] + (
        "ERROR: Could not build wheels for fairscale, which is required to install pyproject.toml-based projects\n")
    assert [f.family for f in shipped.scan_text(text).findings] == ["unknown"]


def test_a_served_error_body_is_unknown_only_when_nothing_else_explains_it(shipped):
    body = '{"object":"error","message":"This model\'s maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}\n'
    assert [f.family for f in shipped.scan_text("$ curl localhost:8000/v1/completions\n" + body).findings] == ["unknown"]
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert [f.family for f in shipped.scan_text(oom + body).findings] == ["cuda-oom"]


def test_mpirun_with_no_node_name_reports_the_rank(shipped):
    text = "mpirun noticed that process rank 0 with PID 0 on node  exited on signal 4 (Illegal instruction).\n"
    res = shipped.scan_text(text)
    assert [(f.family, f.worker) for f in res.findings] == [("unknown", "0")]


# MPICH's Hydra: the process aborted (134: SIGABRT with a core); the SIGTERM below the banner is its cleanup
HYDRA_ABORT = """\
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 108257 RUNNING AT node1
=   EXIT CODE: 134
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Terminated (signal 15)
"""


def test_hydras_cleanup_sigterm_does_not_name_an_abort(shipped):
    assert first_root_family(shipped.scan_text(HYDRA_ABORT).findings) == "unknown"


def test_hydras_sigterm_alone_is_the_stop(shipped):
    text = HYDRA_ABORT.replace("EXIT CODE: 134", "EXIT CODE: 15")
    assert first_root_family(shipped.scan_text(text).findings) == "process-killed-by-signal"


# a fault line with no Python exception (a CUDA check macro's exit) above a secondary family's line in one block
CHECK_MACRO_THEN_DEAD_WORKER = """\
Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'
(EngineCore) ERROR Worker proc VllmWorker-0 died unexpectedly (exit code: None)
"""


def test_a_fault_line_above_a_secondary_family_is_its_cause(shipped):
    res = shipped.scan_text(CHECK_MACRO_THEN_DEAD_WORKER)
    assert first_root_family(res.findings) == "unknown"
    assert "custom_all_reduce.cuh" in res.findings[0].evidence[0]


def test_a_dead_worker_below_no_fault_line_keeps_its_family(shipped):
    res = shipped.scan_text(CHECK_MACRO_THEN_DEAD_WORKER.split("\n", 1)[1])
    assert first_root_family(res.findings) == "vllm-engine-dead"


# the actor's own exception above Ray's word that it died, in one block
RAY_UNHANDLED_THEN_DIED = """\
2024-05-01 12:00:00,000	ERROR worker.py:406 -- Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::Trainer.__init__() (pid=1234, ip=10.0.0.1, actor_id=abc)
  File "/home/u/train.py", line 30, in __init__
    self.model = build(cfg["model"])
KeyError: 'model'
ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.
"""


@pytest.mark.parametrize("mode", ["regex", "both"])
def test_a_secondary_family_that_gave_way_is_not_guessed_back(mode):
    """With learned signatures on, the model's guess does not bring back the secondary family the block's own
    exception explained."""
    from sigclass.scan.factory import build_scanner

    res = build_scanner(load_ledger(), mode).scan_text(RAY_UNHANDLED_THEN_DIED)
    assert [f.family for f in res.findings] == ["unknown"]


# torchelastic stops the siblings, then its summary names the failed rank and prints the error file's traceback
CHILD_FAILED_RECORDED = (
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 141 closing signal SIGTERM\n"
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 140) of binary: "
    "/usr/bin/python3\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/torchrun", line 8, in <module>\n'
    "    sys.exit(main())\n"
    + elastic_summary(
        elastic_row(0, 0, 140, 1, "Traceback (most recent call last):\n"
                    '    File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/errors/'
                    '__init__.py", line 346, in wrapper\n'
                    "      return f(*args, **kwargs)\n"
                    '    File "/workspace/train.py", line 50, in main\n'
                    '      raise ValueError("num_labels must be 3")\n'
                    "  ValueError: num_labels must be 3\n  ",
                    time="2024-05-01_10:00:01", error_file="/tmp/torchelastic_abc/none_xyz/attempt_0/0/error.json"),
        elastic_signal_row(1, 1, 141, 15, "SIGTERM", time="2024-05-01_10:00:02")))


def test_the_traceback_torchelastics_summary_prints_is_the_root_of_the_stops_above():
    res = Scanner(load_ledger(), signatures="regex").scan_text(CHILD_FAILED_RECORDED)
    assert first_root_family(res.findings) == "unknown"
    assert [f.family for f in res.findings if f.role == "secondary"] == ["process-killed-by-signal"] * 2
    assert "ValueError: num_labels must be 3" in res.findings[-1].evidence


def test_the_summarys_hint_with_no_traceback_leaves_the_stops_alone():
    text = CHILD_FAILED_RECORDED.split("  traceback : Traceback")[0] + "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert first_root_family(res.findings) == "process-killed-by-signal"


# a vLLM front end's report that its engine did not start points at a root above it (or printed late, below it)
ENGINE_NOT_STARTED = """\
(APIServer pid=106)     raise RuntimeError("Engine core initialization failed. "
(APIServer pid=106) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""

ENGINE_NOT_STARTED_ROOT_BELOW = """\
(APIServer pid=2738423) INFO 08-26 08:36:20 [api_server.py:1805] vLLM API server version 0.10.1.1
(APIServer pid=2738423) Traceback (most recent call last):
(APIServer pid=2738423)   File "/usr/local/bin/vllm", line 10, in <module>
(APIServer pid=2738423)     sys.exit(main())
(APIServer pid=2738423)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/utils.py", line 777, in wait_for_engine_startup
(APIServer pid=2738423)     raise RuntimeError("Engine core initialization failed. "
(APIServer pid=2738423) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
(EngineCore_0 pid=2738693) ERROR 08-26 08:36:34 [core.py:700] EngineCore failed to start.
(EngineCore_0 pid=2738693) ERROR 08-26 08:36:34 [core.py:700] Traceback (most recent call last):
(EngineCore_0 pid=2738693) ERROR 08-26 08:36:34 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 691, in run_engine_core
(EngineCore_0 pid=2738693) ERROR 08-26 08:36:34 [core.py:700]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_0 pid=2738693) ERROR 08-26 08:36:34 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 492, in __init__
(EngineCore_0 pid=2738693) ERROR 08-26 08:36:34 [core.py:700]     super().__init__(vllm_config, executor_class, log_stats,
(EngineCore_0 pid=2738693) ERROR 08-26 08:36:34 [core.py:700] ValueError: Unsupported model architecture: FooForCausalLM
(EngineCore_0 pid=2738693) Process EngineCore_0:
(EngineCore_0 pid=2738693) Traceback (most recent call last):
(EngineCore_0 pid=2738693)   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap
(EngineCore_0 pid=2738693)     self.run()
(EngineCore_0 pid=2738693)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 704, in run_engine_core
(EngineCore_0 pid=2738693)     raise e
(EngineCore_0 pid=2738693) ValueError: Unsupported model architecture: FooForCausalLM
"""


def test_an_engine_that_did_not_start_with_nothing_that_says_why_is_unknown(shipped):
    res = shipped.scan_text(ENGINE_NOT_STARTED)
    assert [(f.family, f.role) for f in res.findings] == [("unknown", "root")]
    assert res.findings[0].evidence[-1].startswith("RuntimeError: Engine core initialization failed.")


def test_an_engine_that_did_not_start_follows_the_engines_error_printed_below(shipped):
    res = shipped.scan_text(ENGINE_NOT_STARTED_ROOT_BELOW)
    assert first_root_family(res.findings) == "unknown"
    dead = [f for f in res.findings if f.family == "vllm-engine-dead"]
    assert len(dead) == 1 and dead[0].role == "secondary" and dead[0].root["line"] == 9


def test_an_engine_that_did_not_start_follows_a_family_printed_below(shipped):
    text = ENGINE_NOT_STARTED_ROOT_BELOW.replace("ValueError: Unsupported model architecture: FooForCausalLM",
                                                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.38 GiB")
    assert first_root_family(shipped.scan_text(text).findings) == "cuda-oom"


def test_a_dead_engine_with_nothing_above_keeps_its_family(shipped):
    text = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
    assert first_root_family(shipped.scan_text(text).findings) == "vllm-engine-dead"


# another process's line printed into a traceback already under way: the traceback's exception is the failure
INTERLEAVED_STOP = """\
Traceback (most recent call last):
  File "/workspace/train.py", line 88, in <module>
    main()
  File "/workspace/train.py", line 61, in main
    loss = criterion(out, labels)
Received SIGTERM, exiting
    return F.cross_entropy(input, target, weight=self.weight,
ValueError: Expected input batch_size (16) to match target batch_size (32).
"""

# the stop first, then the traceback it caused
STOP_THEN_TRACEBACK = """\
Received SIGTERM, exiting
Traceback (most recent call last):
  File "/workspace/train.py", line 88, in <module>
    main()
  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e
RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly
"""


def test_a_stop_printed_into_a_traceback_under_way_gives_way_to_its_exception(shipped):
    res = shipped.scan_text(INTERLEAVED_STOP)
    assert [f.family for f in res.findings] == ["unknown"]
    assert res.findings[0].evidence[-1].startswith("ValueError: Expected input batch_size")


def test_a_stop_printed_before_the_traceback_keeps_its_family(shipped):
    assert first_root_family(shipped.scan_text(STOP_THEN_TRACEBACK).findings) == "process-killed-by-signal"


# Ray's own word that the actor's code raised: the actor did not die of anything outside it
RAY_USER_ERROR = """\
Traceback (most recent call last):
  File "/home/u/run.py", line 20, in <module>
    ray.get(actor.ping.remote())
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
\tclass_name: Trainer
\tactor_id: 7c1d5b1e0a
\tpid: 4242
The actor is dead because its worker process has died. Worker exit type: USER_ERROR Worker exit detail: Worker exits because there was an exception in the initialization method (e.g., __init__). Fix the exceptions from the initialization to resolve the issue.
"""


@pytest.mark.parametrize("mode", ["regex", "both", "learned"])
def test_an_actor_whose_code_raised_is_unknown_with_learned_signatures_too(mode):
    """The ledger's `none` patterns rule a family out of a learned guess as well as out of its own patterns."""
    from sigclass.scan.factory import build_scanner

    res = build_scanner(load_ledger(), mode).scan_text(RAY_USER_ERROR)
    assert [f.family for f in res.findings] == ["unknown"]


def test_an_actor_whose_process_died_stays_a_dead_actor():
    from sigclass.scan.factory import build_scanner

    text = RAY_USER_ERROR.split("The actor is dead")[0] + "The actor is dead because its worker process has died. " \
        "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.\n"
    for mode in ("regex", "both"):
        assert first_root_family(build_scanner(load_ledger(), mode).scan_text(text).findings) == "ray-actor-died"


# a logger's warning that the program goes on without an optional package, with the ImportError it caught below
WARNED_IMPORT = """\
WARNING  A matching Triton is not available, some optimizations will not be enabled   __init__.py:61
Traceback (most recent call last):
  File "C:\\venv\\Lib\\site-packages\\xformers\\__init__.py", line 57, in _is_triton_available
    import triton  # noqa
ModuleNotFoundError: No module named 'triton'
"""


@pytest.mark.parametrize("warning", [
    "WARNING  A matching Triton is not available, some optimizations will not be enabled   __init__.py:61",
    "2024-05-01 10:00:00,000 - accel - WARNING - fused kernels not available, falling back to the eager path",
])
def test_an_import_a_warning_says_the_run_goes_on_without_is_no_failure(shipped, warning):
    text = WARNED_IMPORT.replace(WARNED_IMPORT.split("\n")[0], warning).replace("_is_triton_available", "probe")
    assert shipped.scan_text(text).findings == []


def test_the_same_import_with_no_warning_above_is_an_import_error(shipped):
    text = WARNED_IMPORT.split("\n", 1)[1].replace("_is_triton_available", "probe")
    assert first_root_family(shipped.scan_text(text).findings) == "import-error"


def test_a_warning_above_another_exception_does_not_hide_it(shipped):
    text = WARNED_IMPORT.replace("ModuleNotFoundError: No module named 'triton'", "ValueError: bad block size 7")
    assert [f.family for f in shipped.scan_text(text).findings] == ["unknown"]


# vLLM's optional-module probe (vllm/utils/import_utils.py `_has_module`): the import's failure, a CUDA library the
# module links, logged at warning level with its traceback; the engine goes on without the module
VLLM_PROBE = [
    "WARNING 06-25 16:32:09 [import_utils.py:408] Module vllm.third_party.deep_gemm was found but failed to import",
    "WARNING 06-25 16:32:09 [import_utils.py:408] Traceback (most recent call last):",
    'WARNING 06-25 16:32:09 [import_utils.py:408]   File "/opt/vllm/utils/import_utils.py", line 406, in _has_module',
    "WARNING 06-25 16:32:09 [import_utils.py:408]     importlib.import_module(module_name)",
    'WARNING 06-25 16:32:09 [import_utils.py:408]   File "/opt/vllm/third_party/deep_gemm/__init__.py", line 16, in <module>',
    "WARNING 06-25 16:32:09 [import_utils.py:408]     from . import _C",
    "WARNING 06-25 16:32:09 [import_utils.py:408] ImportError: libnvrtc.so.13: cannot open shared object file: No such "
    "file or directory",
    "INFO 06-25 16:32:19 [core.py:306] init engine (profile, create kv cache, warmup model) took 115.81 s",
]


@pytest.mark.parametrize("prefix", ["", "(EngineCore pid=24969) "])
def test_a_probed_module_whose_cuda_library_is_missing_is_no_failure(shipped, prefix):
    assert shipped.scan_text("".join(prefix + x + "\n" for x in VLLM_PROBE)).findings == []


def test_the_same_missing_cuda_library_with_no_warning_above_is_an_environment_mismatch(shipped):
    assert first_root_family(shipped.scan_text("\n".join(VLLM_PROBE[1:]) + "\n").findings) == "cuda-env-mismatch"


TRACKER = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/multiprocessing/resource_tracker.py", line 209, in main',
    "    cache[rtype].remove(name)",
    "KeyError: '/loky-20105-_31z_nje'",
]


@pytest.mark.parametrize("prefix", ["", "(model_worker/1 pid=20105) "])
def test_the_resource_tracker_s_own_keyerror_at_exit_is_no_failure(shipped, prefix):
    text = "".join(prefix + x + "\n" for x in TRACKER)
    assert shipped.scan_text(text).findings == []


def test_a_traceback_through_user_code_that_ends_in_the_tracker_is_still_one(shipped):
    lines = TRACKER[:1] + ['  File "/work/train.py", line 41, in <module>', "    pool.close()"] + TRACKER[1:]
    assert first_root_family(shipped.scan_text("\n".join(lines) + "\n").findings) == "unknown"


# torch._dynamo logs a frame it WON'T CONVERT at warning level, with the exception it caught, and runs that frame
# eagerly; quoted from the LSF job report at
# https://github.com/MrCogito/Deep_learning_2023/blob/e0fd1ea0d0e1dc50b481e9f0515cc7ef9209fd44/outputs/WorkingSetup/Markdown/WorkingSetup_11.md
DYNAMO_WONT_CONVERT = """\
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] WON'T CONVERT <resume in get_neighbours_as_edge_index> /zhome/59/9/198225/Desktop/Deep_learning_2023/Deep_learning_2023/PaiNN.py line 120 
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] due to: 
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] Traceback (most recent call last):
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING]   File "/appl/python/3.10.12/lib/python3.10/concurrent/futures/_base.py", line 403, in __get_result
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING]     raise self._exception
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] FileNotFoundError: [Errno 2] No such file or directory: 'ldconfig'
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] 
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information
[2023-12-03 14:53:32,330] torch._dynamo.convert_frame: [WARNING] 
Epoch [648/650], Train Loss: 0.0008, Train L1 Loss: 0.1963
"""


def test_a_traceback_a_logger_printed_at_warning_level_is_no_failure(shipped):
    assert shipped.scan_text(DYNAMO_WONT_CONVERT).findings == []


@pytest.mark.parametrize("level", ["ERROR", "CRITICAL"])
def test_the_same_traceback_at_an_error_level_is_a_failure(shipped, level):
    res = shipped.scan_text(DYNAMO_WONT_CONVERT.replace("[WARNING]", f"[{level}]"))
    assert first_root_family(res.findings) == "unknown"


def test_a_warning_line_above_a_bare_traceback_does_not_excuse_it(shipped):
    # only the record's own lines at warning level make it caught: a traceback printed after a warning is not
    lines = DYNAMO_WONT_CONVERT.splitlines()
    text = "\n".join(lines[:2] + [x.split("[WARNING] ", 1)[1] for x in lines[2:7]]) + "\n"
    assert first_root_family(shipped.scan_text(text).findings) == "unknown"


# a Slurm job's stderr: `conda activate` in a shell conda never set up, then the job runs (quoted from
# https://github.com/owencqueen/PolymerGNN/blob/c0345c1476f137721039c3d7d8e6772d93075794/formal/arch_ablation/outputs/iv/fold=0.e
CONDA_NOT_INIT_STDERR = """\

CommandNotFoundError: Your shell has not been properly configured to use 'conda activate'.
To initialize your shell, run

    $ conda init <SHELL_NAME>

Currently supported shells are:
  - bash
  - fish
  - tcsh
  - xonsh
  - zsh
  - powershell

See 'conda init --help' for more information and options.

IMPORTANT: You may need to close and restart your shell after running 'conda init'.

"""


def test_conda_s_shell_setup_notice_is_no_failure(shipped):
    assert shipped.scan_text(CONDA_NOT_INIT_STDERR + "epoch 1 done\n").findings == []


def test_a_job_that_then_misses_its_packages_still_fails(shipped):
    missing = ('Traceback (most recent call last):\n  File "train.py", line 1, in <module>\n    import torch_geometric\n'
               "ModuleNotFoundError: No module named 'torch_geometric'\n")
    assert first_root_family(shipped.scan_text(CONDA_NOT_INIT_STDERR + missing).findings) == "import-error"
