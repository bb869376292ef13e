"""A step the run stepped over: one non-finite step report with the worker's steps going on after it is
`recovered`, and the fp16 loss scalers' warm-up forms, followed by finite losses, are no finding at all."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

LIGHTNING_SKIPPED = (
    "Epoch 0:   1%|          | 10/1000 [00:01<01:39,  9.98it/s, v_num=0, train_loss_step=nan]\n"
    "Epoch 0:   2%|▏         | 20/1000 [00:02<01:38,  9.98it/s, v_num=0, train_loss_step=2.310]\n"
    "Epoch 0:   3%|▎         | 30/1000 [00:03<01:37,  9.98it/s, v_num=0, train_loss_step=2.120]\n"
)
NANOGPT_SKIPPED = (
    "iter 0: loss nan, time 1000.00ms, mfu -100.00%\n"
    "iter 10: loss 9.8000, time 120.00ms, mfu 30.00%\n"
    "iter 20: loss 8.1000, time 120.00ms, mfu 30.00%\n"
)


def _statuses(scanner, text: str) -> list[tuple[str, str]]:
    return [(f.family, str(f.status)) for f in scanner.scan_text(text).findings]


def test_one_nan_step_the_steps_outlive_is_recovered(scanner):
    for text in (LIGHTNING_SKIPPED, NANOGPT_SKIPPED):
        assert _statuses(scanner, text) == [("nan-loss", "recovered")], text


def test_a_nan_step_with_no_finite_step_after_it_stays_a_failure(scanner):
    one_after = LIGHTNING_SKIPPED.rsplit("Epoch 0:", 1)[0]  # one finite step after the NaN is not enough
    assert _statuses(scanner, one_after) == [("nan-loss", "active")]
    persisting = NANOGPT_SKIPPED.split("\n")[0] + "\n" + "iter 10: loss nan, time 120.00ms, mfu 30.00%\n" * 3
    assert all(s == "active" for fam, s in _statuses(scanner, persisting) if fam == "nan-loss")
    assert _statuses(scanner, persisting)


def test_a_kill_is_not_stepped_over(scanner):
    text = "Epoch 0:   1%|          | 10/1000 [00:01<01:39,  9.98it/s, v_num=0, train_loss_step=2.4]\nKilled\n"
    text += LIGHTNING_SKIPPED.split("\n", 1)[1]
    assert ("host-oom-killed", "active") in _statuses(scanner, text)


def _exit_status(text: str) -> int:
    """`... | sigclass scan`'s exit status."""
    return subprocess.run([sys.executable, "-m", "sigclass", "scan", "--signatures", "regex"], input=text.encode(),
                          capture_output=True, timeout=120).returncode


def test_a_stepped_over_nan_is_not_a_failure_of_the_scan():
    assert _exit_status(LIGHTNING_SKIPPED) == 0
    assert _exit_status(LIGHTNING_SKIPPED.split("\n")[0] + "\n") == 1


def _then_finite(lines: list[str]) -> str:
    return "".join(x + "\n" for x in lines) + "".join(
        f"{{'loss': {2.3 - i / 100:.4f}, 'learning_rate': 1e-05, 'epoch': 0.{i + 1:02d}}}\n" for i in range(3))


def test_fp16_warm_up_forms_followed_by_finite_losses_are_no_finding(scanner):
    warm_ups = {
        "apex": [f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {2.0 ** k}" for k in
                 range(15, 10, -1)],
        "deepspeed": [f"[2024-05-01 10:00:0{i},000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
                      f"Rank 0 Skipping step. Attempted loss scale: {2 ** (32 - i)}, reducing to {2 ** (31 - i)}"
                      for i in range(6)],
        "deepspeed-hysteresis": ["[2024-05-01 10:00:00,000] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] "
                                 "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. "
                                 "Reducing hysteresis to 1"],
        "fairseq": [f"2022-05-01 10:00:00 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring "
                    f"gradient, setting loss scale to: {2.0 ** k}" for k in range(6, 2, -1)],
        "colossalai": ["[05/14/24 08:00:00] INFO     colossalai - colossalai - INFO: Found overflow. Skip step"] * 16,
        "hf-one-nan-grad-norm": ["{'loss': 2.4012, 'grad_norm': nan, 'learning_rate': 1e-06, 'epoch': 0.00}"],
    }
    for name, lines in warm_ups.items():
        assert not scanner.scan_text(_then_finite(lines)).findings, name


