"""The shipped over-time and no-exception rules read the formats real trainers, launchers and servers print,
not one program's: every value syntax, every NaN spelling, every way a kill is reported; clean text stays quiet,
and healthy step lines never reach Python."""

from __future__ import annotations

import pytest

from sigclass.scan.overtime_state import OverTimeState


def _root(scanner, text: str) -> str | None:
    fs = [f for f in scanner.scan_text(text).findings if f.role != "secondary"]
    return fs[0].family if fs else None


@pytest.mark.parametrize("line", [
    "{'loss': nan, 'learning_rate': 2e-05, 'epoch': 0.3}",                         # HF Trainer / TRL / axolotl
    '{"step": 120, "loss": NaN, "lr": 0.0003}',                                      # JSON metrics
    '{"epoch": 2, "train_loss": "nan", "train_ppl": "nan"}',                         # fairseq json log
    "Epoch 2:  41%|####      | 410/1000 [01:02<01:30,  6.55it/s, loss=nan, v_num=1]",  # tqdm postfix
    "Epoch 2:  41%|####      | 410/1000 [01:02<01:30,  6.55it/s, train_loss_step=nan]",
    "iter 1200: loss nan, time 98.11ms, mfu 38.20%",                                 # nanoGPT
    "step: 40  loss:     nan  memory: 31.21GiB(39.49%)  tps: 6,112",                  # torchtitan
    "| epoch 003 | loss nan | nll_loss nan | ppl nan | wps 30120",                    # fairseq simple
    "epoch 12 step 4400 train loss = -nan, lr = 0.0003",                             # C printf
    "Train: 3 [ 200/1251 ( 16%)]  Loss: nan (nan)  Time: 0.512s",                    # timm
    "[R0] | E5 iter[ 14/ 15] | [Loss] nan | [step]    89 |",
    "Epoch(train)  [1][ 500/2931]  lr: 2.0e-02  loss_cls: nan  loss_bbox: 0.31",    # mmengine component
    " iteration      411/   20000 | lm loss: NAN | loss scale: 1.0 |",              # Megatron
    "      12/100      3.46G        nan        nan        nan         16        640:  45%|",  # YOLO columns
])
def test_a_nan_loss_is_read_in_every_syntax(scanner, line):
    assert _root(scanner, line + "\n") == "nan-loss"


@pytest.mark.parametrize("text", [
    "INFO saving loss curve to /runs/loss_nan_check/loss.png\nINFO loss_fn: nan_to_num wrapper\n",
    "INFO loss nanmean over tokens enabled\nloss: nanoseconds per step 12\n",
    "{'loss': 0.0, 'grad_norm': 0.0, 'epoch': 3.0}\n{'loss': 0.0, 'grad_norm': 0.0, 'epoch': 3.1}\n",
    "{'eval_loss': 0.69, 'eval_f1': nan, 'epoch': 1.0}\n{'eval_loss': 0.68, 'eval_f1': nan, 'epoch': 2.0}\n",
    "Validation loss decreased (inf --> 0.693147).  Saving model ...\nbest_val_loss: inf\nloss: 0.69\nloss: 0.68\n",
])
def test_nan_in_words_paths_and_legitimate_metrics_is_quiet(scanner, text):
    assert scanner.scan_text(text).findings == []


def test_an_infinite_loss_or_grad_norm_needs_two_reports_in_a_row(scanner):
    once = "loss: 0.31 - acc: 0.9\nloss: inf - acc: 0.1\nloss: 0.30 - acc: 0.9\n"
    assert scanner.scan_text(once).findings == []
    fs = scanner.scan_text(once + "loss: inf - acc: 0.1\nloss: -inf - acc: 0.1\n").findings
    assert [f.family for f in fs] == ["nan-loss"]
    assert fs[0].facts["over_time_rule"] == "metric loss-field-nonfinite"
    gn = "".join(f"lr: 2.0e-02  grad_norm: {g}  loss: 1.30\n" for g in ("inf", "12.3", "9.1"))
    assert scanner.scan_text(gn).findings == []  # one overflow step while the fp16 scale calibrates
    gn2 = '{"train_loss": "4.1", "train_gnorm": "inf"}\n{"train_loss": "4.1", "train_gnorm": "Infinity"}\n'
    fs = scanner.scan_text(gn2).findings
    assert fs and fs[0].facts["over_time_rule"] == "metric grad-norm-nonfinite"


@pytest.mark.parametrize("line", [
    "step 1000 grad_scale: 6.103515625e-05 loss 3.12",
    "PARAMETER loss_scale : 4.656612873077393e-10",
    '{"train_loss_scale": "0.0001", "train_loss": "7.2"}',
    "NOTE: overflow detected, setting loss scale to: 0.0009765625",
])
def test_a_collapsed_loss_scale_is_read_in_every_syntax(scanner, line):
    assert _root(scanner, line + "\n" + line + "\n") == "nan-loss"


