"""No-exception failures as the printers themselves word them: DeepSpeed's verbose dynamic-scale lines, fairseq's
overflow notes, Megatron's fp16 skip counts, transformers' string-formatted step dicts, vLLM and SGLang stats
that stop moving, kills as fish, systemd, make and batch schedulers report them; and the warm-up and idle text
of the same printers that must stay quiet."""

from __future__ import annotations

import pytest


def _root(scanner, text: str) -> str | None:
    fs = [f for f in scanner.scan_text(text).findings if f.role != "secondary"]
    return fs[0].family if fs else None


def _rule(scanner, text: str) -> str | None:
    fs = [f for f in scanner.scan_text(text).findings if f.role != "secondary"]
    return fs[0].facts.get("over_time_rule") if fs else None


def _ds_verbose(scales) -> str:
    out = []
    for i, (a, b) in enumerate(zip(scales, scales[1:])):
        out.append(f"[2024-03-08 16:33:2{i},415] [INFO] [unfused_optimizer.py:281:_update_scale] "
                   f"Grad overflow on iteration: {1000 + i}\n")
        out.append(f"[2024-03-08 16:33:2{i},416] [INFO] [unfused_optimizer.py:282:_update_scale] "
                   f"Reducing dynamic loss scale from {a} to {b}\n")
    return "".join(out)


def test_deepspeed_verbose_overflows_down_to_the_minimum_scale_are_a_nan_loss(scanner):
    storm = _ds_verbose(["8.0", "4.0", "2.0", "1.0", "1.0", "1.0"])
    assert _root(scanner, storm) == "nan-loss"
    assert _rule(scanner, storm) == "storm dynamic-loss-scale-reduced-to-minimum"
    # the same number of overflows while the scale calibrates from 65536 is warm-up
    warmup = _ds_verbose(["65536.0", "32768.0", "16384.0", "8192.0", "4096.0", "2048.0"])
    assert scanner.scan_text(warmup).findings == []
    # reaching 1 through overflows far apart (a healthy run raises the scale again in between) is no storm
    pairs = _ds_verbose(["4.0", "2.0", "1.0", "1.0", "1.0", "1.0"]).splitlines(keepends=True)
    spread = "".join(a + b + "Loss: 2.31\n" * 45 for a, b in zip(pairs[::2], pairs[1::2]))
    assert scanner.scan_text(spread).findings == []


def _fairseq(scales) -> str:
    return "".join(f"2021-03-08 12:3{i}:12 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring "
                   f"gradient, setting loss scale to: {s}\n" for i, s in enumerate(scales))


def test_fairseq_overflow_notes_that_drive_the_scale_under_one_are_a_nan_loss(scanner):
    assert _rule(scanner, _fairseq([1.0, 0.5, 0.25, 0.125, 0.0625])) == "storm fairseq-overflow-storm"
    older = "".join(f"2023-06-13 17:37:4{i} | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale "
                    f"to: {s}\n" for i, s in enumerate([2.0, 1.0, 0.5, 0.25, 0.125]))
    assert _root(scanner, older) == "nan-loss"
    # fairseq starts at 128: overflows that settle at 2 are calibration
    assert scanner.scan_text(_fairseq([64.0, 32.0, 16.0, 8.0, 4.0, 2.0])).findings == []


def _megatron_loss(skipped: int) -> str:
    # Megatron prints the interval's average loss unless every iteration of it (10 here) was skipped
    return "" if skipped >= 10 else "lm loss: 2.301234E+00 | "


def _megatron(scale: str, skipped: list[int]) -> str:
    return "".join(f" iteration {10 * (i + 1):8d}/  500000 | consumed samples: {5120 * (i + 1):12d} | learning rate: "
                   f"1.500E-04 | global batch size:   512 | {_megatron_loss(s)}loss scale: {scale} | number of skipped iterations: "
                   f"{s:3d} | number of nan iterations:   0 |\n" for i, s in enumerate(skipped))


