"""Failures that print no exception, one line (or block) per printer, written as each trainer, server, launcher,
scheduler and kernel prints it (the format strings of their sources): the family each must be named as, and
the healthy text of the same printers that must stay quiet."""

from __future__ import annotations

import pytest

import sigclass

NAN = "nan-loss"
HOST = "host-oom-killed"
SEGV = "segfault"
SHM = "shm-exhausted"
STOP = "process-killed-by-signal"
HANG = "vllm-engine-hang"


def _steps(n: int = 5) -> str:
    return "".join(f"{{'loss': 2.{i}, 'grad_norm': 1.{i}, 'learning_rate': 1e-05, 'epoch': 0.{i}}}\n" for i in range(n))


def _hydra(line: str) -> str:
    return ("=" * 83 + "\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   RANK 0 PID 5490 RUNNING AT gn59\n"
            f"=   {line}\n" + "=" * 83 + "\n")


def _hydra_old(code: int) -> str:
    return ("=" * 83 + "\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 92248 RUNNING AT host\n"
            f"=   EXIT CODE: {code}\n=   CLEANING UP REMAINING PROCESSES\n=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n"
            + "=" * 83 + "\n")


def _megatron(i: int, fields: str) -> str:
    return (f" [2024-05-01 10:00:0{i}] iteration      1{i}0/  500000 | consumed samples:        51200 | elapsed time per "
            f"iteration (ms): 1234.5 | learning rate: 1.500E-04 | global batch size:   512 | {fields} | number of "
            "skipped iterations:   0 | number of nan iterations:   1 |\n")


def _ds(scales) -> str:
    return "".join(f"[2024-01-01 00:00:0{i},000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 "
                   f"Skipping step. Attempted loss scale: {a}, reducing to {b}\n"
                   for i, (a, b) in enumerate(zip(scales, scales[1:])))