# a start-up warning the ledger names (an extension built without GPU support), then the model load goes on and the
# process is killed: the kill ended it
WARNED_THEN_KILLED = (
    "/env/lib/python3.10/site-packages/bitsandbytes/cextension.py:34: UserWarning: The installed version of "
    "bitsandbytes was compiled without GPU support.\n"
    '  warn("The installed version of bitsandbytes was compiled without GPU support. "\n'
    "/env/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so: undefined symbol: cadam32bit_grad_fp32\n"
    "INFO:Loading llama-13b...\n"
    "Loading checkpoint shards:   0%|          | 0/3 [00:00<?, ?it/s]\n"
    "Killed\n"
)


def test_a_warning_the_process_went_on_past_gives_way_to_the_kill(scanner):
    res = scanner.scan_text(WARNED_THEN_KILLED)
    assert [(f.family, str(f.status)) for f in res.findings] == [("cuda-env-mismatch", "recovered"),
                                                                  ("host-oom-killed", "active")]
    assert res.verdict.cause.family == "host-oom-killed"
    from sigclass.authoring.examples import first_root_family

    assert first_root_family(res.findings) == "host-oom-killed"  # what the scorers and ledger examples read


def test_an_error_or_a_warning_the_kill_follows_at_once_stays_the_cause(scanner):
    # the same line as an error, not a warning: it is what failed
    error = WARNED_THEN_KILLED.replace("UserWarning", "RuntimeError").replace('  warn("', '  raise RuntimeError("')
    assert _statuses(scanner, error)[0] == ("cuda-env-mismatch", "active")
    # nothing printed between the warning and the kill: nothing says the process went on past it
    at_once = "".join(x for x in WARNED_THEN_KILLED.splitlines(True) if "Loading" not in x)
    assert _statuses(scanner, at_once)[0] == ("cuda-env-mismatch", "active")


# vLLM's broadcast queue waits through a long compile, then the engine reports its start-up done (the wording of
# shm_broadcast.py and core.py); the `recovery` rule of vllm-engine-hang reads the second
SHM_WAITS = (
    "(EngineCore_DP0 pid=5120) INFO 10-02 14:03:40 [shm_broadcast.py:466] No available shared memory broadcast block "
    "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work "
    "(e.g. compilation).\n"
) * 3
STARTED = ("(EngineCore_DP0 pid=5120) INFO 10-02 14:05:31 [core.py:214] init engine (profile, create kv cache, warmup "
           "model) took 191.06 seconds\n")


def test_waits_the_engine_started_after_are_recovered(scanner):
    assert _statuses(scanner, SHM_WAITS + STARTED) == [("vllm-engine-hang", "recovered")]


def test_waits_after_the_engine_started_stay_a_hang(scanner):
    # the start-up line above the waits says nothing of them: the engine started, then hung
    assert _statuses(scanner, STARTED + SHM_WAITS) == [("vllm-engine-hang", "active")]


def test_a_hang_that_raised_is_not_recovered_by_a_later_start(scanner):
    raised = ('Traceback (most recent call last):\n  File "/v/vllm/v1/executor/multiproc_executor.py", line 9, in '
              'collective_rpc\n    raise TimeoutError(f"RPC call to {method} timed out.")\n'
              "TimeoutError: RPC call to execute_model timed out.\n")
    assert [s for f, s in _statuses(scanner, raised + STARTED) if f == "vllm-engine-hang"] == ["active"]