def test_megatron_fp16_steps_skipped_at_the_minimum_scale_are_a_nan_loss(scanner):
    assert _rule(scanner, _megatron("1.0", [10, 10, 10])) == "metric megatron-skipped-at-minimum-scale"
    assert scanner.scan_text(_megatron("1.0", [10, 0, 1, 0])).findings == []  # not two reports in a row
    assert scanner.scan_text(_megatron("131072.0", [10, 6, 10])).findings == []  # calibrating from 2**32
    assert scanner.scan_text(_megatron("1.0", [0, 0, 0])).findings == []  # bf16 prints scale 1.0 too


@pytest.mark.parametrize("text", [
    "Epoch 1 | iter 48 step 1 | loss train: nan, val: n/a | iter time: 47.63 ms\n",           # lit-gpt
    "[2020-01-01 10:00:00,000 INFO] Step 100/100000; acc:   0.00; ppl:   nan; xent:   nan; lr: 1.00000;\n",  # OpenNMT
    " 100: -nan, -nan avg loss, 0.001000 rate, 3.100000 seconds, 6400 images, 10.5 hours left\n",  # darknet
    "epoch     train_loss  valid_loss  accuracy  time\n0         0.512301    0.401122    0.871000  00:10\n"
    "1         nan         nan         0.098000  00:10\n2         nan         nan         0.098000  00:10\n",  # fastai
])
def test_more_trainers_nan_loss_lines_are_read(scanner, text):
    assert _root(scanner, text) == "nan-loss"


@pytest.mark.parametrize("text", [
    "Region 82 Avg IOU: -nan, Class: -nan, Obj: -nan, No Obj: 0.000010, .5R: -nan, .75R: -nan,  count: 0\n",
    "epoch     train_loss  valid_loss  accuracy  time\n0         0.512301    nan         0.871000  00:10\n"
    "1         0.401233    nan         0.881000  00:10\n",
    "          col_a  col_b\n0        NaN    1.0\n1        NaN    2.0\n",  # a pandas frame's missing values
])
def test_nan_outside_a_loss_column_is_quiet(scanner, text):
    assert scanner.scan_text(text).findings == []


def test_transformers_string_formatted_step_dicts_are_read(scanner):
    # transformers >= 4.47 formats every float of the log dict as a string
    ok = "{'loss': '0.6931', 'grad_norm': '12.5', 'learning_rate': '5e-07', 'epoch': '0.01'}\n"
    zero = "{'loss': '0', 'grad_norm': 'nan', 'learning_rate': '5e-07', 'epoch': '0.02'}\n"
    assert _rule(scanner, ok + zero) == "metric hf-loss-zero-with-nan-grad-norm"
    once_inf = "{'loss': '2', 'grad_norm': 'inf', 'learning_rate': '1e-05', 'epoch': '0.2'}\n"
    assert scanner.scan_text(ok + once_inf + ok).findings == []


def _v1(prompt: float, gen: float, running: int, waiting: int, t: int) -> str:
    return (f"(APIServer pid=1) INFO 08-01 10:0{t // 60}:{t % 60:02d} [loggers.py:118] Engine 000: Avg prompt "
            f"throughput: {prompt:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: {running} "
            f"reqs, Waiting: {waiting} reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%\n")


def test_vllm_requests_that_wait_while_nothing_runs_are_a_hang(scanner):
    stuck = "".join(_v1(0, 0, 0, 12, 10 * i) for i in range(5))
    assert _rule(scanner, stuck) == "metric requests-wait-nothing-runs"
    # a short wait before the batch is scheduled, and an idle server, are not
    brief = "".join(_v1(0, 0, 0, 12, 10 * i) for i in range(4)) + _v1(512, 20, 12, 0, 40)
    assert scanner.scan_text(brief).findings == []
    assert scanner.scan_text("".join(_v1(0, 0, 0, 0, 10 * i) for i in range(8))).findings == []


