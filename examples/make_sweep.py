#!/usr/bin/env python3
"""Write the bundled example runs: a 42-shard vLLM generation sweep on 8 H100s, and the two runs that probe it.

The story: shards 0..41 are dealt round-robin to gpu0..gpu7 (one vLLM V1 engine
per GPU, prefix caching on, long prompts over a shared system prefix). On seven
of the eight GPUs the EngineCore dies of an illegal memory access inside the
engine step (the Hopper prefix-cache fault, `vllm-h100-prefix-cache-ima`); every
shard still queued on that GPU then fails at once with `EngineDeadError`
(`vllm-engine-dead`, a cascade victim). gpu5 runs clean.

    7 root faults + 28 cascade victims = 35 of 42 shards lost; 7 shards ok.

The probes the ledger names for that family, as runs:

* `sweep-0412-a100`: the same 42 shards, code, model and engine arguments on
  an A100 node; every shard passes.
* `sweep-0412-short`: a short-prompt probe on the same H100 node (same model,
  engine arguments and shared prefix, prompts cut to a few hundred tokens),
  16 shards, two per GPU; every shard passes.

`sigclass compare examples/sweep-0412 examples/sweep-0412-a100
examples/sweep-0412-short` names the GPU model and the prompt length as the
facts that separate failing shards from clean ones, and both probes support
the family.

One log per worker (`gpu0.log` ... `gpu7.log`) with `[shard N] starting` /
`done` / `failed` markers inside (layout 2 of the runs contract). Deterministic:
the same seed writes the same bytes.

    python examples/make_sweep.py            # writes examples/sweep-0412/ and both probe runs
    python examples/make_sweep.py OUT --seed 412 --story sweep|a100|short
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

WORKERS = 8
SHARDS = 42
CLEAN = 5  # gpu5 never crashes
# the shard (0-based position in the worker's queue) at which each worker's engine dies
CRASH_AT = {0: 1, 1: 1, 2: 0, 3: 0, 4: 0, 6: 0, 7: 0}
START = datetime(2026, 4, 12, 9, 2, 11, 418000)
MODEL = "/models/Llama-3.1-8B-Instruct"
VLLM = "0.10.2"
SITE = "/usr/local/lib/python3.11/dist-packages"


@dataclass(frozen=True)
class Story:
    """One run of the story: where it ran, which shards, how long the prompts, which engines die."""

    name: str
    host: str = "h100-node-03"
    device: str = "NVIDIA H100 80GB HBM3 (sm_90, 79.19 GiB total)"
    shards: int = SHARDS
    crash_at: dict[int, int] = field(default_factory=lambda: dict(CRASH_AT))
    p50: tuple[int, int] = (9000, 16000)
    p99: tuple[int, int] = (30000, 31800)
    start: datetime = START
    kv_cache: str = "Available KV cache memory: 54.62 GiB"
    kv_tokens: str = "GPU KV cache size: 447,456 tokens"
    minutes: tuple[float, float] = (7, 22)
    prompts: tuple[int, ...] = (256, 512, 1024, 2048)
    enforce_eager: bool = False
    salt: int = 0  # another run of the story draws other numbers


STORIES = {
    "sweep": Story("sweep-0412"),
    "a100": Story("sweep-0412-a100", host="a100-node-11", device="NVIDIA A100-SXM4-80GB (sm_80, 79.25 GiB total)",
                  crash_at={}, start=datetime(2026, 4, 12, 14, 31, 5, 207000),
                  kv_cache="Available KV cache memory: 54.71 GiB", kv_tokens="GPU KV cache size: 448,176 tokens",
                  minutes=(9, 28), salt=1),
    "short": Story("sweep-0412-short", shards=16, crash_at={}, p50=(180, 320), p99=(380, 620),
                   start=datetime(2026, 4, 12, 16, 2, 47, 911000), minutes=(1, 4), prompts=(256, 512), salt=2),
}


def py_ts(t: datetime) -> str:
    """Python logging timestamp: 2026-04-12 09:14:05,827."""
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def vl_ts(t: datetime) -> str:
    """vLLM timestamp: 04-12 09:14:05 (no year)."""
    return t.strftime("%m-%d %H:%M:%S")


class Log:
    def __init__(self, rng: random.Random, t: datetime) -> None:
        self.rng = rng
        self.t = t
        self.lines: list[str] = []

    def tick(self, lo: float, hi: float) -> datetime:
        self.t += timedelta(seconds=self.rng.uniform(lo, hi))
        return self.t

    def gen(self, level: str, msg: str, lo: float = 0.05, hi: float = 0.6) -> None:
        self.lines.append(f"{py_ts(self.tick(lo, hi))} {level} [gen] {msg}")

    def vllm(self, level: str, where: str, msg: str, engine_pid: int | None = None, lo: float = 0.2, hi: float = 2.0) -> None:
        prefix = f"(EngineCore_DP0 pid={engine_pid}) " if engine_pid else ""
        self.lines.append(f"{prefix}{level} {vl_ts(self.tick(lo, hi))} [{where}] {msg}")

    def raw(self, line: str) -> None:
        self.lines.append(line)


def engine_init(log: Log, worker: int, pid: int, epid: int, story: Story = STORIES["sweep"]) -> None:
    rng = log.rng
    log.gen("INFO", f"host={story.host} worker=gpu{worker} pid={pid} python=3.11 torch=2.8.0+cu128 vllm={VLLM}", 0, 0.1)
    log.gen("INFO", f"device cuda:0 -> {story.device}, CUDA_VISIBLE_DEVICES={worker}")
    log.gen("INFO", f"model={MODEL} max_model_len=32768 prefix_caching=on enforce_eager={story.enforce_eager} tp=1")
    log.vllm("INFO", "__init__.py:251", "Automatically detected platform cuda.")
    log.vllm("INFO", "utils.py:240", "non-default args: {'model': '%s', 'max_model_len': 32768, "
             "'gpu_memory_utilization': 0.9, 'enable_prefix_caching': True, 'disable_log_stats': False%s}"
             % (MODEL, ", 'enforce_eager': True" if story.enforce_eager else ""), lo=2, hi=4)
    log.vllm("INFO", "__init__.py:715", "Resolved architecture: LlamaForCausalLM")
    log.vllm("INFO", "__init__.py:1759", "Using max model len 32768")
    log.vllm("INFO", "scheduler.py:233", "Chunked prefill is enabled with max_num_batched_tokens=8192.")
    log.vllm("INFO", "core.py:677", "Waiting for init message from front-end.", epid)
    log.vllm("INFO", "core.py:55", f"Initializing a V1 LLM engine (v{VLLM}) with config: model='{MODEL}', "
             f"tokenizer='{MODEL}', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, "
             f"enforce_eager={story.enforce_eager}, kv_cache_dtype=auto, device_config=cuda, seed=0, "
             "enable_prefix_caching=True, chunked_prefill_enabled=True", epid)
    log.vllm("INFO", "parallel_state.py:1217", "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0", epid)
    log.vllm("INFO", "gpu_model_runner.py:1753", f"Starting to load model {MODEL}...", epid)
    log.vllm("INFO", "cuda.py:242", "Using Flash Attention backend on V1 engine.", epid)
    log.vllm("INFO", "default_loader.py:297", f"Loading weights took {rng.uniform(3, 6):.2f} seconds", epid, 3, 6)
    log.vllm("INFO", "gpu_model_runner.py:2030", f"Model loading took 14.9889 GiB and {rng.uniform(4, 7):.6f} seconds", epid)
    if not story.enforce_eager:  # eager mode skips torch.compile and the CUDA graph capture
        log.vllm("INFO", "backends.py:555", f"Dynamo bytecode transform time: {rng.uniform(4, 8):.2f} s", epid, 4, 8)
        log.vllm("INFO", "monitor.py:39", f"torch.compile takes {rng.uniform(9, 14):.2f} s in total", epid, 5, 9)
    log.vllm("INFO", "gpu_worker.py:281", story.kv_cache, epid)
    log.vllm("INFO", "kv_cache_utils.py:821", story.kv_tokens, epid)
    if not story.enforce_eager:
        log.vllm("INFO", "gpu_model_runner.py:2244", f"Graph capturing finished in {rng.randint(5, 9)} secs, took 0.49 GiB", epid, 5, 9)
    log.vllm("INFO", "core.py:182", f"init engine (profile, create kv cache, warmup model) took {rng.uniform(30, 45):.2f} seconds", epid)
    log.vllm("INFO", "llm.py:301", "Supported_tasks: ['generate']")


def shard_start(log: Log, shard: int, prompts: int, story: Story = STORIES["sweep"]) -> None:
    rng = log.rng
    log.gen("INFO", f"[shard {shard}] starting: {prompts} prompts", 0.3, 2.5)
    log.gen("INFO", f"[shard {shard}] loading {prompts} prompts from /data/prompts/{story.name}/part-{shard:05d}.jsonl")
    p50 = rng.randint(*story.p50)
    p99 = rng.randint(*story.p99)
    log.gen("INFO", f"prompt tokens p50={p50:,} p99={p99:,} shared system prefix={rng.choice((4096, 6144, 8192)):,} tokens", 0, 0.01)


def engine_stats(log: Log, minutes: float) -> None:
    rng = log.rng
    steps = max(1, int(minutes // 3))
    for _ in range(steps):
        log.vllm("INFO", "loggers.py:201",
                 f"Engine 000: Avg prompt throughput: {rng.uniform(20000, 52000):.1f} tokens/s, "
                 f"Avg generation throughput: {rng.uniform(900, 3800):.1f} tokens/s, Running: {rng.randint(40, 230)} reqs, "
                 f"Waiting: {rng.randint(20, 400)} reqs, GPU KV cache usage: {rng.uniform(40, 92):.1f}%, "
                 f"Prefix cache hit rate: {rng.uniform(55, 95):.1f}%", lo=minutes * 60 / (steps + 1) * 0.9, hi=minutes * 60 / (steps + 1) * 1.1)


def shard_ok(log: Log, shard: int, prompts: int, story: Story = STORIES["sweep"]) -> None:
    t0 = log.t
    engine_stats(log, log.rng.uniform(*story.minutes))
    log.gen("INFO", f"wrote {prompts} records to /scratch/out/{story.name}/gen-{shard:05d}.jsonl", 20, 60)
    log.gen("INFO", f"[shard {shard}] done in {(log.t - t0).total_seconds() + 0.3:.1f}s ({prompts} records)")


IMA_STACK = [
    ("vllm/v1/engine/core.py", 691, "run_engine_core", "engine_core.run_busy_loop()"),
    ("vllm/v1/engine/core.py", 718, "run_busy_loop", "self._process_engine_step()"),
    ("vllm/v1/engine/core.py", 754, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
    ("vllm/v1/engine/core.py", 290, "step", "model_output = self.execute_model_with_error_logging("),
    ("vllm/v1/engine/core.py", 255, "execute_model_with_error_logging", "raise err"),
    ("vllm/v1/engine/core.py", 241, "execute_model_with_error_logging", "return model_fn(scheduler_output)"),
    ("vllm/v1/executor/abstract.py", 100, "execute_model", 'output = self.collective_rpc("execute_model",'),
    ("vllm/executor/uniproc_executor.py", 86, "collective_rpc", "answer = run_method(self.driver_worker, method, args, kwargs)"),
    ("vllm/utils/__init__.py", 3007, "run_method", "return func(*args, **kwargs)"),
    ("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    ("vllm/v1/worker/gpu_worker.py", 440, "execute_model", "output = self.model_runner.execute_model(scheduler_output,"),
    ("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    ("vllm/v1/worker/gpu_model_runner.py", 1930, "execute_model", "valid_sampled_token_ids = sampled_token_ids.tolist()"),
]


def shard_crash(log: Log, shard: int, prompts: int, epid: int) -> None:
    rng = log.rng
    engine_stats(log, rng.uniform(5, 34))
    log.t += timedelta(seconds=rng.uniform(10, 90))
    ts = vl_ts(log.t)
    pre = f"(EngineCore_DP0 pid={epid}) ERROR {ts}"
    req = rng.randint(10000, 99999)
    blocks = rng.randint(480, 1900)
    log.raw(f"{pre} [dump_input.py:72] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs="
            f"[NewRequestData(req_id={req},prompt_token_ids_len={rng.randint(18000, 31000)},mm_features=[],"
            f"num_computed_tokens={rng.randint(8000, 17000)},lora_request=None)], total_num_scheduled_tokens=8192, "
            f"num_common_prefix_blocks=[{blocks}], finished_req_ids=[], free_encoder_mm_hashes=[])")
    log.raw(f"{pre} [dump_input.py:77] Dumping scheduler stats: SchedulerStats(num_running_reqs={rng.randint(90, 230)}, "
            f"num_waiting_reqs={rng.randint(50, 300)}, kv_cache_usage={rng.uniform(0.8, 0.97):.4f}, "
            f"prefix_cache_stats=PrefixCacheStats(reset=False, requests={rng.randint(200, 900)}))")
    core = f"{pre} [core.py:583]"
    log.raw(f"{core} EngineCore encountered a fatal error.")
    log.raw(f"{core} Traceback (most recent call last):")
    for path, line, fn, code in IMA_STACK:
        log.raw(f'{core}   File "{SITE}/{path}", line {line}, in {fn}')
        log.raw(f"{core}     {code}")
    log.raw(f"{core} torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    log.raw(f"{core} Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.")
    log.raw(f"{core} CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.")
    log.raw(f"{core} For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
    log.raw(f"{core} Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    log.raw(f"{core} ")
    log.vllm("ERROR", "core_client.py:574", "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.", lo=2, hi=4)
    engine_dead(log, shard, where="step")


CLIENT_STEP = [
    ("/srv/sweep/gen_worker.py", 118, "process_shard", "outputs = llm.generate(prompts, sampling_params, use_tqdm=True)"),
    (f"{SITE}/vllm/entrypoints/llm.py", 388, "generate", "outputs = self._run_engine(use_tqdm=use_tqdm)"),
    (f"{SITE}/vllm/entrypoints/llm.py", 1521, "_run_engine", "step_outputs = self.llm_engine.step()"),
    (f"{SITE}/vllm/v1/engine/llm_engine.py", 252, "step", "outputs = self.engine_core.get_output()"),
    (f"{SITE}/vllm/v1/engine/core_client.py", 643, "get_output", "raise self._format_exception(outputs) from None"),
]
CLIENT_ADD = [
    ("/srv/sweep/gen_worker.py", 118, "process_shard", "outputs = llm.generate(prompts, sampling_params, use_tqdm=True)"),
    (f"{SITE}/vllm/entrypoints/llm.py", 376, "generate", "self._validate_and_add_requests("),
    (f"{SITE}/vllm/entrypoints/llm.py", 1499, "_validate_and_add_requests", "self._add_request("),
    (f"{SITE}/vllm/entrypoints/llm.py", 1528, "_add_request", "self.llm_engine.add_request("),
    (f"{SITE}/vllm/v1/engine/llm_engine.py", 224, "add_request", "self.engine_core.add_request(request)"),
    (f"{SITE}/vllm/v1/engine/core_client.py", 682, "add_request", "self._send_input(EngineCoreRequestType.ADD, request)"),
    (f"{SITE}/vllm/v1/engine/core_client.py", 525, "ensure_alive", "raise EngineDeadError()"),
]


def engine_dead(log: Log, shard: int, where: str) -> None:
    log.gen("ERROR", f"[shard {shard}] failed: EngineDeadError", 0.1, 0.5)
    log.raw("Traceback (most recent call last):")
    for path, line, fn, code in CLIENT_STEP if where == "step" else CLIENT_ADD:
        log.raw(f'  File "{path}", line {line}, in {fn}')
        log.raw(f"    {code}")
    log.raw("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.")


def shard_victim(log: Log, shard: int, prompts: int) -> None:
    shard_start(log, shard, prompts)
    engine_dead(log, shard, where="add")


def worker_log(worker: int, shards: list[int], rng: random.Random, story: Story = STORIES["sweep"]) -> str:
    log = Log(rng, story.start + timedelta(seconds=rng.uniform(0, 20)))
    pid = rng.randint(20000, 90000)
    epid = pid + rng.randint(30, 400)
    engine_init(log, worker, pid, epid, story)
    crash = story.crash_at.get(worker)
    for pos, shard in enumerate(shards):
        prompts = rng.choice(story.prompts)
        if crash is None or pos < crash:
            shard_start(log, shard, prompts, story)
            shard_ok(log, shard, prompts, story)
        elif pos == crash:
            shard_start(log, shard, prompts)
            shard_crash(log, shard, prompts, epid)
        else:
            shard_victim(log, shard, prompts)
    if crash is None:
        log.gen("INFO", f"all {len(shards)} shards done on gpu{worker}", 0.2, 1)
    else:
        log.gen("ERROR", f"gpu{worker}: {len(shards) - crash} of {len(shards)} shards failed", 0.2, 1)
    return "\n".join(log.lines) + "\n"


def write_run(out: Path, story: Story, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for worker in range(WORKERS):
        rng = random.Random(seed * 100 + worker + 1000 * story.salt)
        shards = [s for s in range(story.shards) if s % WORKERS == worker]
        (out / f"gpu{worker}.log").write_text(worker_log(worker, shards, rng, story), encoding="utf-8")
    print(f"wrote {WORKERS} worker logs ({story.shards} shards) to {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", type=Path, help="the run directory to write (default: every story into examples/)")
    ap.add_argument("--seed", type=int, default=412)
    ap.add_argument("--story", choices=sorted(STORIES), default="sweep", help="which run of the story to write to OUT")
    args = ap.parse_args()
    if args.out is not None:
        write_run(args.out, STORIES[args.story], args.seed)
        return
    here = Path(__file__).resolve().parent
    for story in STORIES.values():
        write_run(here / story.name, story, args.seed)


if __name__ == "__main__":
    main()
