"""Root attribution: lines that look like a cause but are what a fault or a stop left behind.

- the check macros of NCCL's examples print one line and exit: the dead-engine line below is vLLM's word of that
  exit, a victim, not part of the fault (training excerpt: vLLM PR 56193);
- Ctrl-C (SIGINT to the whole process group) makes every worker print a KeyboardInterrupt traceback: the line
  saying the signal came (torchelastic's `Received 2 death signal`, DeepSpeed's launcher's `Main process received
  SIGTERM, exiting`) is the story, the tracebacks its victims; a traceback cut short while the launcher was
  already killing its children (`Killing subprocess N` among its frames) is one of them;
- Ray Tune's trial actor (`ray::TrainTrainable.train()`) only relays what the train workers raised: its pid is
  not the worker where the fault began (training excerpt: Ray issue 31828).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
import pytest

import sigclass
from sigclass.text.workers import norm_worker

from test_attribution_properties import interleavings


def _verdict(lines: list[str]):
    return sigclass.classify("\n".join(lines) + "\n").verdict


def _cause(lines: list[str]) -> tuple[str | None, str | None]:
    v = _verdict(lines)
    c = v.cause if v is not None else None
    return (c.family, norm_worker(c.worker)) if c is not None else (None, None)


# --------------------------------------------------------------------------- a check macro's line, then the exit

CHECK_MACRO_THEN_ENGINE = [
    "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'",
    "(EngineCore) ERROR Worker proc VllmWorker-0 died unexpectedly (exit code: None)",
]


def test_a_check_macro_line_is_the_cause_and_the_dead_engine_its_victim():
    v = _verdict(CHECK_MACRO_THEN_ENGINE)
    assert v.cause.family == "unknown"
    assert v.cause.line == 1
    assert [x.family for x in v.victims] == ["vllm-engine-dead"]


def test_a_check_macro_line_is_a_block_of_its_own():
    res = sigclass.classify("\n".join(CHECK_MACRO_THEN_ENGINE) + "\n")
    spans = sorted((f.line, f.end_line, f.family) for f in res.findings)
    assert spans == [(1, 1, "unknown"), (2, 2, "vllm-engine-dead")]


@pytest.mark.parametrize("engine", [
    CHECK_MACRO_THEN_ENGINE[1],
    # vLLM's multiproc executor, with its log header
    "ERROR 01-01 10:00:00 [multiproc_executor.py:140] Worker proc VllmWorker-0 died unexpectedly, shutting down "
    "executor.",
])
def test_a_check_macro_line_printed_below_the_dead_engine_line_is_still_the_cause(engine):
    # the worker's stdout and the engine's log reach the file in either order
    v = _verdict([engine, CHECK_MACRO_THEN_ENGINE[0]])
    assert (v.cause.family, v.cause.line) == ("unknown", 2)
    assert [x.family for x in v.victims] == ["vllm-engine-dead"]


def test_a_dead_engine_line_alone_is_still_the_dead_engine():
    assert _cause(CHECK_MACRO_THEN_ENGINE[1:])[0] == "vllm-engine-dead"


# --------------------------------------------------------------------------- Ctrl-C: the stop, then its tracebacks

def _interrupted(rank: int, frame: str) -> list[str]:
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/w/train.py", line 88, in <module>',
        f"[rank{rank}]:     {frame}",
        f"[rank{rank}]: KeyboardInterrupt",
    ]


AGENT_SIGINT = [
    "W0616 16:14:04.056000 3791882 site-packages/torch/distributed/elastic/agent/server/api.py:739] Received 2 death "
    "signal, shutting down workers",
    "W0616 16:14:04.059000 3791882 site-packages/torch/distributed/elastic/multiprocessing/api.py:1012] Sending "
    "process 3792016 closing signal SIGINT",
]


def _stamped(lines: list[str], ms: int) -> list[str]:
    """A log collector's own timestamp before every line (Kubernetes, Beaker): the tracebacks' lines print first."""
    return [f"2025-06-16T16:14:04.{ms + i:03d}Z {x}" for i, x in enumerate(lines)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([_interrupted(0, "loss.backward()"), _interrupted(1, "optimizer.step()"), AGENT_SIGINT]))
def test_the_signal_the_launcher_received_outranks_the_keyboard_interrupts_it_raised(lines):
    assert _cause(lines) == ("process-killed-by-signal", None)


def test_the_stop_outranks_keyboard_interrupts_a_collector_stamped_earlier():
    lines = _stamped(_interrupted(0, "loss.backward()") + _interrupted(1, "optimizer.step()"), 10) \
        + _stamped(AGENT_SIGINT, 60)
    v = _verdict(lines)
    assert (v.cause.family, v.cause.worker) == ("process-killed-by-signal", None)
    assert {norm_worker(x.worker) for x in v.victims if x.family == "process-killed-by-signal"} >= {"0", "1"}


def test_keyboard_interrupts_alone_are_still_a_stop():
    assert _cause(_interrupted(0, "loss.backward()") + _interrupted(1, "optimizer.step()"))[0] \
        == "process-killed-by-signal"


# DeepSpeed's launcher (launcher/launch.py, sigkill_handler): `Killing subprocess {pid}` for each child, then
# `Main process received {signal name}, exiting`; the children's tracebacks interleave without prefixes
DEEPSPEED_CTRL_C = [
    "Traceback (most recent call last):",
    "Traceback (most recent call last):",
    '  File "/w/pretrain_gpt.py", line 276, in <module>',
    '  File "/w/pretrain_gpt.py", line 276, in <module>',
    "[2022-10-29 00:11:48,109] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58799",
    "    pretrain(train_valid_test_datasets_provider, model_provider, forward_step,",
    '  File "/w/megatron/training.py", line 166, in pretrain',
    "    sampled_indices = torch.multinomial(prob_dist, reserved_length)",
    "KeyboardInterrupt",
    "",
    "[2022-10-29 00:11:49,560] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58800",
    "[2022-10-29 00:11:52,534] [INFO] [launch.py:295:sigkill_handler] Main process received SIGTERM, exiting",
]


def test_a_traceback_cut_short_by_the_launcher_s_kill_lines_is_not_the_cause():
    v = _verdict(DEEPSPEED_CTRL_C)
    assert v.cause.family == "process-killed-by-signal"
    assert v.cause.line == len(DEEPSPEED_CTRL_C)  # the launcher's word of the signal


# eight ranks' tracebacks after Ctrl-C, interleaved (training excerpt: Megatron-DeepSpeed's MoE example log, the
# launcher's kill lines taken out)
KI_STORM = [
    'Traceback (most recent call last):',
    'Traceback (most recent call last):',
    '  File "/w/Megatron-DeepSpeed-internal/examples/MoE/../../pretrain_gpt.py", line 276, in <module>',
    'Traceback (most recent call last):',
    '  File "/w/Megatron-DeepSpeed-internal/examples/MoE/../../pretrain_gpt.py", line 276, in <module>',
    '  File "/w/Megatron-DeepSpeed-internal/examples/MoE/../../pretrain_gpt.py", line 276, in <module>',
    'Traceback (most recent call last):',
    '  File "/w/Megatron-DeepSpeed-internal/examples/MoE/../../pretrain_gpt.py", line 276, in <module>',
    'Traceback (most recent call last):',
    '  File "/w/Megatron-DeepSpeed-internal/examples/MoE/../../pretrain_gpt.py", line 276, in <module>',
    'Traceback (most recent call last):',
    '  File "/w/Megatron-DeepSpeed-internal/examples/MoE/../../pretrain_gpt.py", line 276, in <module>',
    'Traceback (most recent call last):',
    '  File "/w/Megatron-DeepSpeed-internal/examples/MoE/../../pretrain_gpt.py", line 276, in <module>',
    '        pretrain(train_valid_test_datasets_provider, model_provider, forward_step,pretrain(train_valid_test_datasets_provider, model_provider, forward_step,',
    '    ',
    '  File "/w/Megatron-DeepSpeed-internal/megatron/training.py", line 166, in pretrain',
    'pretrain(train_valid_test_datasets_provider, model_provider, forward_step,  File "/w/Megatron-DeepSpeed-internal/megatron/training.py", line 166, in pretrain',
    '    ',
    '  File "/w/Megatron-DeepSpeed-internal/megatron/training.py", line 166, in pretrain',
    'pretrain(train_valid_test_datasets_provider, model_provider, forward_step,',
    '  File "/w/Megatron-DeepSpeed-internal/megatron/training.py", line 166, in pretrain',
    'sampled_indices, part_attention_mask = gpt_sample_tokens(attention_mask,',
    '  File "/w/DeepSpeed-internal-connor/deepspeed/ops/token_dropping/dropping_utils.py", line 23, in gpt_sample_tokens',
    '    return forward_call(*input, **kwargs)',
    '      File "/w/Megatron-DeepSpeed-internal/megatron/model/transformer.py", line 485, in forward',
    'return forward_call(*input, **kwargs)',
    'Traceback (most recent call last):',
    '  File "/w/Megatron-DeepSpeed-internal/megatron/model/transformer.py", line 485, in forward',
    '  File "/opt/conda/bin/deepspeed", line 6, in <module>',
    '    sampled_indices = torch.multinomial(prob_dist, reserved_length)',
    '    KeyboardInterruptsampled_indices = torch.multinomial(prob_dist, reserved_length)    ',
    '',
    'scatter_results = token_dropping_module.token_scatter_(',
    '    sampled_indices = torch.multinomial(prob_dist, reserved_length)',
    'KeyboardInterruptKeyboardInterrupt    sampled_indices = torch.multinomial(prob_dist, reserved_length)KeyboardInterrupt',
]


def test_tracebacks_cut_short_in_a_keyboard_interrupt_storm_are_the_stop_s():
    # the tracebacks whose KeyboardInterrupt line was glued to another's line end with no error line: they say nothing
    v = _verdict(KI_STORM)
    assert v.cause.family == "process-killed-by-signal"
    assert all(x.family != "unknown" for x in v.independent)


def test_a_traceback_cut_short_long_before_the_interrupts_still_counts():
    v = _verdict(KI_STORM[:3] + [""] + [f"[INFO] waiting for the peers ({i})" for i in range(300)] + KI_STORM[27:])
    assert v.cause.family == "unknown"


def test_a_traceback_cut_short_with_no_kill_among_its_frames_still_counts():
    lines = [x for x in DEEPSPEED_CTRL_C if "Killing subprocess" not in x and "Main process" not in x]
    cut = lines[:4]  # two tracebacks, no error line: a failure nothing else explains
    v = _verdict(cut + ["[2022-10-29 00:11:52,534] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 58800"])
    assert v.cause is not None and v.cause.family == "unknown"


# --------------------------------------------------------------------------- Ray Tune's trial actor relays

RAY_TRIAL_RELAY = [
    "(RayTrainWorker pid=1942, ip=100.97.252.234) 17-Jan-23 17:21:19 [Worker:0] [INFO] Returning from train func!!",
    "2023-01-17 17:21:35,472\tWARNING worker.py:1829 -- A worker died or was killed while executing a task by an "
    "unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: "
    "ffffffffffffffff686c4586a18aa58bf9747eb504000000 Worker ID: 0c62b78d30f3642bc1fc9a6f3cb257202e1230b03d988031722bc993"
    " Node ID: 38300cefdc3b42caebdba478cc1da1adbba154304cecb24fd8ba1a7e Worker IP address: 100.97.252.234 Worker port: "
    "10016 Worker PID: 1942 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
    "connection error code 2. End of file.",
    "2023-01-17 17:21:35,509\tERROR trial_runner.py:980 -- Trial TorchTrainer_b13e7_00000: Error processing event.",
    "ray.exceptions.RayTaskError(RuntimeError): ray::TrainTrainable.train() (pid=1876, ip=100.97.252.234, "
    "repr=TorchTrainer)",
]


def test_a_trial_actor_s_relay_names_the_worker_ray_reported_dead():
    v = _verdict(RAY_TRIAL_RELAY)
    assert norm_worker(v.cause.worker) == "1942"
    assert v.cause.family == "unknown"


def test_a_relay_from_a_worker_actor_keeps_that_worker():
    relay = RAY_TRIAL_RELAY[3].replace("ray::TrainTrainable.train() (pid=1876",
                                       "ray::RayTrainWorker._RayTrainWorker__execute() (pid=2001")
    assert _cause(RAY_TRIAL_RELAY[2:3] + [relay]) == ("unknown", "2001")


def test_a_trial_actor_s_relay_with_no_dead_worker_keeps_its_own_pid():
    assert _cause(RAY_TRIAL_RELAY[2:]) == ("unknown", "1876")


def test_a_nested_relay_names_the_inner_worker_over_the_trial_actor():
    inner = "ray.exceptions.RayTaskError(RuntimeError): ray::RayTrainWorker._RayTrainWorker__execute() (pid=1942, " \
            "ip=100.97.252.234, repr=<ray.train._internal.worker_group.RayTrainWorker object at 0x7f>)"
    assert _cause(RAY_TRIAL_RELAY[2:] + ['  File "/w/ray/train/_internal/utils.py", line 54, in check_for_failure',
                                         inner])[1] == "1942"


# --------------------------------------------------------------------------- a worker's exception, then its exit

KEYERROR_RANK3 = [
    "[rank3]: Traceback (most recent call last):",
    '[rank3]:   File "/w/train.py", line 30, in <module>',
    '[rank3]:     ids = batch["input_ids"]',
    "[rank3]: KeyError: 'input_ids'",
]
WATCHDOG_RANK1 = [
    "[rank1]:[E1120 14:57:16.100000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for "
    "600012 milliseconds before timing out.",
]


def _elastic_exit(code: int, rank: int = 3, pid: int = 7790) -> list[str]:
    # torchelastic's agent (elastic/multiprocessing/api.py): `failed (exitcode: %s) local_rank: %s (pid: %s) of
    # binary: %s`
    return ["W1120 14:57:20.551000 7710 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 7788 "
            "closing signal SIGTERM",
            f"E1120 14:57:21.000000 7710 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
            f"{code}) local_rank: {rank} (pid: {pid}) of binary: /usr/bin/python"]


@pytest.mark.parametrize("code, family", [(-9, "host-oom-killed"), (-11, "segfault"), (-7, "shm-exhausted")])
def test_a_worker_s_exit_after_its_own_exception_is_its_symptom(code, family):
    v = _verdict(KEYERROR_RANK3 + WATCHDOG_RANK1 + _elastic_exit(code))
    assert (v.cause.family, norm_worker(v.cause.worker)) == ("unknown", "3")
    assert (family, "3") in {(x.family, norm_worker(x.worker)) for x in v.victims}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([KEYERROR_RANK3, WATCHDOG_RANK1, _elastic_exit(-9)]))
def test_the_exception_outranks_its_worker_s_kill_in_any_interleaving(lines):
    assert _cause(lines) == ("unknown", "3")


def test_another_worker_s_kill_is_not_a_symptom_of_this_exception():
    # rank 3 raised; rank 2 was killed with nothing of its own: the kill stays a candidate of its own rank
    v = _verdict(KEYERROR_RANK3 + WATCHDOG_RANK1 + _elastic_exit(-9, rank=2, pid=7789))
    assert (v.cause.family, norm_worker(v.cause.worker)) == ("host-oom-killed", "2")


def test_a_kill_the_kernel_owned_to_stays_the_cause():
    kernel = ["[Wed Nov 20 14:57:19 2024] Out of memory: Killed process 7790 (python) total-vm:98765432kB, "
              "anon-rss:87654321kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:180000kB oom_score_adj:0"]
    v = _verdict(KEYERROR_RANK3 + kernel + _elastic_exit(-9))
    assert (v.cause.family, norm_worker(v.cause.worker)) == ("host-oom-killed", "3")


CHILD_FAILED = [
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "[1]:",
    "  time      : 2024-11-20_14:57:21",
    "  host      : node1",
    "  rank      : 3 (local_rank: 3)",
    "  exitcode  : -11 (pid: 7790)",
    "  error_file: <N/A>",
    "  traceback : Signal 11 (SIGSEGV) received by PID 7790",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2024-11-20_14:57:21",
    "  host      : node1",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : -6 (pid: 7788)",
    "  error_file: <N/A>",
    "  traceback : Signal 6 (SIGABRT) received by PID 7788",
    "============================================================",
]


def test_a_report_s_family_and_worker_come_from_the_same_row():
    # the SIGSEGV row is rank 3's: the report's segfault is rank 3's, a symptom of its KeyError, whichever rank
    # torchelastic observed first (rank 1's watchdog aborted it: SIGABRT)
    v = _verdict(KEYERROR_RANK3 + WATCHDOG_RANK1 + CHILD_FAILED)
    assert (v.cause.family, norm_worker(v.cause.worker)) == ("unknown", "3")
    assert ("segfault", "3") in {(x.family, norm_worker(x.worker)) for x in v.victims}


def test_what_other_workers_print_after_a_keyboard_interrupt_is_the_stop_s():
    # Ctrl-C sends SIGINT to every process of the group: rank 2 and 3, waiting on the ranks that stopped, then lose
    # their peers; those errors are what the stop did
    rank2 = [x.replace("[rank3]", "[rank2]") for x in KEYERROR_RANK3[:3]] + [
        "[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
        "remote process exited or there was a network error, NCCL version 2.21.5"]
    rank3 = KEYERROR_RANK3[:3] + [
        "[rank3]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
        "[10.0.0.2]:4312"]
    v = _verdict(_interrupted(0, "loss.backward()") + _interrupted(1, "optimizer.step()") + rank2 + rank3)
    assert v.cause.family == "process-killed-by-signal"
    assert {("nccl-error", "2"), ("unknown", "3")} <= {(x.family, norm_worker(x.worker)) for x in v.victims}


def test_an_error_printed_before_the_keyboard_interrupts_stays_the_cause():
    # a rank failed, the others hung, and the user pressed Ctrl-C
    v = _verdict(KEYERROR_RANK3 + _interrupted(0, "loss.backward()") + _interrupted(1, "optimizer.step()"))
    assert (v.cause.family, norm_worker(v.cause.worker)) == ("unknown", "3")


OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.02 GiB is free.")
TRIAL_ACTOR_COPY = [
    "(TrainTrainable pid=96138) Traceback (most recent call last):",
    '(TrainTrainable pid=96138)   File "/ray/train/trainer.py", line 687, in _run_with_error_handling',
    "(TrainTrainable pid=96138)     return func()",
    f"(TrainTrainable pid=96138) {OOM}",
]
TRAIN_WORKER_OWN = [
    "(RayTrainWorker pid=96200, ip=10.0.0.1) Traceback (most recent call last):",
    '(RayTrainWorker pid=96200, ip=10.0.0.1)   File "/w/train.py", line 88, in train_func',
    "(RayTrainWorker pid=96200, ip=10.0.0.1)     loss = model(batch).loss",
    f"(RayTrainWorker pid=96200, ip=10.0.0.1) {OOM}",
]
DRIVER_RELAY = [
    "2023-01-17 17:21:35,509\tERROR trial_runner.py:980 -- Trial TorchTrainer_b13e7_00000: Error processing event.",
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::TrainTrainable.train() (pid=96138, ip=10.0.0.1, "
    "repr=TorchTrainer)",
    '  File "/ray/train/trainer.py", line 687, in _run_with_error_handling',
    OOM,
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interleavings([TRIAL_ACTOR_COPY, TRAIN_WORKER_OWN]))
def test_a_trial_actor_s_copy_of_a_train_worker_s_fault_is_not_its_origin(lines):
    v = _verdict(lines + DRIVER_RELAY)
    assert (v.cause.family, norm_worker(v.cause.worker)) == ("cuda-oom", "96200")
    assert not v.independent  # the trial actor's copy and the driver's relay are the same fault


# --------------------------------------------------------------------------- a kill on a prefixed line

@pytest.mark.parametrize("prefix, worker", [
    ("[0]<stderr>:", "0"),  # Open MPI's --tag-output (Horovod's mpirun)
    ("[1,2]<stdout>:", "2"),
    ("node-2: ", "node-2"),  # pdsh (DeepSpeed's and Accelerate's multi-node runners)
    ("gpu187: ", "gpu187"),
    ("gpu187:2: ", "gpu187:2"),  # pdsh's host before torchrun's --tee rank
    ("10.0.0.7: ", "10.0.0.7"),
])
def test_the_shell_s_killed_on_a_worker_s_prefixed_line_is_that_worker_s_kill(prefix, worker):
    assert _cause([f"{prefix}Killed"]) == ("host-oom-killed", norm_worker(worker))


def test_a_killed_rank_outranks_its_peers_gloo_errors():
    # a rank taken by SIGKILL prints only the shell's word; its peers' Gloo pairs lose it (Horovod issue 2907 form)
    lines = [
        "[0]<stderr>:Killed",
        "[1]<stderr>:terminate called after throwing an instance of 'gloo::IoException'",
        "[1]<stderr>:  what():  [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error "
        "[127.0.0.1]:3977: Connection reset by peer",
        "[1]<stderr>:Aborted (core dumped)",
    ]
    assert _cause(lines) == ("host-oom-killed", "0")


# --------------------------------------------------------------------------- the same unknown error on every rank

def _keyerror(prefix: str, *, header: bool = True) -> list[str]:
    lines = ['  File "train_itm.py", line 221, in main', '    LOGGER.info(f"image retrieval R1: "', "KeyError: 'img_r1'"]
    return [prefix + x for x in (["Traceback (most recent call last):"] if header else []) + lines]


@pytest.mark.parametrize("header", [True, False])
def test_an_unknown_error_every_rank_raises_alike_began_on_the_rank_printed_first(header):
    # Horovod's mpirun (Open MPI's --tag-output): rank 2's traceback comes first (its head cut off or not); ranks 1
    # and 3 print the same error after it. No timestamps: the first printed is the first that failed, not the lowest rank
    lines = _keyerror("[1,2]<stderr>:", header=header) + _keyerror("[1,1]<stderr>:") + _keyerror("[1,3]<stderr>:")
    assert _cause(lines) == ("unknown", "2")


# --------------------------------------------------------------------------- SIGTERM lines, then the agent's ChildFailedError

def _agent_raises(code: str) -> list[str]:
    return [
        "W1006 18:04:10.189615 1264 torch/distributed/elastic/multiprocessing/api.py:851] Sending process 121 closing signal SIGTERM",
        f"E1006 18:04:10.454885 1264 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: {code}) "
        "local_rank: 5 (pid: 119) of binary: /opt/conda/bin/python",
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/torchrun", line 33, in <module>',
        "    sys.exit(main())",
        '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 263, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    ]


def test_the_sigterm_before_the_agent_s_child_failed_error_is_a_victim():
    res = sigclass.classify("\n".join(_agent_raises("1")) + "\n")
    stop = next(f for f in res.findings if f.family == "process-killed-by-signal")
    assert stop.role == "secondary"
    assert [f.family for f in res.findings if f.role != "secondary"][0] == "unknown"
    assert (res.verdict.cause.family, norm_worker(res.verdict.cause.worker)) == ("unknown", "5")


def test_every_rank_s_watchdog_without_a_timestamp_began_on_the_rank_printed_first():
    def wd(r: int, ms: int) -> str:
        return (f"[rank{r}]:[E ProcessGroupNCCL.cpp:754] [Rank {r}] Watchdog caught collective operation timeout: "
                f"WorkNCCL(SeqNum=305, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for {ms} milliseconds "
                "before timing out.")
    lines = [wd(2, 600381), "host:6727:7168 [1] NCCL INFO [Service thread] Connection closed by localRank 2",
             wd(0, 600528), wd(1, 600916)]
    assert _cause(lines) == ("nccl-watchdog-timeout", "2")


# --------------------------------------------------------------------------- a reporter's indent over the agent's lines

# milabench relays the agent's output under its own `        | ` indent; the SIGTERM block there runs on over the
# agent's line naming the child that failed (exit 1: its own error, out of view)
INDENTED_AGENT = [
    "        | W0312 00:49:04.930000 184948 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 185003 closing signal SIGTERM",
    "        | W0312 00:49:04.931000 184948 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 185005 closing signal SIGTERM",
    "        | E0312 00:49:05.096000 184948 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 185002) of binary: /venv/bin/python",
    "    * 1 x torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "        | Traceback (most recent call last):",
    '        |   File "/venv/bin/tune", line 8, in <module>',
    "        | sys.exit(main())",
]


def test_the_siblings_stopped_before_the_failed_child_is_named_are_its_victims():
    res = sigclass.classify("\n".join(INDENTED_AGENT) + "\n")
    assert _cause(INDENTED_AGENT) == ("unknown", "0")
    first = next(f for f in res.findings if f.role != "secondary")
    assert first.family == "unknown", [(f.family, f.role, f.line) for f in res.findings]


def test_torch_spawn_s_process_number_is_the_worker():
    assert norm_worker("process 0") == norm_worker("[rank0]:") == "0"
    assert norm_worker("Process 3") == "3"


# --------------------------------------------------------------------------- a process that aborted and said nothing else

# every rank's watchdog fires at once (nothing else in view); another Ray worker's absl handler reports its abort()
WATCHDOG_THEN_BARE_ABORT = [
    "(RayWorkerWrapper pid=270291) [E219 08:58:32.606233339 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=31, OpType=ALLREDUCE, NumelIn=117440512, NumelOut=117440512, "
    "Timeout(ms)=600000) ran for 600042 milliseconds before timing out.",
    "(RayWorkerWrapper pid=270237) *** SIGABRT received at time=1739955512 on cpu 15 ***",
    "(RayWorkerWrapper pid=270237) PC: @     0x7f4073f4d9fc  (unknown)  pthread_kill",
    "(RayWorkerWrapper pid=270237)     @     0x7f4073ef9520  (unknown)  (unknown)",
]


def test_a_bare_abort_says_less_than_a_watchdog_s_timeout():
    assert _cause(WATCHDOG_THEN_BARE_ABORT)[0] == "nccl-watchdog-timeout"


def test_a_bare_abort_alone_is_still_the_cause():
    assert _cause(WATCHDOG_THEN_BARE_ABORT[1:])[0] == "unknown"


def test_an_abort_with_its_own_error_outranks_the_watchdog():
    lines = [WATCHDOG_THEN_BARE_ABORT[0],
             "(RayWorkerWrapper pid=270237) RuntimeError: shape '[-1, 4096]' is invalid for input of size 100",
             *WATCHDOG_THEN_BARE_ABORT[1:]]
    assert _cause(lines) == ("unknown", "270237")


# --------------------------------------------------------------------------- the launcher telling a child's failure again

ACCELERATE_AFTER_OOM = [
    "[rank1]: Traceback (most recent call last):",
    '[rank1]:   File "/work/train.py", line 70, in main',
    "[rank1]:     loss.backward()",
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 1 has a total capacity of "
    "23.65 GiB of which 1.02 GiB is free.",
    "E1203 10:00:01.456000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
    "local_rank: 1 (pid: 4245) of binary: /env/bin/python",
    "Traceback (most recent call last):",
    '  File "/env/bin/accelerate", line 8, in <module>',
    "    sys.exit(main())",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : 1 (pid: 4245)",
    "============================================================",
]


def test_the_launcher_s_report_of_a_failed_child_is_that_child_s_victim():
    res = sigclass.classify("\n".join(ACCELERATE_AFTER_OOM) + "\n")
    roots = [(f.family, f.worker) for f in res.findings if f.role == "root"]
    assert roots == [("cuda-oom", "1")]
    report = next(f for f in res.findings if f.family == "unknown")
    assert report.role == "secondary" and report.root["family"] == "cuda-oom"


def test_the_launcher_s_report_alone_stays_the_root():
    res = sigclass.classify("\n".join(ACCELERATE_AFTER_OOM[4:]) + "\n")
    assert [f.role for f in res.findings if f.family == "unknown"] == ["root"]


RAY_DRIVER_RELAY = [
    "(RayTrainWorker pid=5124, ip=10.0.0.6) Traceback (most recent call last):",
    '(RayTrainWorker pid=5124, ip=10.0.0.6)   File "/work/train.py", line 55, in train_func',
    "(RayTrainWorker pid=5124, ip=10.0.0.6)     out = model(batch)",
    "(RayTrainWorker pid=5124, ip=10.0.0.6) KeyError: 'input_ids'",
    "2025-01-01 10:00:05,000\tERROR tune_controller.py:1331 -- Trial task failed for trial TorchTrainer_abc12_00000",
    "Traceback (most recent call last):",
    '  File "/env/lib/python3.11/site-packages/ray/air/execution/_internal/event_manager.py", line 110, in resolve_future',
    "    result = ray.get(future)",
    "ray.exceptions.RayTaskError(KeyError): ray::_Inner.train() (pid=5000, ip=10.0.0.5, actor_id=abc, repr=TorchTrainer)",
    '  File "/work/train.py", line 55, in train_func',
    "    out = model(batch)",
    "KeyError: 'input_ids'",
    "(RayTrainWorker pid=5123, ip=10.0.0.5) [rank1]:[E101 10:10:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog "
    "caught collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600042 milliseconds before timing out.",
]


def test_the_driver_s_relay_of_a_worker_s_exception_is_that_worker_s_victim():
    res = sigclass.classify("\n".join(RAY_DRIVER_RELAY) + "\n")
    assert [(f.line, f.worker) for f in res.findings if f.role == "root"] == [(1, "5124")]
    # the relay, and the watchdog that had pointed at it, both point at the worker's own exception
    assert {f.root["line"] for f in res.findings if f.role == "secondary"} == {1}


def test_a_relay_of_another_exception_stays_a_root_of_its_own():
    lines = [x.replace("KeyError: 'input_ids'", "ValueError: bad shape") if i > 4 else x
             for i, x in enumerate(RAY_DRIVER_RELAY)]
    res = sigclass.classify("\n".join(lines) + "\n")
    assert sorted(f.line for f in res.findings if f.role == "root") == [1, 6]


# vLLM 0.8-0.9: a worker's error under its `(VllmWorker rank=1 pid=N)` prefix, then EngineCore re-raising it in lines
# with no prefix of their own
UNPREFIXED_ENGINE_COPY = [
    "(VllmWorker rank=1 pid=3412) ERROR 03-01 12:04:11 [multiproc_executor.py:527] WorkerProc hit an exception.",
    "(VllmWorker rank=1 pid=3412) ERROR 03-01 12:04:11 [multiproc_executor.py:527] Traceback (most recent call last):",
    '(VllmWorker rank=1 pid=3412) ERROR 03-01 12:04:11 [multiproc_executor.py:527]   File "/env/vllm/v1/executor/'
    'multiproc_executor.py", line 522, in worker_busy_loop',
    "(VllmWorker rank=1 pid=3412) ERROR 03-01 12:04:11 [multiproc_executor.py:527]     output = func(*args, **kwargs)",
    "(VllmWorker rank=1 pid=3412) ERROR 03-01 12:04:11 [multiproc_executor.py:527] RuntimeError: CUDA error: an illegal "
    "memory access was encountered",
    "ERROR 03-01 12:04:11 [core.py:517] EngineCore encountered a fatal error.",
    "ERROR 03-01 12:04:11 [core.py:517] Traceback (most recent call last):",
    'ERROR 03-01 12:04:11 [core.py:517]   File "/env/vllm/v1/engine/core.py", line 508, in run_engine_core',
    "ERROR 03-01 12:04:11 [core.py:517]     engine_core.run_busy_loop()",
    "ERROR 03-01 12:04:11 [core.py:517] RuntimeError: CUDA error: an illegal memory access was encountered",
]


def test_an_unprefixed_copy_of_a_worker_s_error_is_no_second_worker_struck():
    res = sigclass.classify("\n".join(UNPREFIXED_ENGINE_COPY) + "\n")
    assert [(f.line, f.role) for f in res.findings] == [(2, "root"), (7, "secondary")]
    assert res.verdict.cause.worker == "1" and not res.verdict.independent


def test_an_unprefixed_error_of_its_own_words_stays_independent():
    lines = [*UNPREFIXED_ENGINE_COPY[:-1], "ERROR 03-01 12:04:11 [core.py:517] RuntimeError: CUDA error: an illegal "
             "memory access was encountered (at a kernel of its own)"]
    res = sigclass.classify("\n".join(lines) + "\n")
    assert [f.role for f in res.findings] == ["root", "root"]


def test_jsonl_records_of_a_file_carry_the_settled_roles(tmp_path, capsys):
    import json

    from sigclass.cli.plain import run_scan

    log = tmp_path / "ray.log"
    log.write_text("\n".join(RAY_DRIVER_RELAY) + "\n")
    run_scan([str(log)], fmt="jsonl")
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    found = {r["line"]: r for r in recs if r.get("kind") != "verdict"}
    assert found[1]["role"] == "root"
    assert found[6]["role"] == "secondary" and found[6]["root"]["line"] == 1
    assert recs[-1]["kind"] == "verdict"


# SGLang's launcher SIGKILLs its own process tree once a child failed: the shell's `Killed` is that teardown
SGLANG_TREE_KILL = [
    "[2025-03-01 10:00:05 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 574, in event_loop_overlap',
    "    result = self.run_batch(batch)",
    "KeyError: 'llm.model.layers.0.self_attn.k_norm.weight'",
    "",
    "[2025-03-01 10:00:05] Received sigquit from a child process. It usually means the child failed.",
    "Killed",
]


def test_the_shell_s_killed_after_sglang_s_tree_kill_is_no_host_oom():
    v = _verdict(SGLANG_TREE_KILL)
    assert (v.cause.family, v.cause.worker) == ("unknown", "1")
    assert "host-oom-killed" not in {c.family for c in v.independent}


def test_a_killed_further_down_after_sglang_s_tree_kill_is_its_victim():
    lines = [*SGLANG_TREE_KILL[:-1], "[2025-03-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent "
             "call last):", "RuntimeError: NCCL communicator was aborted on rank 0.", "Killed"]
    res = sigclass.classify("\n".join(lines) + "\n")
    kill = next(f for f in res.findings if f.family == "host-oom-killed")
    assert kill.role == "secondary"
    assert "host-oom-killed" not in {c.family for c in res.verdict.independent}


def test_a_killed_with_no_tree_kill_above_stays_a_host_oom():
    lines = [*SGLANG_TREE_KILL[:4], "Killed"]
    assert "host-oom-killed" in {f.family for f in sigclass.classify("\n".join(lines) + "\n").findings
                                 if f.role == "root"}


# Lightning's child-process observer SIGKILLs every process once a child failed, itself included
LIGHTNING_TREE_KILL = [
    "Epoch 0:  12%|█▏        | 120/1000 [00:30<03:40,  4.00it/s, v_num=3, train_loss=2.31]",
    "[rank: 1] Child process with PID 652 terminated with code 1. Forcefully terminating all other processes to "
    "avoid zombies 🧟",
    "Killed",
]


def test_lightning_s_child_exit_names_the_worker_and_its_tree_kill_is_no_host_oom():
    res = sigclass.classify("\n".join(LIGHTNING_TREE_KILL) + "\n")
    assert (res.verdict.cause.family, res.verdict.cause.worker) == ("unknown", "1")
    assert [x.family for x in res.verdict.victims] == ["host-oom-killed"]
    # the launcher's exit line is the root finding, the kill its victim
    assert [(f.family, f.role, f.line) for f in sorted(res.findings, key=lambda f: f.line)] == [
        ("unknown", "root", 2), ("host-oom-killed", "secondary", 3)]


def test_lightning_s_tree_kill_after_the_child_s_own_error_is_its_victim():
    lines = [LIGHTNING_TREE_KILL[0], "[rank1]: Traceback (most recent call last):",
             '[rank1]:   File "/work/train.py", line 10, in <module>', "[rank1]: KeyError: 'labels'",
             *LIGHTNING_TREE_KILL[1:]]
    res = sigclass.classify("\n".join(lines) + "\n")
    assert [(f.family, f.role) for f in res.findings] == [("unknown", "root"), ("host-oom-killed", "secondary")]
    assert (res.verdict.cause.family, res.verdict.cause.worker) == ("unknown", "1")


def test_one_failure_repeated_where_no_worker_is_named_is_not_systematic():
    text = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n" * 40
    v = sigclass.classify(text).verdict
    assert v.cause.family == "cuda-oom" and not v.independent


def test_a_worker_s_hang_and_the_engine_s_unprefixed_timeout_are_one_hang_not_two_workers():
    lines = ["(VllmWorker rank=1 pid=3412) INFO 03-01 12:01:10 [shm_broadcast.py:466] No available shared memory "
             "broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing "
             "some time-consuming work (e.g. compilation)."] * 3 + [
        "ERROR 03-01 12:05:00 [core.py:600] EngineCore encountered a fatal error.",
        "ERROR 03-01 12:05:00 [core.py:600] TimeoutError: RPC call to execute_model timed out."]
    v = _verdict(lines)
    assert (v.cause.family, v.cause.worker) == ("vllm-engine-hang", "1") and not v.independent


# vLLM 0.6's front end said its engine was dead before the engine's own log of what killed it reached the file, in
# the same second (MQLLMEngine: `logger.exception(repr(e))`, then the traceback)
ENGINE_DEAD_FIRST = [
    "WARNING 01-16 14:15:07 scheduler.py:944] Input prompt (19 tokens) is too long and exceeds limit of 5",
    "CRITICAL 01-16 14:15:07 launcher.py:99] MQLLMEngine is already dead, terminating server process",
    'INFO:     ::1:44460 - "POST /score HTTP/1.1" 500 Internal Server Error',
    "ERROR 01-16 14:15:07 engine.py:137] ValueError('Sampling parameters are missing for a CompletionRequest.')",
    "ERROR 01-16 14:15:07 engine.py:137] Traceback (most recent call last):",
    'ERROR 01-16 14:15:07 engine.py:137]   File "/workspace/vllm/vllm/engine/multiprocessing/engine.py", line 135, in start',
    "ERROR 01-16 14:15:07 engine.py:137]     self.run_engine_loop()",
]


def test_the_engine_s_own_error_logged_in_the_second_it_died_is_the_cause_of_the_dead_engine_line_above_it():
    assert _cause(ENGINE_DEAD_FIRST) == ("unknown", None)
    # a minute later it is another failure: the dead engine's line stays the cause
    later = [x.replace("14:15:07 engine.py", "14:16:30 engine.py") for x in ENGINE_DEAD_FIRST]
    assert _cause(later) == ("vllm-engine-dead", None)