def test_healthy_step_lines_never_reach_python(scanner, monkeypatch):
    calls: list[str] = []
    real = OverTimeState._metric

    def counting(self, rule, *args):
        calls.append(rule.name)
        return real(self, rule, *args)

    monkeypatch.setattr(OverTimeState, "_metric", counting)
    lines = []
    for i in range(300):
        lines.append(f" iteration {i:8d}/  500000 | lm loss: 2.{i:03d}E+00 | loss scale: {2 ** (16 - i % 8)}.0 | "
                     f"grad norm: 0.{i:03d} | number of skipped iterations:   0 | number of nan iterations:   0 |")
        lines.append(f"{{'loss': 1.{i:03d}, 'grad_norm': 0.{i:03d}, 'learning_rate': 2e-05, 'epoch': 0.{i:03d}}}")
        lines.append(f"Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {40 + i}.5 tokens/s, "
                     f"Running: 3 reqs, Waiting: 0 reqs")
        lines.append(f"Epoch(train)  [1][{i:4d}/2931]  lr: 2.0e-02  grad_norm: 9.{i:03d}  loss: 1.{i:03d}  loss_cls: 0.4")
    assert scanner.scan_text("\n".join(lines) + "\n").findings == []
    assert calls == []
    scanner.scan_text(lines[-1].replace("grad_norm: 9.299", "grad_norm: nan") + "\n")
    assert calls  # the rules do see the steps that can meet them


@pytest.mark.parametrize("text", [
    "[1]+  Killed                  python train.py --num-workers 16\n",
    "[1]    84529 killed     python3 finetune.py --config cfg.yaml\n",
    "2025-03-04T17:02:14.118Z Killed\n",
    "    State:          Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n",
    "3f2a1b9c8d7e   trainer:1.4   \"python train.py\"   2 hours ago    Exited (137) 5 minutes ago   trainer\n",
    "subprocess.CalledProcessError: Command '['bash', 'run.sh']' returned non-zero exit status 137.\n",
    "<Process name='SpawnProcess-3' pid=22811 parent=22790 stopped exitcode=-SIGKILL>\n",
    "=   EXIT STRING: Killed (signal 9)\n",
    "7129801           train OUT_OF_MEMORY    0:125\n",
    "slurmstepd: error: Job 7129801 exceeded memory limit (128011264 > 125829120), being killed\n",
    "systemd[1]: session-12.scope: A process of this unit has been killed by the OOM killer.\n",
    "systemd[1]: trainer.service: Failed with result 'oom-kill'.\n",
    "systemd-oomd[812]: Killed /user.slice/user-1000.slice/session-3.scope due to memory pressure for /user.slice\n",
])
def test_a_host_oom_kill_is_read_as_every_tool_reports_it(scanner, text):
    assert _root(scanner, text) == "host-oom-killed"


@pytest.mark.parametrize("text, family", [
    ("      Exit Code:    139\n", "segfault"),
    ("mpirun noticed that process rank 1 with PID 4412 on node gpu03 exited on signal 11 (Segmentation fault).\n",
     "segfault"),
    ("      Exit Code:    143\n", "process-killed-by-signal"),
    ("[1]+  Terminated              python train.py --epochs 90\n", "process-killed-by-signal"),
])
def test_crash_and_stop_exit_codes_are_read_as_containers_and_shells_print_them(scanner, text, family):
    assert _root(scanner, text) == family


@pytest.mark.parametrize("text", [
    "INFO worker exit code 1370 ignored, retrying\n",
    "INFO worker exit code 1390 ignored, retrying\n",
    "RuntimeError: CUDA driver error: CUDA_ERROR_OUT_OF_MEMORY\n",
    "Some common causes include: (1) the process was killed by the OOM killer due to high memory usage\n",
    "[1]+  Done                    python train.py\n      Exit Code:    0\n",
])
def test_near_miss_kill_text_is_not_a_host_oom(scanner, text):
    assert _root(scanner, text) != "host-oom-killed"


def test_a_training_stall_is_seen_in_nanogpt_and_mmengine_progress(scanner):
    steps = "".join(f"2025-06-03 02:00:0{i} iter {4000 + i}: loss 2.90{i}, time 812.40ms, mfu 41.20%\n"
                    for i in range(4))
    hung = steps + "2025-06-03 03:12:40 KeyboardInterrupt\n"
    assert _root(scanner, hung) == "vllm-engine-hang"
    assert _root(scanner, steps + "2025-06-03 02:00:04 KeyboardInterrupt\n") != "vllm-engine-hang"
    mm = "".join(f"08/03 22:09:2{i} - mmengine - INFO - Epoch(train)  [1][ {500 + 50 * i}/2931]  loss: 1.30\n"
                 for i in range(2))
    beats = "".join(f"08/03 22:1{i}:27 - monitor - INFO - heartbeat: rank 0 alive\n" for i in range(5))
    fs = scanner.scan_text(mm + beats).findings
    assert fs and fs[0].facts["over_time_rule"] == "stall steps-stop-heartbeats-go-on"


def test_the_sglang_scheduler_watchdog_is_a_hang(scanner):
    line = "[2025-10-16 09:41:04 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n"
    assert _root(scanner, line) == "vllm-engine-hang"