FORMATS = {
    # --- the loss and gradient norm as trainers print them
    "hf-trainer-dict": "".join(f"{{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1.9e-05, 'epoch': 0.{i}}}\n"
                               for i in range(1, 4)),
    "hf-trainer-dict-strings": "".join(f"{{'loss': '0', 'grad_norm': 'nan', 'learning_rate': '1.9e-05', 'epoch': "
                                       f"'0.{i}'}}\n" for i in range(1, 4)),
    "hf-trainer-summary": "{'train_runtime': 120.3, 'train_samples_per_second': 3.2, 'train_steps_per_second': 0.1, "
                          "'train_loss': nan, 'epoch': 1.0}\n",
    "trl-dpo-dict": "".join(f"{{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 5e-07, 'rewards/chosen': nan, "
                            f"'rewards/rejected': nan, 'epoch': 0.0{i}}}\n" for i in range(1, 3)),
    "llamafactory-dict": "".join(f"{{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.9e-05, 'epoch': 0.0{i}, "
                                 "'num_input_tokens_seen': 1000}\n" for i in range(1, 4)),
    "lightning-bar": "Epoch 0:  45%|████▌     | 450/1000 [01:23<01:42,  5.37it/s, loss=nan, v_num=0]\n",
    "lightning-bar-steps": "Epoch 3: 100%|██████████| 782/782 [00:41<00:00, 18.9it/s, v_num=1, train_loss_step=nan, "
                           "val_loss=nan, train_loss_epoch=nan]\n",
    "nemo-bar": "Epoch 0: :   4%|▍         | 400/10000 [10:21<4:08:31, reduced_train_loss=nan, global_step=399.0, "
                "consumed_samples=102400.0, train_step_timing in s=1.43]\n",
    "megatron-lm-loss": _megatron(0, "lm loss: NAN | loss scale: 1.0 | grad norm: nan"),
    "megatron-grad-norm": _megatron(0, "loss scale: 1.0 | grad norm: nan") + _megatron(1, "loss scale: 1.0 | grad norm: nan"),
    "deepspeed-overflow-to-one": _ds([64, 32, 16, 8, 4, 2, 1, 1]),
    "deepspeed-at-minimum": _ds([1, 1]),
    "deepspeed-minimum-assert": "AssertionError: Current loss scale already at minimum - cannot decrease scale anymore. "
                                "Exiting run.\n",
    "fairseq-legacy": "| epoch 001:    100 / 1000 loss=nan, nll_loss=nan, ppl=nan, wps=1000, ups=1, wpb=1000, bsz=10, "
                      "num_updates=100, lr=0.0001, gnorm=nan, clip=100.000, oom=0.000, loss_scale=0.000, wall=100\n",
    "fairseq-pipe": "2021-01-01 00:00:00 | INFO | train | epoch 001 | loss nan | nll_loss nan | ppl nan | wps 100 | "
                    "num_updates 100 | lr 0.0001 | gnorm nan | loss_scale 0.0001 | train_wall 90 | wall 100\n",
    "fairseq-json": '2021-01-01 00:00:00 | INFO | train_inner | {"epoch": 1, "update": 0.1, "loss": "nan", '
                    '"nll_loss": "nan", "ppl": "nan", "wps": "100", "gnorm": "nan", "loss_scale": "0.0001"}\n',
    "fairseq-minimum-scale": "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. "
                             "Try lowering the learning rate, using gradient clipping or increasing the batch size.\n",
    "apex-overflow-storm": "".join(f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to "
                                   f"{2.0 ** (4 - i)}\n" for i in range(8)),
    "torchtitan-coloured": "[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss:     "
                           "nan  \x1b[33mmemory: 37.53GiB(39.50%)  \x1b[34mtps: 4,124  \x1b[36mtflops: 239.09\x1b[39m\n",
    "torchtitan-grad-norm": "[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - step: 10  loss:     nan  "
                            "grad_norm:     nan  memory: 37.53GiB(39.50%)  tps: 4,124  tflops: 239.09  mfu: 24.18%\n",
    "mmengine": "2023/01/01 00:00:00 - mmengine - INFO - Epoch(train)  [1][  50/1000]  base_lr: 1.0000e-02 lr: 1.0000e-02"
                "  eta: 1:00:00  time: 0.5000  data_time: 0.0100  memory: 3000  grad_norm: nan  loss: nan  loss_cls: nan\n",
    "mmcv-1x": "2021-01-01 00:00:00,000 - mmdet - INFO - Epoch [1][50/1000]\tlr: 1.000e-02, eta: 1:00:00, time: 0.500, "
               "data_time: 0.010, memory: 3000, loss_rpn_cls: nan, loss_rpn_bbox: nan, loss_cls: nan, loss: nan\n",
    "ultralytics": "      1/100      3.46G        nan        nan        nan         16        640: 100%|██████████| 8/8 "
                   "[00:02<00:00,  3.00it/s]\n",
    "ultralytics-cpu": "      1/100         0G        nan        nan        nan         16        640: 100%|██████████| 8/8 "
                       "[00:02<00:00,  3.00it/s]\n",
    "detectron2-check": "FloatingPointError: Loss became infinite or NaN at iteration=0!\nloss_dict = {'loss_cls': nan}\n",
    "detectron2-metrics": "[01/01 00:00:00 d2.utils.events]:  eta: 1:00:00  iter: 19  total_loss: nan  loss_cls: nan  "
                          "loss_box_reg: nan  time: 0.5  data_time: 0.01  lr: 0.001  max_mem: 3000M\n",
    "keras-2": "100/100 [==============================] - 1s 10ms/step - loss: nan - accuracy: 0.1000\n",
    "keras-3": "\x1b[1m100/100\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m1s\x1b[0m 10ms/step - "
               "accuracy: 0.1000 - loss: nan\n",
    "keras-terminate-on-nan": "Batch 23: Invalid loss, terminating training\n",
    "flax-absl": "I0101 00:00:00.000000 140000 train.py:100] train epoch: 1, loss: nan, accuracy: 10.00\n",
    "clu-metric-writer": "I0101 00:00:00.000000 140000 logging_writer.py:48] [100] train_loss=nan, learning_rate=0.001\n",
    "timm": "Train: 0 [ 100/1000 ( 10%)]  Loss: nan (nan)  Time: 0.500s,  256.00/s  (0.500s,  256.00/s)  LR: 1.000e-03\n",
    "mae-deit-stop": "Loss is nan, stopping training\n",
    "wandb-summary": "wandb: Run summary:\nwandb:          train/epoch 1.0\nwandb:     train/grad_norm nan\n"
                     "wandb:          train/loss nan\n",
    "accelerate-logger": "01/01/2024 00:00:00 - INFO - __main__ - epoch 0: step 100: loss: nan\n",
    "nanogpt": "iter 100: loss nan, time 100.00ms, mfu 30.00%\n",
    "tf-tutorial-cost": "Epoch: 0001 cost= 2.303412771\nEpoch: 0002 cost= nan\nEpoch: 0003 cost= nan\n",
    "xgboost-eval": "[3]\ttrain-rmse:0.81233\tvalid-rmse:0.84410\n[4]\ttrain-rmse:nan\tvalid-rmse:nan\n[5]\ttrain-rmse:nan\t"
                    "valid-rmse:nan\n",
    "keras-mse": "Epoch 3/50 - mse: nan - val_mse: nan\nEpoch 4/50 - mse: nan - val_mse: nan\n",
    "vae-elbo-kl": "Epoch 1 | NLL: nan | KL: nan\nEpoch 2 | NLL: nan | KL: nan\n",
    "gan-loss-d-g": "[1/200][10/938] Loss D: nan, Loss G: nan\n[1/200][11/938] Loss D: nan, Loss G: nan\n",
    "perplexity-equals": "Epoch 1 perplexity = nan\nEpoch 2 perplexity = nan\n",
    "chinese-loss": "第1轮 损失: nan\n第2轮 损失: nan\n",
    "megatron-step-without-loss": _megatron(0, "loss scale: 1.0 | actual seqlen:  4096"),
    "yolov7-one-nan-column": "    42/299     65.1G       nan    0.0151         0       nan      1963       320: 100%|███| "
                             "729/729 [51:09<00:00,  4.21s/it]\n",
    "sb3-table": "| train/              |           |\n|    loss             | nan       |\n|    policy_loss      | nan       |\n",
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_trainers_nonfinite_loss_formats_are_a_nan_loss(scanner, name):
    fs = [f for f in scanner.scan_text(FORMATS[name]).findings if f.role != "secondary"]
    assert fs and fs[0].family == NAN


KILLS = {
    # --- kills and crashes as kernels, schedulers, containers, launchers and MPI report them
    "dmesg-oom": (HOST, "[12345.678901] Out of memory: Killed process 12345 (python) total-vm:123456789kB, "
                        "anon-rss:98765432kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:200000kB oom_score_adj:0\n"),
    "memcg-oom": (HOST, "[ 5000.1] Memory cgroup out of memory: Killed process 4321 (python3) total-vm:41234567kB, "
                        "anon-rss:31234567kB, file-rss:12345kB, shmem-rss:0kB, UID:0 pgtables:70000kB oom_score_adj:-997\n"),
    "systemd-oomd": (HOST, "Jan 01 00:00:00 host systemd-oomd[812]: Killed /user.slice/user-1000.slice/user@1000.service/"
                           "app.slice/app-python.scope due to memory pressure for /user.slice/user-1000.slice/"
                           "user@1000.service being 62.22% > 50.00% for > 20s with reclaim activity\n"),
    "earlyoom": (HOST, "earlyoom[454]: low memory! at or below SIGTERM limits: mem 10.00%, swap 10.00%\n"
                       "earlyoom[454]: sending SIGTERM to process 9994 uid 1000 \"python\": badness 1181, VmRSS 4568 MiB\n"),
    "earlyoom-older": (HOST, "sending SIGTERM to process 1234 uid 1000 \"python\": oom_score 900, VmRSS 30000 MiB, "
                             "cmdline \"python train.py\"\n"),
    "slurm-oom-event": (HOST, "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1234.batch. Some of your "
                              "processes may have been killed by the cgroup out-of-memory handler.\n"),
    "slurm-srun-oom": (HOST, "srun: error: node01: task 0: Out Of Memory\n"),
    "slurm-exceeded": (HOST, "slurmstepd: error: Job 1234 exceeded memory limit (16777216 > 16384000), being killed\n"),
    "htcondor-hold": (HOST, "\tJob has gone over cgroup memory limit of 8192 megabytes. Last measured usage: 8211 "
                            "megabytes.  Consider resubmitting with a higher request_memory.\n"),
    "htcondor-hold-older": (HOST, "Job has gone over memory limit of 2048 megabytes.\n"),
    "grid-engine": (HOST, "job 81234 exceeds job hard limit \"h_vmem\" of queue \"gpu.q@node07\" (34359738368.00000 > "
                          "limit:34359738368.00000) - sending SIGKILL\n"),
    "ecs-aws-batch": (HOST, "Status reason: OutOfMemoryError: Container killed due to memory usage\n"),
    "cloud-run": (HOST, "Memory limit of 2 GiB exceeded with 2084 MiB used. Consider increasing the memory limit\n"),
    "app-engine": (HOST, "Exceeded hard memory limit of 256 MB with 270 MB after servicing 12 requests total.\n"),
    "heroku": (HOST, "heroku[worker.1]: Error R15 (Memory quota vastly exceeded)\n"),
    "pbs": (HOST, "=>> PBS: job killed: mem 67108864kb exceeded limit 62914560kb\n"),
    "lsf": (HOST, "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\nExited with exit code 137.\n"),
    "k8s-describe": (HOST, "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"),
    "docker-ps": (HOST, "abc123   trainer:latest   \"python train.py\"   5 minutes ago   Exited (137) 2 minutes ago\n"),
    "torchelastic-summary": (HOST, "Root Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_00:00:00\n"
                                   "  host      : node01\n  rank      : 0 (local_rank: 0)\n  exitcode  : -9 (pid: 1234)\n"
                                   "  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 1234\n"),
    "killed-after-steps": (HOST, _steps() + "Killed\n"),
    "deepspeed-launcher": (HOST, "[2024-01-01 00:00:00,000] [ERROR] [launch.py:322:sigkill_handler] ['/usr/bin/python', "
                                 "'-u', 'train.py', '--local_rank=0'] exits with return code = -9\n"),
    "mpich-killed-by-signal": (HOST, _steps() + _hydra("KILLED BY SIGNAL: 9 (Killed)")),
    "mpich-exit-code-9": (HOST, _steps() + _hydra_old(9)),
    "open-mpi-signal-9": (HOST, "mpirun noticed that process rank 0 with PID 1234 on node node01 exited on signal 9 "
                                "(Killed).\n"),
    "pycharm-137": (HOST, _steps() + "\nProcess finished with exit code 137 (interrupted by signal 9: SIGKILL)\n"),
    "segv-shell": (SEGV, _steps() + "run.sh: line 3: 1234 Segmentation fault      (core dumped) python train.py\n"),
    "segv-faulthandler": (SEGV, "Fatal Python error: Segmentation fault\n\nThread 0x00007f (most recent call first):\n"
                                "  File \"/x.py\", line 1 in f\n"),
    "segv-open-mpi": (SEGV, "[node01:12345] *** Process received signal ***\n[node01:12345] Signal: Segmentation fault (11)"
                            "\n[node01:12345] Signal code: Address not mapped (1)\n"),
    "segv-ucx": (SEGV, "[node01:12345:0:12345] Caught signal 11 (Segmentation fault: address not mapped to object at "
                       "address 0x8)\n"),
    "segv-absl": (SEGV, "*** SIGSEGV received at time=1700000000 on cpu 3 ***\nPC: @     0x7f12345 (unknown) (unknown)\n"),
    "segv-torchelastic": (SEGV, "[2024-01-01 00:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                                "(exitcode: -11) local_rank: 0 (pid: 1234) of binary: /usr/bin/python\n"),
    "segv-dmesg": (SEGV, "[1234.5] python[4321]: segfault at 0 ip 00007f sp 00007ffd error 4 in libcuda.so.535.104.05"
                         "[7f+1000]\n"),
    "segv-mpich-killed-by-signal": (SEGV, _steps() + _hydra("KILLED BY SIGNAL: 11 (Segmentation fault)")),
    "segv-mpich-exit-code-139": (SEGV, _steps() + _hydra_old(139)),
    "bus-error-shell": (SHM, _steps() + "Bus error (core dumped)\n"),
    "bus-error-nccl-shm": (SHM, "node01:1234:1290 [0] include/shm.h:28 NCCL WARN Error while creating shared memory "
                                "segment /dev/shm/nccl-vzIpS6 (size 9637888)\n"),
    "bus-error-torchelastic": (SHM, "[2024-01-01 00:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] "
                                    "failed (exitcode: -7) local_rank: 0 (pid: 1234) of binary: /usr/bin/python\n"),
    "bus-error-mpich": (SHM, _steps() + _hydra("KILLED BY SIGNAL: 7 (Bus error)")),
    "slurm-time-limit": (STOP, _steps() + "slurmstepd: error: *** JOB 1234 ON node01 CANCELLED AT 2024-01-01T00:00:00 "
                                          "DUE TO TIME LIMIT ***\n"),
    "slurm-cancelled": (STOP, _steps() + "slurmstepd: error: *** JOB 1234 ON node01 CANCELLED AT 2024-01-01T00:00:00 ***\n"),
    "torchelastic-sigterm": (STOP, _steps() + "[2024-01-01 00:00:00,000] torch.distributed.elastic.agent.server.api: "
                                              "[INFO] Received Signals.SIGTERM death signal, shutting down workers\n"),
    "mpich-sigterm": (STOP, _steps() + _hydra("KILLED BY SIGNAL: 15 (Terminated)")),
    "nccl-ib-async-event": ("nccl-error", "gpu-a7:81234:81301 [0] transport/net_ib.cc:97 NCCL WARN NET/IB : mlx5_2:1 "
                                          "Got async event : port error\n"),
    "nccl-argcheck": ("nccl-error", "slave1:126624:126758 [1] misc/argcheck.cc:39 NCCL WARN Broadcast : invalid root 0 "
                                    "(root should be in the 0..-1 range)\n"),
    "tf-bfc-allocator": ("cuda-oom", "2021-04-07 10:21:33.018252: W tensorflow/core/common_runtime/bfc_allocator.cc:456] "
                                     "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.12GiB (rounded to "
                                     "1207959552)requested by op Conv2DBackpropFilter\n"),
    "segv-pytorch-crash-handler": (SEGV, "!!!!!!! Segfault encountered !!!!!!!\n  File \"<unknown>\", line 0, in "
                                         "cuGraphLaunch\n"),
    # --- a GPU that failed
    "nvidia-smi-err-fields": ("gpu-hardware-fault", "| ERR!   ERR! ERR!    ERR! / ERR! |      0MiB / 81920MiB |    "
                              "ERR!     Default |\n"),
    "gsp-rpc-timeout": ("gpu-hardware-fault", "NVRM: GPU0 _kgspRpcRecvPoll: Timeout after 6s of waiting for RPC "
                        "response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n"),
    "dmesg-xid-79": ("gpu-hardware-fault", "[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has "
                     "fallen off the bus.\n"),
    "nccl-check-trace": ("nccl-error", "HOSTNAME:2753:2762 [0] NCCL INFO init.cu:568 -> 1\n"),
    "ngc-entrypoint-cuinit": ("cuda-env-mismatch", "ERROR: This container was built for NVIDIA Driver Release 450.51 or "
                              "later, but\n       version 440.64.00 was detected and compatibility mode is UNAVAILABLE."
                              "\n\n       [[CUDA Driver UNAVAILABLE (cuInit(0) returned 804)]]\n"),
    "dcgmi-diag": ("gpu-hardware-fault", "| Error                     | GPU 3 has uncorrectable memory errors and row  |\n"),
    # --- an engine that stops
    "vllm-v1-zero-throughput": (HANG, "".join(
        f"INFO 01-01 00:0{i}:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 0.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit "
        "rate: 0.0%\n" for i in range(4))),
    "sglang-zero-throughput": (HANG, "".join(
        f"[2025-01-01 00:0{i}:00 TP0] Decode batch. #running-req: 8, #token: 1000, token usage: 0.05, cuda graph: "
        "True, gen throughput (token/s): 0.00, #queue-req: 0\n" for i in range(4))),
    "vllm-v0-nothing-processed-while-running-and-waiting": (HANG,
        "INFO 02-01 06:36:20 llm_engine.py:921] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 "
        "tokens/s, Max iteration time: 0.0 ms, Avg time/tok:0.0 ms, Running: 35 reqs, Swapped: 0 reqs, Pending: 116 "
        "reqs, GPU KV cache usage: 99.0%, CPU KV cache usage: 0.0%\n"),
    "vllm-early-scheduler-waits-on-empty-cache": (HANG, "".join(
        f"INFO 08-01 03:09:{s:02d} scheduler.py:271] Throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, "
        "Pending: 1 reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%\n" for s in (2, 7, 12))),
}


@pytest.mark.parametrize("name", sorted(KILLS))
def test_kills_crashes_and_stops_are_named_as_their_printers_word_them(scanner, name):
    family, text = KILLS[name]
    fs = [f for f in scanner.scan_text(text).findings if f.role != "secondary"]
    assert fs and fs[0].family == family


QUIET = {
    "fp16-warmup-deepspeed": _ds([65536, 32768, 16384, 8192, 4096, 2048]) + _steps(),
    "fp16-warmup-apex": "".join(f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to "
                                f"{2.0 ** (16 - i)}\n" for i in range(5)) + _steps(),
    "one-nan-grad-norm-then-finite": "{'loss': 2.3, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.1}\n" + _steps(),
    "recovered-spike": "".join(f"step {i} loss {v}\n" for i, v in enumerate([2.3, 2.2, 2.1, 25.0, 2.0, 1.9, 1.9, 1.8])),
    "slow-but-moving": "".join(f"[2024-01-01 0{i}:00:00] {{'loss': 2.{i}, 'grad_norm': 1.{i}, 'learning_rate': 1e-05, "
                               f"'epoch': 0.{i}}}\n" for i in range(8)),
    "undefined-eval-metric": "{'eval_loss': 0.5, 'eval_f1': nan, 'epoch': 1.0}\n",
    "vllm-idle": "".join(f"INFO 01-01 00:0{i}:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
                         "generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: "
                         "0.0%, Prefix cache hit rate: 0.0%\n" for i in range(4)),
    "mpich-exit-code-1": _steps() + _hydra_old(1),
    "megatron-fp16-interval-all-skipped": _megatron(0, "loss scale: 4294967296.0").replace("skipped iterations:   0",
                                                                                          "skipped iterations:  10").replace(
        "nan iterations:   1", "nan iterations:   0"),
    "vllm-idle-after-work": "INFO 02-01 06:36:20 llm_engine.py:921] Avg prompt throughput: 0.0 tokens/s, Avg generation "
                            "throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
                            "usage: 0.0%, CPU KV cache usage: 0.0%\n",
    "cost-nan-once-then-finite": "Epoch: 0001 cost= 2.3034\nEpoch: 0002 cost= nan\nEpoch: 0003 cost= 1.9984\n",
    "undefined-f1-beside-finite-mse": "epoch 1 | f1: nan | mse: 0.2210\nepoch 2 | f1: nan | mse: 0.1894\n",
    # a library that falls back to the CPU with a warning is no failure of the run
    "jax-cpu-fallback": "WARNING:jax._src.xla_bridge:An NVIDIA GPU may be present on this machine, but a CUDA-enabled "
                        "jaxlib is not installed. Falling back to cpu.\n" + _steps(),
    "tf-gpu-libraries-missing": "W tensorflow/core/common_runtime/gpu/gpu_device.cc:1934] Cannot dlopen some GPU "
                                "libraries.\nSkipping registering GPU devices...\n" + _steps(),
    "earlyoom-status": "earlyoom v1.7\nearlyoom[454]: mem avail:  7072 of  7721 MiB (91.60%), swap free: 7720 of 7720 "
                       "MiB (100.00%)\n",
    "tf-bfc-retry": "2023-11-06 13:58:30.645317: W tensorflow/core/common_runtime/bfc_allocator.cc:271] Allocator "
                    "(GPU_0_bfc) ran out of memory trying to allocate 2.16GiB with freed_by_count=0. The caller "
                    "indicates that this is not a failure, but may mean that there could be performance gains if more "
                    "memory were available.\n" + _steps(),
}


@pytest.mark.parametrize("name", sorted(QUIET))
def test_the_same_printers_healthy_text_stays_quiet(scanner, name):
    assert [f.family for f in scanner.scan_text(QUIET[name]).findings if f.role != "secondary"] == []


@pytest.mark.parametrize("first,kill", [
    (_hydra("EXIT CODE: 1"), _hydra("KILLED BY SIGNAL: 9 (Killed)").replace("RANK 0", "RANK 1")),
    ("srun: error: n1: task 3: Exited with exit code 1\n", "srun: error: n1: task 0: Killed\n"),
])
def test_a_launchers_kill_after_another_task_failed_is_its_teardown_not_a_host_oom(first, kill):
    v = sigclass.classify(first + kill).verdict
    assert v.cause.family == "unknown"
    assert [x.family for x in v.victims] == ["process-killed-by-signal"]
    # the same kill alone is the fault
    assert sigclass.classify(kill).verdict.cause.family == HOST
