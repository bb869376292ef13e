"""Generate a large, realistic ML/GPU run log with known failures injected.

The log mixes what long vLLM / torchrun jobs print: vLLM INFO lines (front end
and `(EngineCore_DP0 pid=N)` workers), torchrun `[rankN]:` lines, Python
logging, NCCL INFO, tqdm bars redrawn with `\\r` and block characters, and
clean lines that contain tempting words (`error_rate=0.000`, WARNINGs, retries
that succeed). Every few MB a failure from a varied set is injected: Python
tracebacks (CUDA OOM, illegal memory access, NCCL errors, import errors,
EngineDeadError, an unknown ValueError, ...), C++ `terminate called` blocks,
one-line failures (watchdog timeouts, a bash segfault line), some of them
interleaved across ranks.

A manifest (JSON) is written next to the log: for every injected failure, its
first line, its key line (the exception line), its last line, the worker it
belongs to and the family a complete ledger should give it (or `unknown`).
`needs_ledger` marks failures that only ledger patterns can find (no traceback,
no `SomethingError: ` line, no C++ terminate block).

Deterministic: the same --seed and --size-mb give the same bytes.

    python bench/gen_log.py                      # bench/out/scan-300mb-s1.log
    python bench/gen_log.py --size-mb 50 x.log
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

GENERATOR_VERSION = 1
MB = 1_000_000  # sizes are decimal megabytes
CHUNK = 4 * MB  # bytes handed to one write()
HERE = Path(__file__).resolve().parent
START = datetime(2025, 3, 23, 11, 14, 5)

GPU = "NVIDIA A100-SXM4-80GB"
HOSTS = ["gpu-a100-07", "gpu-a100-12"]
MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "mistralai/Mistral-Nemo-Instruct-2407"]
SITE = "/opt/conda/lib/python3.11/site-packages"
BLOCKS = " ▏▎▍▌▋▊▉█"
LINES_PER_SECOND = 250.0


class Clock:
    """A monotonically advancing wall clock with cached formatted seconds."""

    def __init__(self) -> None:
        self.t = 0.0
        self._sec = -1
        self.vllm = self.iso = self.glog = ""

    def tick(self, dt: float) -> None:
        self.t += dt
        s = int(self.t)
        if s != self._sec:
            self._sec = s
            d = START + timedelta(seconds=s)
            self.vllm = d.strftime("%m-%d %H:%M:%S")
            self.iso = d.strftime("%Y-%m-%d %H:%M:%S")
            self.glog = d.strftime("%m%d %H:%M:%S")

    @property
    def ms(self) -> int:
        return int((self.t % 1.0) * 1000)

    @property
    def us(self) -> int:
        return int((self.t % 1.0) * 1_000_000)


class Noise:
    """Clean log lines, drawn by weight."""

    def __init__(self, r: random.Random, clock: Clock) -> None:
        self.r = r
        self.c = clock
        self.core_pid = r.randint(40000, 60000)
        self.front_pid = self.core_pid - r.randint(40, 90)
        self.step = 0
        self.shard = 0
        self.model = r.choice(MODELS)
        self.next_stats = 10.0
        self.next_shard = 0.0
        self.shard_open = False
        kinds = [
            (self.vllm_front, 14), (self.vllm_core, 20), (self.rank_step, 16), (self.pylog, 16),
            (self.nccl_info, 9), (self.tqdm_bar, 4), (self.hf_metrics, 5), (self.tempting, 6),
            (self.glog_warn, 2), (self.user_warning, 1),
        ]
        self.set_kinds(kinds)

    def set_kinds(self, kinds: list) -> None:
        """The line kinds to draw from, as (method, weight) pairs."""
        self.funcs = [f for f, _ in kinds]
        acc = 0.0
        self.cum = []
        for _, w in kinds:
            acc += w
            self.cum.append(acc)
        self.total = acc

    def draw(self) -> str:
        """One line of a kind drawn by weight."""
        k = bisect.bisect_right(self.cum, self.r.random() * self.total)
        return self.funcs[min(k, len(self.funcs) - 1)]()

    def line(self) -> str:
        self.c.tick(self.r.expovariate(LINES_PER_SECOND))
        if self.c.t >= self.next_stats:  # vLLM logs its stats line every 10 s
            self.next_stats += 10.0
            return self.stats()
        if self.c.t >= self.next_shard:  # one shard of work ends and the next starts every ~minute
            return self.shard_marker()
        return self.draw()

    # ---------------------------------------------------------------- kinds
    def stats(self) -> str:
        r, c = self.r, self.c
        return (f"INFO {c.vllm} [loggers.py:{r.choice((116, 123))}] Engine 000: Avg prompt throughput: "
                f"{r.uniform(800, 4000):.1f} tokens/s, Avg generation throughput: {r.uniform(300, 1200):.1f} tokens/s, "
                f"Running: {r.randint(8, 128)} reqs, Waiting: {r.randint(0, 600)} reqs, "
                f"GPU KV cache usage: {r.uniform(10, 95):.1f}%, Prefix cache hit rate: {r.uniform(0, 60):.1f}%")

    def startup(self) -> list[str]:
        """What a (re)started job prints before steady state: versions, config, devices."""
        r, c = self.r, self.c
        self.core_pid = r.randint(40000, 60000)
        self.front_pid = self.core_pid - r.randint(40, 90)
        p = f"(EngineCore_DP0 pid={self.core_pid}) "
        out = [f"{c.iso},{c.ms:03d} - launcher - INFO - starting worker on {r.choice(HOSTS)}: torch 2.7.1+cu126, "
               "vllm 0.10.1.1",
               f"INFO {c.vllm} [__init__.py:241] Automatically detected platform cuda.",
               f"INFO {c.vllm} [utils.py:326] non-default args: {{'model': '{self.model}', 'max_model_len': 32768, "
               "'gpu_memory_utilization': 0.9, 'enable_prefix_caching': True, 'disable_log_stats': False}",
               f"{p}INFO {c.vllm} [core.py:65] Initializing a V1 LLM engine (v0.10.1.1) with config: "
               f"model='{self.model}', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, "
               "enforce_eager=False, enable_prefix_caching=True, chunked_prefill_enabled=True",
               f"{p}INFO {c.vllm} [parallel_state.py:1134] rank 0 in world size 1 is assigned as DP rank 0, "
               "PP rank 0, TP rank 0, EP rank 0",
               f"{p}INFO {c.vllm} [monitor.py:34] torch.compile takes {r.uniform(10, 60):.2f} s in total on {GPU}",
               f"{p}INFO {c.vllm} [gpu_worker.py:255] Available KV cache memory: {r.uniform(8, 40):.2f} GiB",
               f"{c.iso},{c.ms:03d} - gen.worker - INFO - host={r.choice(HOSTS)} worker=gpu{r.randrange(8)} "
               f"device=cuda:0 ({GPU}) free={r.uniform(2, 70):.1f} GiB"]
        return out

    def vllm_front(self) -> str:
        r, c = self.r, self.c
        x = r.random()
        if x < 0.6:
            return (f"INFO {c.vllm} [async_llm.py:{r.randint(250, 420)}] Added request chatcmpl-{r.getrandbits(64):016x}.")
        if x < 0.85:
            return (f'INFO:     10.0.{r.randint(0, 9)}.{r.randint(2, 250)}:{r.randint(30000, 60000)} - '
                    f'"POST /v1/chat/completions HTTP/1.1" 200 OK')
        return (f"INFO {c.vllm} [metrics.py:{r.randint(80, 200)}] Finished request {r.randint(1, 99999)}: "
                f"prompt_tokens={r.randint(100, 9000)}, completion_tokens={r.randint(1, 2048)}, errors=0")

    def vllm_core(self) -> str:
        r, c = self.r, self.c
        p = f"(EngineCore_DP0 pid={self.core_pid}) "
        x = r.random()
        if x < 0.3:
            return (f"{p}INFO {c.vllm} [gpu_model_runner.py:{r.randint(1800, 2400)}] Step {r.randint(1, 10**7)}: "
                    f"{r.randint(1, 256)} running, {r.randint(0, 64)} finished, {r.uniform(5, 90):.1f} ms")
        if x < 0.5:
            return (f"{p}INFO {c.vllm} [kv_cache_utils.py:{r.randint(700, 900)}] GPU KV cache size: "
                    f"{r.randint(100, 900) * 1000:,} tokens")
        if x < 0.7:
            return (f"{p}INFO {c.vllm} [core.py:{r.randint(60, 200)}] Batch {r.randint(1, 10**6)} scheduled "
                    f"{r.randint(1, 256)} seqs, {r.randint(1, 8192)} tokens; preempted=0 aborted=0")
        if x < 0.85:
            return (f"{p}DEBUG {c.vllm} [shm_broadcast.py:{r.randint(400, 600)}] Reader {r.randint(0, 7)} "
                    f"consumed block {r.randint(0, 9)} in {r.uniform(0.01, 3):.2f} ms")
        return (f"{p}INFO {c.vllm} [block_pool.py:{r.randint(200, 400)}] Freed {r.randint(1, 512)} blocks; "
                f"{r.randint(100, 9000)} free of {r.randint(9000, 20000)}")

    def rank_step(self) -> str:
        r, c = self.r, self.c
        rank = r.randrange(8)
        x = r.random()
        if x < 0.7:
            self.step += 1
            return (f"[rank{rank}]: step {self.step} | loss {r.uniform(1.2, 2.8):.4f} | lr {r.uniform(1, 3) * 1e-5:.2e} | "
                    f"grad_norm {r.uniform(0.1, 2.0):.3f} | tokens/s {r.randint(20000, 60000)} | "
                    f"nan_count=0 skipped=0")
        if x < 0.85:
            return (f"[rank{rank}]:[I{c.glog}.{c.us:06d}{r.randint(0, 999):03d} ProcessGroupNCCL.cpp:{r.randint(900, 2000)}] "
                    f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] ProcessGroupNCCL initialized with following options: "
                    f"NCCL_ASYNC_ERROR_HANDLING: 3, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0")
        return (f"[rank{rank}]: {c.iso},{c.ms:03d} - trainer - INFO - Saving checkpoint to "
                f"/scratch/ckpt/step-{self.step}/model.safetensors ({r.uniform(1, 16):.1f} GB) done")

    def pylog(self) -> str:
        r, c = self.r, self.c
        x = r.random()
        if x < 0.35:
            return (f"{c.iso},{c.ms:03d} - datagen - INFO - wrote {r.randint(100, 5000)} records to "
                    f"/scratch/out/part-{r.randint(0, 999):05d}.jsonl ({r.uniform(1, 90):.1f} MB)")
        if x < 0.6:
            return (f"{c.iso},{c.ms:03d} - eval - INFO - step={self.step} accuracy={r.uniform(0.5, 0.9):.4f} "
                    f"error_rate=0.000 exact_match={r.uniform(0.3, 0.7):.3f} failures=0")
        if x < 0.8:
            return (f"{c.iso},{c.ms:03d} - datagen - INFO - batch {r.randint(0, 10**6)} rendered in "
                    f"{r.uniform(0.1, 9):.2f}s ({r.randint(1, 64)} prompts, {r.randint(1000, 90000)} tokens)")
        return (f"[{c.iso},{c.ms:03d}] [INFO] [scheduler] queue depth {r.randint(0, 400)}, "
                f"{r.randint(0, 8)} workers busy, retries=0")

    def nccl_info(self) -> str:
        r = self.r
        host = r.choice(HOSTS)
        pid = r.randint(40000, 60000)
        dev = r.randrange(8)
        x = r.random()
        head = f"{host}:{pid}:{pid + r.randint(1, 90)} [{dev}] NCCL INFO "
        if x < 0.45:
            return (f"{head}Channel {r.randint(0, 31):02d}/0 : {dev}[{dev}] -> {(dev + 1) % 8}[{(dev + 1) % 8}] "
                    f"via P2P/CUMEM/read")
        if x < 0.6:
            return f"{head}Connected all rings, use ring PXN 0 GDR 1"
        if x < 0.75:
            return (f"{head}ncclCommInitRank comm 0x{r.getrandbits(44):x} rank {dev} nranks 8 cudaDev {dev} "
                    f"nvmlDev {dev} busId {r.choice(('18000', '2a000', '3a000', '5d000'))} "
                    f"commId 0x{r.getrandbits(64):x} - Init COMPLETE")
        if x < 0.9:
            return f"{head}NET/Socket : Using [0]eth0:10.0.3.{r.randint(2, 250)}<0>"
        return f"{head}comm 0x{r.getrandbits(44):x} rank {dev} nRanks 8 nNodes 1 localRanks 8 localRank {dev} MNNVL 0"

    def tqdm_bar(self) -> str:
        r = self.r
        total = r.choice((100, 256, 800, 1000, 4096))
        label = r.choice(("Processed prompts", "Adding requests", "Loading safetensors checkpoint shards",
                          "Capturing CUDA graph shapes", "Map (num_proc=8)"))
        n = r.randint(4, 16)
        parts = []
        rate = r.uniform(1, 400)
        for i in range(n + 1):
            done = total * i // n
            frac = done / total
            full = int(frac * 10)
            rem = int((frac * 10 - full) * 8)
            bar = "█" * full + (BLOCKS[rem] if full < 10 else "") + " " * (9 - full if full < 10 else 0)
            parts.append(f"{label}: {int(frac * 100):3d}%|{bar}| {done}/{total} "
                         f"[{i // 60:02d}:{i % 60:02d}<{(n - i) // 60:02d}:{(n - i) % 60:02d}, {rate:.2f}it/s]")
        return "\r".join(parts)

    def hf_metrics(self) -> str:
        r = self.r
        return (f"{{'loss': {r.uniform(0.8, 2.6):.4f}, 'grad_norm': {r.uniform(0.1, 3):.4f}, "
                f"'learning_rate': {r.uniform(1, 3) * 1e-5:.3e}, 'epoch': {r.uniform(0, 3):.2f}}}")

    def tempting(self) -> str:
        r, c = self.r, self.c
        x = r.random()
        if x < 0.25:
            n = r.randint(1, 9999)
            return (f"WARNING {c.vllm} [scheduler.py:1560] Sequence group {n} is preempted by "
                    "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the "
                    "end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more "
                    f"KV cache memory. total_num_cumulative_preemption={r.randint(1, 300)}")
        if x < 0.3:
            f = r.randint(0, 999)
            return (f"{c.iso},{c.ms:03d} - uploader - WARNING - upload of part-{f:05d}.parquet failed "
                    f"(ConnectionResetError: [Errno 104] Connection reset by peer); retrying in 2.0s (attempt 1/5)")
        if x < 0.35:
            return (f"{c.iso},{c.ms:03d} - uploader - INFO - upload of part-{r.randint(0, 999):05d}.parquet "
                    f"succeeded on attempt 2 after 1 retry")
        if x < 0.6:
            return (f"[rank{r.randrange(8)}]:[W{c.glog}.{c.us:06d}{r.randint(0, 999):03d} ProcessGroupNCCL.cpp:4561] "
                    "[PG ID 0 PG GUID 0 Rank 0]  using GPU 0 to perform barrier as devices used by this process are "
                    "currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.")
        if x < 0.7:
            return (f"{c.iso},{c.ms:03d} - eval - INFO - validation done: error_rate=0.000 errors=0 "
                    "no NaN/inf detected in outputs")
        if x < 0.8:
            return (f"WARNING {c.vllm} [utils.py:{r.randint(100, 900)}] The tokenizer's chat template has no "
                    "'generation' keyword; assistant masks will be empty")
        if x < 0.9:
            return (f"{c.iso},{c.ms:03d} - httpx - INFO - HTTP Request: GET http://10.0.0.5:8000/health "
                    f"\"HTTP/1.1 200 OK\" (retry {r.randint(1, 3)}/3 ok)")
        return (f"{c.iso},{c.ms:03d} - trainer - WARNING - gradient overflow check: 0 overflowed steps in last "
                "1000; loss scale stays 65536")

    def glog_warn(self) -> str:
        r, c = self.r, self.c
        return (f"W{c.glog}.{c.us:06d} {r.randint(40000, 60000)} torch/distributed/run.py:793] "
                "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
                "system being overloaded, please further tune the variable for optimal performance in your "
                "application as needed.")

    def user_warning(self) -> str:
        return (f"{SITE}/torch/utils/checkpoint.py:87: UserWarning: None of the inputs have requires_grad=True. "
                "Gradients will be None")

    def shard_marker(self) -> str:
        c = self.c
        if self.shard_open:
            self.shard_open = False
            self.next_shard = self.c.t  # the next shard starts right away
            return f"{c.iso},{c.ms:03d} - launcher - INFO - [shard {self.shard}] done: 800 prompts"
        self.shard += 1
        self.shard_open = True
        self.next_shard = self.c.t + self.r.uniform(30.0, 90.0)
        return f"{c.iso},{c.ms:03d} - launcher - INFO - [shard {self.shard}] starting: 800 prompts"


# ---------------------------------------------------------------------------- failures


def frames(r: random.Random, kind: str) -> list[str]:
    """Python traceback frame lines (file line + source line, sometimes a caret line)."""
    stacks = {
        "train": [
            ("/workspace/train.py", "main", "trainer.train()"),
            (f"{SITE}/transformers/trainer.py", "train", "return inner_training_loop("),
            (f"{SITE}/transformers/trainer.py", "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs)"),
            (f"{SITE}/transformers/trainer.py", "training_step", "loss = self.compute_loss(model, inputs)"),
            (f"{SITE}/torch/nn/modules/module.py", "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
            (f"{SITE}/torch/nn/modules/module.py", "_call_impl", "return forward_call(*args, **kwargs)"),
        ],
        "engine": [
            (f"{SITE}/vllm/v1/engine/core.py", "run_engine_core", "engine_core.run_busy_loop()"),
            (f"{SITE}/vllm/v1/engine/core.py", "run_busy_loop", "self._process_engine_step()"),
            (f"{SITE}/vllm/v1/engine/core.py", "_process_engine_step", "outputs, model_executed = self.step_fn()"),
            (f"{SITE}/vllm/v1/engine/core.py", "step", "model_output = self.execute_model_with_error_logging("),
            (f"{SITE}/vllm/v1/executor/abstract.py", "execute_model", 'output = self.collective_rpc("execute_model",'),
            (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", "execute_model", "valid_sampled_token_ids = sampled_token_ids.tolist()"),
        ],
        "dist": [
            ("/workspace/train.py", "main", "dist.init_process_group(backend=\"nccl\")"),
            (f"{SITE}/torch/distributed/c10d_logger.py", "wrapper", "return func(*args, **kwargs)"),
            (f"{SITE}/torch/distributed/distributed_c10d.py", "all_reduce", "work = group.allreduce([tensor], opts)"),
        ],
        "client": [
            ("/workspace/gen.py", "<module>", "main()"),
            ("/workspace/gen.py", "main", "outputs = llm.generate(prompts, params)"),
            (f"{SITE}/vllm/entrypoints/llm.py", "generate", "outputs = self._run_engine(use_tqdm=use_tqdm)"),
            (f"{SITE}/vllm/v1/engine/llm_engine.py", "step", "outputs = self.engine_core.get_output()"),
            (f"{SITE}/vllm/v1/engine/core_client.py", "get_output", "raise self._format_exception(outputs) from None"),
        ],
        "import": [
            ("/workspace/train.py", "<module>", "from model import build_model"),
            ("/workspace/model.py", "<module>", "from flash_attn import flash_attn_varlen_func"),
        ],
        "data": [
            ("/workspace/gen.py", "main", "for batch in loader:"),
            (f"{SITE}/torch/utils/data/dataloader.py", "__next__", "data = self._next_data()"),
            (f"{SITE}/torch/utils/data/dataloader.py", "_next_data", "return self._process_data(data)"),
            (f"{SITE}/torch/utils/data/dataloader.py", "_process_data", "data.reraise()"),
        ],
    }
    out = []
    for path, fn, src in stacks[kind]:
        out.append(f'  File "{path}", line {r.randint(20, 2900)}, in {fn}')
        out.append(f"    {src}")
        if r.random() < 0.15:
            out.append("    " + "^" * min(len(src), r.randint(8, 40)))
    return out


class Failure:
    """A block of lines plus the manifest entries that point into it (indices into lines)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.entries: list[dict] = []

    def add(self, lines: list[str], family: str, *, key: int, worker: str | None, kind: str,
            needs_ledger: bool = False, what: str = "") -> None:
        """Append one failure (first line = lines[0], key = index within lines)."""
        base = len(self.lines)
        self.lines.extend(lines)
        self.entries.append({"first": base, "key": base + key, "end": base + len(lines) - 1, "family": family,
                             "worker": worker, "kind": kind, "needs_ledger": needs_ledger, "what": what})

    def extend(self, lines: list[str]) -> None:
        self.lines.extend(lines)