def test_vllm_stats_with_timings_before_running_are_read(scanner):
    line = ("INFO 02-01 06:36:{:02d} llm_engine.py:921] Avg prompt throughput: 0.0 tokens/s, Avg generation "
            "throughput: 0.0 tokens/s, Max iteration time: 0.0 ms, Avg time/tok:0.0 ms, Running: 35 reqs, "
            "Swapped: 0 reqs, Pending: {} reqs, GPU KV cache usage: 99.0%, CPU KV cache usage: 0.0%\n")
    assert _rule(scanner, "".join(line.format(5 * i, 0) for i in range(3))) == "metric zero-generation-throughput"
    # with requests waiting too, one such report is enough: nothing at all was processed in a whole interval
    assert _rule(scanner, line.format(0, 117)) == "metric nothing-processed-while-requests-run-and-wait"


def test_sglang_decode_batches_that_generate_nothing_are_a_hang(scanner):
    def batch(running: int, gen: str, m: int) -> str:
        return (f"[2025-01-01 10:0{m}:00 TP0] Decode batch. #running-req: {running}, #token: 12345, token usage: "
                f"0.05, gen throughput (token/s): {gen}, #queue-req: 0\n")
    stuck = batch(8, "412.37", 0) + "".join(batch(8, "0.00", m) for m in range(1, 4))
    assert _rule(scanner, stuck) == "metric sglang-zero-decode-throughput"
    assert scanner.scan_text("".join(batch(0, "0.00", m) for m in range(4))).findings == []
    assert scanner.scan_text(batch(8, "0.00", 0) + batch(8, "0.00", 1) + batch(8, "35.10", 2)).findings == []


@pytest.mark.parametrize("text, family", [
    ("fish: Job 1, 'python train.py' terminated by signal SIGKILL (Forced quit)\n", "host-oom-killed"),
    ("systemd[1]: trainer.service: Main process exited, code=killed, status=9/KILL\n", "host-oom-killed"),
    ("Job 4711 finished. Exit status: 137\n", "host-oom-killed"),
    ("make: *** [Makefile:12: train] Error 137\n", "host-oom-killed"),
    ("Your session crashed after using all available RAM.\n", "host-oom-killed"),
    ("fish: Job 1, 'python infer.py' terminated by signal SIGSEGV (Address boundary error)\n", "segfault"),
    ("systemd[1]: trainer.service: Main process exited, code=dumped, status=11/SEGV\n", "segfault"),
    ("qacct: exit_status  139\n", "segfault"),
    ("make: *** [Makefile:12: run] Error 139\n", "segfault"),
    ("torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -7) local_rank: 0 (pid: 4711) of "
     "binary: /usr/bin/python3\n", "shm-exhausted"),
    ("trainer-1 exited with code 135\n", "shm-exhausted"),
    ("torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGTERM death signal, shutting down "
     "workers\n", "process-killed-by-signal"),
    ("systemd[1]: trainer.service: Main process exited, code=killed, status=15/TERM\n", "process-killed-by-signal"),
    ("distributed.nanny.memory - WARNING - Worker tcp://10.0.46.23:33455 (pid=52) exceeded 95% memory budget. "
     "Restarting...\n", "host-oom-killed"),
    ("TerminatedWorkerError: A worker process managed by the executor was unexpectedly terminated. The exit codes of "
     "the workers are {SIGKILL(-9)}\n", "host-oom-killed"),
    ("TerminatedWorkerError: A worker process managed by the executor was unexpectedly terminated. The exit codes of "
     "the workers are {SIGSEGV(-11)}\n", "segfault"),
    ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\n", "host-oom-killed"),
    ("=>> PBS: job killed: walltime 86415 exceeded limit 86400\n", "process-killed-by-signal"),
    ("Epoch 3:  61%|######    | 610/1000 [21:10<13:32,  2.08s/it, loss=0.412]\nTerminated\n",
     "process-killed-by-signal"),
    ("Process finished with exit code -1073741819 (0xC0000005)\n", "segfault"),
    ("      g++: fatal error: Killed signal terminated program cc1plus\n", "host-oom-killed"),
    ("./run.sh: \u884c 8: 21044 \u6bb5\u9519\u8bef               (\u6838\u5fc3\u5df2\u8f6c\u50a8) python demo.py\n",
     "segfault"),
    ("collect2: fatal error: ld terminated with signal 9 [Killed]\n", "host-oom-killed"),
    ("(raylet) Memory on the node (IP: 10.0.62.231, ID: e5d9) where the task (task ID: 4353, name=allocate_memory, "
     "pid=11362, memory used=1.25GB) was running was 27.71GB / 28.80GB (0.962273), which exceeds the memory usage "
     "threshold of 0.95. Ray killed this worker (ID: 6f2e) because it was the most recently scheduled task.\n",
     "host-oom-killed"),
    ("node01:4711:4790 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n",
     "shm-exhausted"),
    ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\nsrun: forcing job termination\n",
     "process-killed-by-signal"),
    ("\u2502         val_loss          \u2502            nan            \u2502\n", "nan-loss"),
    ("| train/loss | NaN |\n", "nan-loss"),
    ("Epoch 2:  40%|####      | 400/1000 [10:02<15:03,  1.51s/it]\n\x1b[0m  Killed\n", "host-oom-killed"),
    ("[0mKilled[0m\n", "host-oom-killed"),
    ("\x1b[31mTerminated\x1b[0m\n", "process-killed-by-signal"),
    # a death by a signal no family names is still a failure
    ("Floating point exception (core dumped)\n", "unknown"),
    ("Illegal instruction (core dumped)\n", "unknown"),
])
def test_kills_and_crashes_are_read_as_more_tools_report_them(scanner, text, family):
    assert _root(scanner, text) == family