# TensorFlow on a CPU node reports the GPU libraries it cannot load and goes on; the cgroup OOM killer ends the job.
# Quoted from https://github.com/mechanoChem/active-learning/blob/dbad0ddedd2410c6ded6d7a5f20fb043601382f5/tests/LCO_old/test/outputFiles/errors-22207649.e
TF_CPU_NODE_OOM = """\
2023-05-10 12:03:13.700314: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory; LD_LIBRARY_PATH: /cm/shared/apps/slurm/current/lib64/slurm:/cm/shared/apps/slurm/current/lib64
2023-05-10 12:03:13.701015: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.
2023-05-10 12:03:17.602190: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected
2023-05-10 12:03:17.602271: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this host (exp-3-35): /proc/driver/nvidia/version does not exist
2023-05-10 12:03:17.602818: I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX2 FMA
To enable them in other operations, rebuild TensorFlow with the appropriate compiler flags.
/cm/local/apps/slurm/var/spool/job22207649/slurm_script: line 22: 443552 Killed                  python main.py LCO_test.ini
slurmstepd: error: Detected 1 oom-kill event(s) in StepId=22207649.batch. Some of your processes may have been killed by the cgroup out-of-memory handler.
"""


def test_library_log_records_the_process_went_on_past_are_no_cause_of_the_kill(scanner):
    res = scanner.scan_text(TF_CPU_NODE_OOM)
    assert res.verdict.cause.family == "host-oom-killed"
    assert {str(f.status) for f in res.findings if f.family == "cuda-env-mismatch"} == {"recovered"}


def test_the_same_records_with_no_kill_after_them_stay_findings(scanner):
    cut = TF_CPU_NODE_OOM.split("/cm/local/apps/slurm")[0]
    assert {str(f.status) for f in scanner.scan_text(cut).findings if f.family == "cuda-env-mismatch"} == {"active"}


# a server refuses one request (the model name a client asked for) and serves the next ones; quoted from
# https://github.com/jayashan10/Deepseek-qwen-deployment/blob/5bddab012dc020b1cc9a55c40c3b50212f1a38cd/vllm_server.log
REFUSED = """\
INFO:     Application startup complete.
ERROR 05-12 02:47:14 [serving_chat.py:136] Error with model object='error' message='The model `deepseek-r1-14b` does not exist.' type='NotFoundError' param=None code=404
INFO:     127.0.0.1:56148 - "POST /v1/chat/completions HTTP/1.1" 404 Not Found
"""
SERVED = """\
INFO:     127.0.0.1:56160 - "GET /v1/models HTTP/1.1" 200 OK
INFO 05-12 02:47:26 [chat_utils.py:397] Detected the chat template content format to be 'string'. You can set `--chat-template-content-format` to override this.
INFO 05-12 02:47:26 [logger.py:39] Received request chatcmpl-5a7407c45c434cb19736bd2776fce860: prompt: '<｜begin▁of▁sentence｜><｜User｜>Solve 27×36. Show steps then box the answer.<｜Assistant｜><think>\n', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.6, top_p=0.95, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens=128, min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, extra_args=None), prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.
INFO 05-12 02:47:26 [async_llm.py:252] Added request chatcmpl-5a7407c45c434cb19736bd2776fce860.
INFO:     127.0.0.1:34574 - "POST /v1/chat/completions HTTP/1.1" 200 OK
INFO 05-12 02:47:33 [loggers.py:111] Engine 000: Avg prompt throughput: 2.1 tokens/s, Avg generation throughput: 12.8 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%
INFO 05-12 02:47:43 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%
INFO 05-12 02:47:48 [logger.py:39] Received request chatcmpl-eea0cc84ab194e4286d58f6465d247b1: prompt: '<｜begin▁of▁sentence｜><｜User｜>Solve 27×36. Show steps then box the answer.<｜Assistant｜><think>\n', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.6, top_p=0.95, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens=128, min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, extra_args=None), prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.
INFO 05-12 02:47:48 [async_llm.py:252] Added request chatcmpl-eea0cc84ab194e4286d58f6465d247b1.
INFO:     127.0.0.1:40452 - "POST /v1/chat/completions HTTP/1.1" 200 OK
INFO 05-12 02:47:53 [loggers.py:111] Engine 000: Avg prompt throughput: 2.1 tokens/s, Avg generation throughput: 12.8 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 50.0%
INFO 05-12 02:47:59 [logger.py:39] Received request chatcmpl-145a3d583a4747569043b7c4a0c572c7: prompt: '<｜begin▁of▁sentence｜><｜User｜>Solve 27×36. Show steps then box the answer.<｜Assistant｜><think>\n', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.6, top_p=0.95, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens=128, min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, extra_args=None), prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.
"""