def _tb(r: random.Random, stack: str, exc: list[str]) -> tuple[list[str], int]:
    body = ["Traceback (most recent call last):", *frames(r, stack), *exc]
    return body, len(body) - len(exc)


def _prefix(lines: list[str], p: str) -> list[str]:
    return [p + x for x in lines]


def _interleave(r: random.Random, streams: list[list[str]]) -> tuple[list[str], list[list[int]]]:
    """Merge streams at random, keeping each stream's order; returns merged lines and each stream's positions."""
    idx = [0] * len(streams)
    out: list[str] = []
    pos: list[list[int]] = [[] for _ in streams]
    live = [i for i, s in enumerate(streams) if s]
    while live:
        i = r.choice(live)
        take = r.randint(1, 3)
        for _ in range(take):
            if idx[i] >= len(streams[i]):
                break
            pos[i].append(len(out))
            out.append(streams[i][idx[i]])
            idx[i] += 1
        if idx[i] >= len(streams[i]):
            live.remove(i)
    return out, pos


class Injector:
    def __init__(self, r: random.Random, clock: Clock, noise: Noise) -> None:
        self.r = r
        self.c = clock
        self.noise = noise
        kinds = [
            (self.cuda_oom, 10), (self.cuda_oom_interleaved, 6), (self.ima_engine, 8), (self.ima_plain, 4),
            (self.nccl_error_interleaved, 7), (self.watchdog, 7), (self.segfault_bash, 4),
            (self.segfault_fatal, 4), (self.import_error, 6), (self.engine_dead, 6), (self.unknown_value, 7),
            (self.unknown_key, 2), (self.device_assert, 3), (self.disk_full, 2), (self.port_in_use, 2),
            (self.shm_bus, 2), (self.dataloader_killed, 2), (self.kv_cache, 2), (self.orphan_mem, 2),
            (self.env_mismatch, 2), (self.ecc, 1), (self.nan_loss, 2), (self.ray_actor, 2), (self.hub_entry, 2),
            (self.sigterm, 2),
        ]
        self.funcs = [f for f, _ in kinds]
        self.weights = [w for _, w in kinds]
        self.order: list = []

    def next(self) -> Failure:
        # cycle through every kind once (shuffled) before repeating; then draw by weight
        if not self.order:
            self.order = list(self.funcs)
            self.r.shuffle(self.order)
            self.order += self.r.choices(self.funcs, self.weights, k=len(self.funcs))
        return self.order.pop()()

    # ------------------------------------------------------------ helpers
    def core_prefix(self, level: str = "ERROR", src: str = "core.py:700") -> str:
        return f"(EngineCore_DP0 pid={self.noise.core_pid}) {level} {self.c.vllm} [{src}] "

    def logging_head(self, logger: str, msg: str) -> str:
        return f"{self.c.iso},{self.c.ms:03d} - {logger} - ERROR - {msg}"

    # ------------------------------------------------------------ kinds
    def cuda_oom(self) -> Failure:
        r = self.r
        f = Failure()
        rank = r.randrange(8)
        gib = r.choice(("1.96", "2.00", "3.50", "7.81", "448.00 MiB"))
        exc = [f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib}{'' if 'MiB' in gib else ' GiB'}. "
               f"GPU {rank} has a total capacity of 79.15 GiB of which {r.uniform(0.1, 2):.2f} GiB is free. "
               f"Including non-PyTorch memory, this process has 77.9 GiB memory in use. Of the allocated memory "
               f"{r.uniform(60, 75):.2f} GiB is allocated by PyTorch, and {r.uniform(0.5, 3):.2f} GiB is reserved by "
               "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."]
        body, key = _tb(r, "train", exc)
        if r.random() < 0.5:
            f.add(_prefix(body, f"[rank{rank}]: "), "cuda-oom", key=key, worker=str(rank), kind="traceback",
                  what="OOM traceback, torchrun rank prefix")
        else:
            f.extend([self.logging_head("trainer", "training step failed")])
            f.add(body, "cuda-oom", key=key, worker=None, kind="traceback", what="OOM traceback after logging.exception")
        return f

    def cuda_oom_interleaved(self) -> Failure:
        r = self.r
        ranks = r.sample(range(8), r.randint(2, 3))
        streams = []
        keys = []
        for rank in ranks:
            exc = [f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {r.choice((2, 4, 8))}.00 GiB. "
                   f"GPU {rank} has a total capacity of 79.15 GiB of which {r.uniform(0.1, 2):.2f} GiB is free."]
            body, key = _tb(r, "train", exc)
            streams.append(_prefix(body, f"[rank{rank}]: "))
            keys.append(key)
        # other ranks keep logging meanwhile (ranks that are printing a traceback do not)
        others = []
        while len(others) < r.randint(0, 4):
            ln = self.noise.rank_step()
            if not any(ln.startswith(f"[rank{k}]:") for k in ranks):
                others.append(ln)
        merged, pos = _interleave(r, [*streams, others])
        f = Failure()
        f.extend(merged)
        for i, rank in enumerate(ranks):
            p = pos[i]
            f.entries.append({"first": p[0], "key": p[keys[i]], "end": p[-1], "family": "cuda-oom", "worker": str(rank),
                              "kind": "traceback", "needs_ledger": False,
                              "what": f"OOM tracebacks interleaved across {len(ranks)} ranks"})
        return f

    def ima_engine(self) -> Failure:
        r = self.r
        f = Failure()
        p = self.core_prefix()
        f.extend([p + "EngineCore encountered a fatal error."])
        exc = ["RuntimeError: CUDA error: an illegal memory access was encountered",
               "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
               "might be incorrect.",
               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
               "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]
        body, key = _tb(r, "engine", exc)
        f.add(_prefix(body, p), "cuda-illegal-memory-access", key=key, worker=str(self.noise.core_pid),
              kind="traceback", what="IMA in vLLM EngineCore (prefixed, with vLLM header)")
        if r.random() < 0.6:
            # the front end dies next
            f.extend([self.noise.vllm_front() for _ in range(r.randint(0, 2))])
            f.extend([f"ERROR {self.c.vllm} [async_llm.py:420] AsyncLLM output_handler failed."])
            exc2 = ["vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
                    "(above) for the root cause."]
            body2, key2 = _tb(r, "client", exc2)
            f.add(body2, "vllm-engine-dead", key=key2, worker=None, kind="traceback",
                  what="EngineDeadError in the front end after the engine died")
        return f

    def ima_plain(self) -> Failure:
        r = self.r
        f = Failure()
        exc = ["RuntimeError: CUDA error: an illegal memory access was encountered",
               "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
               "might be incorrect.",
               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"]
        body, key = _tb(r, "train", exc)
        f.add(body, "cuda-illegal-memory-access", key=key, worker=None, kind="traceback", what="IMA, plain traceback")
        return f

    def nccl_error_interleaved(self) -> Failure:
        r = self.r
        ranks = r.sample(range(8), r.randint(1, 4))
        streams, keys = [], []
        for rank in ranks:
            exc = [f"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
                   f"ProcessGroupNCCL.cpp:{r.choice((1970, 2027, 3356))}, unhandled system error (run with "
                   "NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
                   "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
                   "Last error:",
                   f"socketStartConnect: Connect to 10.0.3.{r.randint(2, 250)}<{r.randint(30000, 60000)}> failed : "
                   "Software caused connection abort"]
            body, key = _tb(r, "dist", exc)
            streams.append(_prefix(body, f"[rank{rank}]: "))
            keys.append(key)
        merged, pos = _interleave(r, streams)
        f = Failure()
        f.extend(merged)
        for i, rank in enumerate(ranks):
            p = pos[i]
            f.entries.append({"first": p[0], "key": p[keys[i]], "end": p[-1], "family": "nccl-error",
                              "worker": str(rank), "kind": "traceback", "needs_ledger": False,
                              "what": f"NCCL DistBackendError, {len(ranks)} rank(s) interleaved"})
        return f

    def watchdog(self) -> Failure:
        r = self.r
        c = self.c
        f = Failure()
        seq = r.randint(1000, 90000)
        op = r.choice(("ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST"))
        ranks = r.sample(range(8), r.randint(2, 5))
        for rank in ranks:
            line = (f"[rank{rank}]:[E{c.glog}.{c.us:06d}{r.randint(0, 999):03d} ProcessGroupNCCL.cpp:607] "
                    f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
                    f"NumelIn={r.randint(10**4, 10**8)}, NumelOut={r.randint(10**4, 10**8)}, Timeout(ms)=600000) "
                    f"ran for {600000 + r.randint(1, 120)} milliseconds before timing out.")
            f.add([line], "nccl-watchdog-timeout", key=0, worker=str(rank), kind="line", needs_ledger=True,
                  what="watchdog timeout line (one per rank)")
        rank = ranks[0]
        p = f"[rank{rank}]:"
        cpp = [f"{p}terminate called after throwing an instance of 'c10::DistBackendError'",
               f"{p}  what():  [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated "
               f"with exception: [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
               f"OpType={op}, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.",
               f"{p}Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 "
               "(most recent call first):"]
        for i in range(r.randint(3, 7)):
            cpp.append(f"{p}frame #{i}: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout() + 0x{r.getrandbits(12):x} "
                       f"(0x7f{r.getrandbits(40):010x} in {SITE}/torch/lib/libtorch_cuda.so)")
        f.add(cpp, "nccl-watchdog-timeout", key=1, worker=str(rank), kind="cpp",
              what="terminate called after c10::DistBackendError (watchdog)")
        return f

    def segfault_bash(self) -> Failure:
        r = self.r
        f = Failure()
        f.extend([f"+ python gen.py --shard {r.randint(0, 99)} --out /scratch/out"])
        line = f"/var/spool/slurm/d/job{r.randint(10**6, 10**7)}/slurm_script: line 42: {r.randint(40000, 60000)} " \
               "Segmentation fault      (core dumped) python gen.py"
        f.add([line], "segfault", key=0, worker=None, kind="line", needs_ledger=True, what="bash segfault line")
        return f

    def segfault_fatal(self) -> Failure:
        r = self.r
        f = Failure()
        lines = ["Fatal Python error: Segmentation fault", "",
                 f"Thread 0x00007f{r.getrandbits(40):010x} (most recent call first):",
                 f'  File "{SITE}/torch/utils/data/_utils/worker.py", line 308 in _worker_loop',
                 f"Current thread 0x00007f{r.getrandbits(40):010x} (most recent call first):",
                 f'  File "{SITE}/flash_attn/flash_attn_interface.py", line 91 in _flash_attn_forward',
                 f'  File "{SITE}/torch/nn/modules/module.py", line 1747 in _call_impl',
                 '  File "/workspace/train.py", line 211 in main', "",
                 "Extension modules: numpy.core._multiarray_umath, torch._C, torch._C._fft (total: 42)"]
        f.add(lines, "segfault", key=0, worker=None, kind="fatal", what="Fatal Python error: Segmentation fault")
        return f

    def import_error(self) -> Failure:
        r = self.r
        f = Failure()
        if r.random() < 0.5:
            exc = ["ModuleNotFoundError: No module named 'flash_attn'"]
        else:
            exc = ["ImportError: cannot import name 'is_torch_greater_or_equal' from 'transformers.utils' "
                   f"({SITE}/transformers/utils/__init__.py)"]
        body, key = _tb(r, "import", exc)
        if r.random() < 0.5:
            rank = r.randrange(8)
            f.add(_prefix(body, f"[rank{rank}]: "), "import-error", key=key, worker=str(rank), kind="traceback",
                  what="import error, rank prefix")
        else:
            f.add(body, "import-error", key=key, worker=None, kind="traceback", what="import error, plain")
        return f

    def engine_dead(self) -> Failure:
        r = self.r
        f = Failure()
        exc = ["vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
               "for the root cause."]
        body, key = _tb(r, "client", exc)
        f.extend([f"ERROR {self.c.vllm} [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, "
                  "shutting down client."])
        f.add(body, "vllm-engine-dead", key=key, worker=None, kind="traceback", what="EngineDeadError alone")
        return f

    def unknown_value(self) -> Failure:
        r = self.r
        f = Failure()
        exc = [f"ValueError: chat template rendered an empty prompt for sample {r.randint(0, 10**6)} "
               "(roles: user,user,assistant); refusing to continue"]
        body, key = _tb(r, "client", exc)
        f.add(body, "unknown", key=key, worker=None, kind="traceback", what="unknown ValueError")
        return f

    def unknown_key(self) -> Failure:
        r = self.r
        f = Failure()
        rank = r.randrange(8)
        body, key = _tb(r, "data", ["KeyError: Caught KeyError in DataLoader worker process 3.",
                                    "Original Traceback (most recent call last):",
                                    f'  File "{SITE}/torch/utils/data/_utils/worker.py", line 351, in _worker_loop',
                                    "    data = fetcher.fetch(index)",
                                    "KeyError: 'response_tokens'"])
        f.add(_prefix(body, f"[rank{rank}]: "), "unknown", key=key, worker=str(rank), kind="traceback",
              what="unknown KeyError from a DataLoader worker")
        return f

    def device_assert(self) -> Failure:
        r = self.r
        f = Failure()
        for t in range(r.randint(2, 6)):
            f.extend([f"/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1369: indexSelectLargeIndex: block: "
                      f"[{r.randint(0, 300)},0,0], thread: [{t * 32},0,0] Assertion `srcIndex < srcSelectDimSize` "
                      "failed."])
        body, key = _tb(r, "train", ["RuntimeError: CUDA error: device-side assert triggered",
                                     "CUDA kernel errors might be asynchronously reported at some other API call, so "
                                     "the stacktrace below might be incorrect."])
        f.add(body, "cuda-device-side-assert", key=key, worker=None, kind="traceback", what="device-side assert")
        return f

    def disk_full(self) -> Failure:
        r = self.r
        f = Failure()
        body, key = _tb(r, "train", [f"OSError: [Errno 28] No space left on device: '/scratch/ckpt/step-{self.noise.step}'"])
        f.add(body, "disk-full", key=key, worker=None, kind="traceback", what="ENOSPC on checkpoint")
        return f

    def port_in_use(self) -> Failure:
        r = self.r
        f = Failure()
        body, key = _tb(r, "dist", ["torch.distributed.DistNetworkError: The server socket has failed to listen on "
                                    "any local network address. port: 29500, useIpv6: false, code: -98, name: "
                                    "EADDRINUSE, message: address already in use"])
        f.add(body, "dist-port-in-use", key=key, worker=None, kind="traceback", what="EADDRINUSE")
        return f

    def shm_bus(self) -> Failure:
        r = self.r
        f = Failure()
        f.extend(["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
                  "memory (shm)."])
        body, key = _tb(r, "data", [f"RuntimeError: DataLoader worker (pid {r.randint(40000, 60000)}) is killed by "
                                    "signal: Bus error. It is possible that dataloader's workers are out of shared "
                                    "memory. Please try to raise your shared memory limit."])
        f.add(body, "shm-exhausted", key=key, worker=None, kind="traceback", what="DataLoader bus error")
        return f

    def dataloader_killed(self) -> Failure:
        r = self.r
        f = Failure()
        pid = r.randint(40000, 60000)
        first, key = _tb(r, "data", [f"RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Killed. "])
        second, _ = _tb(r, "data", [f"RuntimeError: DataLoader worker (pid(s) {pid}) exited unexpectedly"])
        body = [*first, "", "The above exception was the direct cause of the following exception:", "", *second]
        f.add(body, "host-oom-killed", key=key, worker=None, kind="traceback",
              what="DataLoader worker killed (chained traceback)")
        return f

    def kv_cache(self) -> Failure:
        r = self.r
        f = Failure()
        p = self.core_prefix(src="core.py:588")
        body, key = _tb(r, "engine", [f"ValueError: The model's max seq len (131072) is larger than the maximum "
                                      f"number of tokens that can be stored in KV cache ({r.randint(20000, 90000)}). "
                                      "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                                      "initializing the engine."])
        f.extend([p + "EngineCore failed to start."])
        f.add(_prefix(body, p), "vllm-kv-cache-insufficient", key=key, worker=str(self.noise.core_pid),
              kind="traceback", what="KV cache too small for max_model_len")
        return f

    def orphan_mem(self) -> Failure:
        r = self.r
        f = Failure()
        p = self.core_prefix(src="core.py:588")
        body, key = _tb(r, "engine", [f"ValueError: Free memory on device ({r.uniform(3, 20):.2f}/79.15 GiB) on "
                                      "startup is less than desired GPU memory utilization (0.9, 71.24 GiB). Decrease "
                                      "GPU memory utilization or reduce GPU memory used by other processes."])
        f.add(_prefix(body, p), "vllm-orphan-gpu-memory", key=key, worker=str(self.noise.core_pid), kind="traceback",
              what="free memory on startup below utilization")
        return f

    def env_mismatch(self) -> Failure:
        r = self.r
        f = Failure()
        body, key = _tb(r, "train", ["RuntimeError: CUDA error: no kernel image is available for execution on the "
                                     "device",
                                     "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."])
        f.add(body, "cuda-env-mismatch", key=key, worker=None, kind="traceback", what="no kernel image")
        return f

    def ecc(self) -> Failure:
        r = self.r
        f = Failure()
        rank = r.randrange(8)
        body, key = _tb(r, "train", ["RuntimeError: CUDA error: uncorrectable ECC error encountered"])
        f.add(_prefix(body, f"[rank{rank}]: "), "gpu-hardware-fault", key=key, worker=str(rank), kind="traceback",
              what="uncorrectable ECC")
        return f

    def nan_loss(self) -> Failure:
        r = self.r
        f = Failure()
        body, key = _tb(r, "train", [f"FloatingPointError: Loss is nan at step {self.noise.step}, stopping training"])
        f.add(body, "nan-loss", key=key, worker=None, kind="traceback", what="loss is nan")
        return f

    def ray_actor(self) -> Failure:
        r = self.r
        f = Failure()
        pid = r.randint(40000, 60000)
        body, key = _tb(r, "client", ["ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing "
                                      "this task.",
                                      "\tclass_name: RayWorkerWrapper",
                                      f"\tactor_id: {r.getrandbits(96):024x}",
                                      f"\tpid: {pid}",
                                      "The actor is dead because its worker process has died. Worker exit type: "
                                      "SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection "
                                      "error code 2. End of file."])
        f.add(body, "ray-actor-died", key=key, worker=None, kind="traceback", what="Ray actor died")
        return f

    def hub_entry(self) -> Failure:
        r = self.r
        f = Failure()
        body, key = _tb(r, "client", ["huggingface_hub.errors.LocalEntryNotFoundError: An error happened while "
                                      "trying to locate the file on the Hub and we cannot find the requested files "
                                      "in the local cache. Please check your connection and try again or make sure "
                                      "your Internet connection is on."])
        f.add(body, "hf-hub-unreachable", key=key, worker=None, kind="traceback", what="LocalEntryNotFoundError")
        return f

    def sigterm(self) -> Failure:
        r = self.r
        c = self.c
        f = Failure()
        pid = r.randint(40000, 60000)
        f.extend([f"W{c.glog}.{c.us:06d} {pid} torch/distributed/elastic/agent/server/api.py:704] Received "
                  "Signals.SIGTERM death signal, shutting down workers"])
        body, key = _tb(r, "dist", [f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {pid} "
                                    "got signal: 15"])
        f.add(body, "process-killed-by-signal", key=key, worker=None, kind="traceback", what="SIGTERM from outside")
        return f


def generate(path: Path, size_mb: float, seed: int, every_mb: float, manifest_path: Path | None = None) -> dict:
    r = random.Random(seed)
    clock = Clock()
    clock.tick(0.0)
    noise = Noise(r, clock)
    inj = Injector(r, clock, noise)
    target = int(size_mb * MB)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries: list[dict] = []
    written = 0
    lines_done = 0
    next_at = int(r.uniform(0.25, 0.75) * every_mb * MB)
    group = 0
    t0 = time.perf_counter()
    with open(path, "wb") as out:
        while written < target:
            chunk: list[str] = [] if written else noise.startup()
            est = 0
            limit = min(CHUNK, target - written)
            while est < limit:
                if written + est >= next_at:
                    f = inj.next()
                    base = lines_done + len(chunk)
                    group += 1
                    for e in f.entries:
                        entries.append({"line": base + e["first"] + 1, "key_line": base + e["key"] + 1,
                                        "end_line": base + e["end"] + 1, "family": e["family"], "worker": e["worker"],
                                        "kind": e["kind"], "needs_ledger": e["needs_ledger"], "what": e["what"],
                                        "group": group, "group_line": base + 1, "group_end_line": base + len(f.lines)})
                    # the failure, a few lines of whatever else was running, then the job restarts
                    burst = [*f.lines, *(noise.line() for _ in range(r.randint(2, 30))), *noise.startup()]
                    chunk.extend(burst)
                    est += sum(len(x) + 1 for x in burst)
                    next_at = written + est + int(r.uniform(0.5, 1.5) * every_mb * MB)
                    continue
                ln = noise.line()
                chunk.append(ln)
                # tqdm bars carry 3-byte block characters; count them in bytes
                est += (len(ln.encode()) if "|" in ln and "\r" in ln else len(ln)) + 1
            data = ("\n".join(chunk) + "\n").encode("utf-8")
            out.write(data)
            written += len(data)
            lines_done += len(chunk)
    secs = time.perf_counter() - t0
    entries.sort(key=lambda e: e["line"])
    for i, e in enumerate(entries):
        e["id"] = i
    manifest = {
        "log": path.name,
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "size_mb_requested": size_mb,
        "bytes": written,
        "lines": lines_done,
        "every_mb": every_mb,
        "generate_seconds": round(secs, 2),
        "injected": entries,
    }
    mp = manifest_path or manifest_for(path)
    mp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def manifest_for(path: Path) -> Path:
    return path.with_name(path.name + ".manifest.json")


def default_path(size_mb: float, seed: int, every_mb: float = 4.0) -> Path:
    tail = "" if every_mb == 4.0 else f"-e{every_mb:g}"
    return HERE / "out" / f"scan-{size_mb:g}mb-s{seed}{tail}.log"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", type=Path, help="log path (default: bench/out/scan-<size>mb-s<seed>.log)")
    ap.add_argument("--size-mb", type=float, default=300.0, help="size in MB (10^6 bytes); default 300")
    ap.add_argument("--seed", type=int, default=1, help="random seed; default 1")
    ap.add_argument("--every-mb", type=float, default=4.0, help="mean spacing of injected failures in MB; default 4")
    ap.add_argument("--manifest", type=Path, help="manifest path (default: <log>.manifest.json)")
    a = ap.parse_args(argv)
    path = a.out or default_path(a.size_mb, a.seed, a.every_mb)
    m = generate(path, a.size_mb, a.seed, a.every_mb, a.manifest)
    print(describe(path, m, a.manifest or manifest_for(path)), file=sys.stderr)
    return 0


def describe(path: Path, m: dict, manifest_path: Path) -> str:
    """One line about a generated log: size, lines, injected failures and families, time, manifest."""
    fams = sorted({e["family"] for e in m["injected"]})
    return (f"{path}: {m['bytes'] / MB:.1f} MB, {m['lines']:,} lines, {len(m['injected'])} injected failures "
            f"({len(fams)} families) in {m['generate_seconds']:.1f}s; manifest {manifest_path}")


if __name__ == "__main__":
    sys.exit(main())