@pytest.mark.parametrize("text", [
    "make: *** [Makefile:12: train] Error 1\n",
    "make: *** [Makefile:12: run] Error 1391\n",
    "Job 4711 finished. Exit status: 1370\n",
    "trainer-1 exited with code 1357\n",
    "systemd[1]: trainer.service: Main process exited, code=exited, status=0/SUCCESS\n",
    "distributed.worker.memory - WARNING - Worker is at 81% memory usage. Pausing worker.\n",
    "WARNING: restarting worker 3: process 4711 was killed by signal 90\n",
    "Job terminated normally.\nTerminated workers: 0\n",
    "Process finished with exit code 0\n",
    "Illegal instruction check: passed\nAborted 0 of 12 jobs\n",
    "\u2502         val_loss          \u2502    0.6931471824645996     \u2502\n| train_loss | 0.412 |\n",
    "Volatile Uncorr. ECC: 0, Remapped Rows Pending: No, Remapped Rows Failure: No\n",
    "  Killed processes: 0\nKilled by the user request: none\n",
])
def test_ordinary_exits_are_no_kill(scanner, text):
    # a tool's word that a job failed (`make: *** ... Error 1`) is a failure no family explains (scan/shapes.py),
    # never a kill
    assert [f.family for f in scanner.scan_text(text).findings] in ([], ["unknown"])


def test_sigterm_lines_in_the_launchers_own_block_are_victims_of_the_rank_it_names(scanner):
    # a launcher's rich-formatted output: no prefixes, so the SIGTERM lines and the summary naming the killed
    # rank are one block; every SIGTERM line is a victim of the kill, not only the first
    text = ("Loading checkpoint shards: 100%|##########| 61/61 [05:45<00:00,  5.66s/it]\n"
            + "".join(f" WARNING  Sending process {p} closing signal SIGTERM         api.py:699\n"
                      for p in (14, 15, 16, 17, 20))
            + " ERROR    failed (exitcode: -9) local_rank: 5 (pid: 22) of  api.py:673\n"
            + " binary: /opt/conda/bin/python \n")
    fs = scanner.scan_text(text).findings
    roots = [f.family for f in fs if f.role != "secondary"]
    assert roots and set(roots) == {"host-oom-killed"}
    assert [f.family for f in fs if f.role == "secondary"] and all(
        f.root and f.root.get("family") == "host-oom-killed" for f in fs if f.role == "secondary")