def test_an_error_record_the_server_went_on_past_is_recovered(scanner):
    assert _statuses(scanner, REFUSED + SERVED) == [("unknown", "recovered")]


def test_an_error_record_with_nothing_served_after_it_stays_a_failure(scanner):
    assert _statuses(scanner, REFUSED) == [("unknown", "unknown")]


# a server's request handler logs the error of a request it refuses, then answers it 400; it goes on serving
REFUSED = """\
INFO:     127.0.0.1:55766 - "POST /v1/chat/completions HTTP/1.1" 200 OK
ERROR 08-18 19:58:43 [serving_chat.py:203] Error in preprocessing prompt inputs
ERROR 08-18 19:58:43 [serving_chat.py:203] Traceback (most recent call last):
ERROR 08-18 19:58:43 [serving_chat.py:203]   File "/env/vllm/entrypoints/openai/serving_engine.py", line 626, in _validate_input
ERROR 08-18 19:58:43 [serving_chat.py:203]     raise ValueError(
ERROR 08-18 19:58:43 [serving_chat.py:203] ValueError: This model's maximum context length is 2048 tokens. However, you requested 5418 tokens.
INFO:     127.0.0.1:59064 - "POST /v1/chat/completions HTTP/1.1" ANSWER
INFO:     127.0.0.1:52196 - "GET /health HTTP/1.1" 200 OK
"""


def test_an_error_answered_at_once_with_a_client_error_is_a_refused_request(scanner):
    res = scanner.scan_text(REFUSED.replace("ANSWER", "400 Bad Request"))
    assert [(f.family, f.status) for f in res.findings] == [("unknown", "recovered")]
    assert res.verdict is None or res.verdict.cause is None


def test_an_error_answered_with_a_server_error_stays_a_failure(scanner):
    res = scanner.scan_text(REFUSED.replace("ANSWER", "500 Internal Server Error"))
    assert [f.status for f in res.findings if f.family == "unknown"][0] != "recovered"
    assert res.verdict.cause.family == "unknown"


# nnU-Net (print_to_log_file): an optional module it could not import, caught and printed, then its epochs go on
NNUNET_OPTIONAL_IMPORT = """\
2024-07-09 13:31:30.053565: Unable to plot network architecture:
2024-07-09 13:31:30.061743: No module named 'hiddenlayer'
2024-07-09 13:31:30.162810: Epoch 0
2024-07-09 13:31:30.168464: Current learning rate: 0.01
2024-07-09 13:35:54.727426: train_loss -0.4123
2024-07-09 13:35:54.740389: val_loss -0.5210
2024-07-09 13:35:54.754245: Epoch time: 264.58 s
2024-07-09 13:35:54.762500: Epoch 1
"""


def test_an_error_a_trainer_printed_and_went_on_past_is_recovered(scanner):
    assert _statuses(scanner, NNUNET_OPTIONAL_IMPORT) == [("import-error", "recovered")]
    # the same line as the run's last word stays its failure
    last = NNUNET_OPTIONAL_IMPORT.split("2024-07-09 13:31:30.162810")[0]
    assert _statuses(scanner, last) == [("import-error", "active")]


# corpus/real: vLLM issue 322, a driver whose Ray log-printer thread died (`Exception in thread ray_print_logs:`, an
# empty ImportError in restore_tqdm) before a worker was killed for the node's low memory
RAY_PRINTER_THREAD_THEN_HOST_OOM = "corpus/real/host-oom-killed/vllm-322-ray-tp-worker-init-outofmemoryerror-node-low-memory.log"


def test_a_thread_the_process_outlived_is_recovered(scanner):
    res = scanner.scan(str(REPO / RAY_PRINTER_THREAD_THEN_HOST_OOM))
    thread = [f for f in res.findings if f.facts.get("thread") == "ray_print_logs"]
    assert [(f.family, str(f.status)) for f in thread] == [("import-error", "recovered")]
    assert res.verdict.cause.family == "host-oom-killed"


THREAD_TRACEBACK = (
    "Exception in thread Thread-3 (_pin_memory_loop):\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
    "    self.run()\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)


def test_a_thread_death_stays_a_failure_unless_a_root_fault_follows(scanner):
    # alone, or followed by the main thread's own error no family names (what the thread's death may have caused)
    later_unknown = THREAD_TRACEBACK + "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n" \
        "    batch = next(it)\nValueError: the data loader stopped without a batch\n"
    for text in (THREAD_TRACEBACK, later_unknown):
        first = scanner.scan_text(text).findings[0]
        assert (first.family, str(first.status), first.facts.get("thread")) == \
            ("cuda-illegal-memory-access", "active", "Thread-3 (_pin_memory_loop)")
    # the JVM's form quotes the thread's name: no Python thread
    jvm = 'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n'
    assert all(not f.facts.get("thread") for f in scanner.scan_text(jvm).findings)


def test_plain_epoch_lines_after_a_caught_error_make_it_recovered(scanner):
    # corpus/real/clean/trainer-jax-mnist-...: JAX's CUDA plugin fails to initialise, the run falls back to CPU and
    # trains (`Epoch 1/5 - Loss: 0.5693, Acc: 0.8465, Time: 0.75s`)
    err = ("Traceback (most recent call last):\n"
           '  File "/opt/jax/jax/_src/xla_bridge.py", line 485, in discover_pjrt_plugins\n'
           "    plugin_module.initialize()\n"
           "RuntimeError: jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: Unknown CUDA error 303\n")
    epochs = "".join(f"Epoch {i}/5 - Loss: 0.{9 - i}693, Acc: 0.8465, Time: 0.75s\n" for i in range(1, 4))
    assert [str(f.status) for f in scanner.scan_text(err + epochs).findings] == ["recovered"]
    assert [str(f.status) for f in scanner.scan_text(err).findings] != ["recovered"]


NO_DRIVER_WARNING = (
    "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA initialization: Found no "
    "NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from "
    "http://www.nvidia.com/Download/index.aspx (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
    "  return torch._C._cuda_getDeviceCount() > 0\n")


def test_a_python_warning_a_family_names_is_recovered_once_the_steps_go_on():
    """torch warns that it found no driver and the trainer goes on (on the CPU): a warning, not the run's failure."""
    import sigclass
    from sigclass.vocab import Status

    steps = "".join("{'loss': %.3f, 'learning_rate': 5e-05, 'epoch': %.2f}\n" % (2.0 - i / 10, i / 10) for i in range(6))
    res = sigclass.classify(NO_DRIVER_WARNING + steps)
    assert [(f.family, f.status) for f in res.findings] == [("cuda-env-mismatch", Status.RECOVERED)]
    assert res.verdict.cause is None


def test_the_same_warning_with_nothing_after_it_stays_a_failure():
    import sigclass
    from sigclass.vocab import Status

    res = sigclass.classify(NO_DRIVER_WARNING)
    assert [(f.family, f.status) for f in res.findings] == [("cuda-env-mismatch", Status.ACTIVE)]
