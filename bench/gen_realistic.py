"""Generate a realistic ML/GPU run log of a given size, with known failures injected, and its manifest.

The log is what a long job that serves a model with vLLM and trains with
torchrun prints, line for line in the formats those programs use:

- the serving engine's per-request lines, `Received request ...: prompt: '...',
  params: SamplingParams(...), prompt_token_ids: [...]` (the RequestLogger),
  `Added request ...`, `Finished request ...`, and uvicorn's access lines
  (`INFO:     127.0.0.1:54321 - "POST /v1/completions HTTP/1.1" 200 OK`);
- each engine's metrics line every 10 s (`Engine 000: Avg prompt throughput:
  ... Prefix cache hit rate: ...%`), several engines (data parallel);
- at every (re)start: the launcher's versions, an `nvidia-smi -L` GPU listing,
  DeepSpeed's accelerator line, an NCCL INFO storm from 8 ranks
  (`host:pid:tid [r] NCCL INFO ...`), transformers' `loading file ... from cache
  at ...` lines, a tqdm checkpoint-loading bar redrawn with `\\r`, vLLM's
  non-default args and its `Initializing a V1 LLM engine (v0.10.1.1) with config:
  ...` dump (enable_prefix_caching, enforce_eager, ...);
- shard markers (`[shard 17] starting` / `done`) every 30-90 s;
- trainer lines: HF Trainer metric dicts and Megatron `iteration N/M | ...` lines,
  under torchrun's `[rank3]:` prefix; vLLM worker lines under
  `(VllmWorker rank=2 pid=1234)` and `(EngineCore_DP0 pid=...)`;
- FutureWarning / UserWarning pairs (the warning and its `warnings.warn(` line),
  tqdm bars, Python logging, and clean lines with tempting words.

Failures are tracebacks as the programs print them (bench/gen_log.py's set:
CUDA OOM, illegal memory access, NCCL errors, watchdog timeouts, segfaults, ...,
two that no family explains) plus a torchrun rank failure followed by torch
elastic's `ChildFailedError` summary and a tensor-parallel worker's failure under
`(VllmWorker rank=N pid=P)`. An illegal memory access on a restart that printed an
H100 with prefix caching on is expected as `vllm-h100-prefix-cache-ima`.

Cases (`--case`):
  realistic  a failure about every 4 MB (`--every-mb`), the job restarting after each
  worst      the same, but 1 line in 5 matches a fact, marker or counted pattern of the
             shipped ledger (metrics lines, config values, GPU names, versions, shard
             markers, tokenizer loads, a shared-memory-broadcast wait)
  storm      a failure every few lines (no restart in between)

The manifest (`<log>.manifest.json`, the same layout as bench/gen_log.py's) lists
every injected failure: first line, key line, last line, worker, expected family.
Deterministic: the same case, size and seed give the same bytes.

    python bench/gen_realistic.py --size-mb 300 --case realistic
    python bench/gen_realistic.py --size-mb 20 --case storm --out storm.log
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_log  # noqa: E402

GENERATOR_VERSION = 2
MB = gen_log.MB
CHUNK = gen_log.CHUNK
SITE = gen_log.SITE
CASES = ("realistic", "worst", "storm")
EVERY_MB = {"realistic": 4.0, "worst": 4.0, "storm": 0.004}

GPUS = [("NVIDIA A100-SXM4-80GB", 7), ("NVIDIA H100 80GB HBM3", 3)]
ENGINES = 4  # data-parallel engines, each with its metrics line
WORDS = ("the of and to in a is that for it as with was on be by this are or from at an which have not but "
         "summarize translate explain write list code function returns value model data table user answer "
         "question step first second result error rate loss memory kernel batch token prompt cache").split()
HF_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt")


def _uuid(r: random.Random) -> str:
    h = f"{r.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class RealNoise(gen_log.Noise):
    """Clean lines at realistic rates; multi-line items are queued and handed out one line at a time."""

    def __init__(self, r: random.Random, clock: gen_log.Clock, case: str) -> None:
        super().__init__(r, clock)
        self.case = case
        self.pending: list[str] = []
        self.gpu = GPUS[0][0]
        self.iteration = 0
        self.worker_pids = [r.randint(40000, 60000) for _ in range(4)]
        self.next_engine_stats = [10.0 + 2.5 * i for i in range(ENGINES)]
        kinds = [
            (self.received, 19), (self.added, 19), (self.access, 19), (self.finished, 7),
            (self.vllm_core, 7), (self.vllm_worker, 2), (self.hf_dict, 3), (self.megatron, 2), (self.rank_step, 3),
            (self.tqdm_bar, 2), (self.pylog, 6), (self.tempting, 3), (self.warning_pair, 1), (self.deepspeed, 1),
            (self.glog_warn, 1), (self.decoy_prompt, 0.003),
        ]
        if case == "worst":  # a quarter of the draws (1 line in 5 overall) match a ledger fact, marker or counted pattern
            base = sum(w for _, w in kinds)
            kinds.append((self.ledger_hit, base / 3))
        self.set_kinds(kinds)

    # ---------------------------------------------------------------- driver
    def line(self) -> str:
        if self.pending:
            return self.pending.pop(0)
        self.c.tick(self.r.expovariate(gen_log.LINES_PER_SECOND))
        for e in range(ENGINES):
            if self.c.t >= self.next_engine_stats[e]:
                self.next_engine_stats[e] += 10.0
                return self.engine_stats(e)
        if self.c.t >= self.next_shard:
            return self.shard_marker()
        return self.draw()

    def queue(self, lines: list[str]) -> str:
        self.pending.extend(lines[1:])
        return lines[0]

    # ---------------------------------------------------------------- serving engine
    def _prompt(self, n_words: int) -> str:
        r = self.r
        words = [r.choice(WORDS) for _ in range(n_words)]
        for _ in range(n_words // 40):
            words[r.randrange(n_words)] += "\\n"
        return " ".join(words)

    def _params(self) -> str:
        r = self.r
        return (f"SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
                f"temperature={r.choice((0.0, 0.6, 0.7, 1.0))}, top_p={r.choice((1.0, 0.95, 0.9))}, top_k=0, "
                f"min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, "
                f"ignore_eos=False, max_tokens={r.choice((256, 512, 1024, 2048))}, min_tokens=0, logprobs=None, "
                "prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
                "truncate_prompt_tokens=None, guided_decoding=None, extra_args=None)")

    def _req_id(self) -> str:
        return f"cmpl-{self.r.getrandbits(128):032x}-0"

    def received(self, prompt: str | None = None) -> str:
        r, c = self.r, self.c
        ids = ", ".join(str(r.randint(10, 151000)) for _ in range(r.randint(16, 96)))
        prompt = prompt if prompt is not None else self._prompt(r.randint(12, 90))
        return (f"INFO {c.vllm} [logger.py:43] Received request {self._req_id()}: prompt: '{prompt}', "
                f"params: {self._params()}, prompt_token_ids: [{ids}], prompt_embeds shape: None, lora_request: None.")

    def added(self) -> str:
        return f"INFO {self.c.vllm} [async_llm.py:{self.r.choice((273, 300, 325))}] Added request {self._req_id()}."

    def finished(self) -> str:
        return f"INFO {self.c.vllm} [async_llm_engine.py:{self.r.choice((176, 180))}] Finished request {self._req_id()}."

    def access(self) -> str:
        r = self.r
        path = r.choice(("/v1/completions", "/v1/chat/completions", "/v1/completions", "/health", "/metrics"))
        verb = "GET" if path in ("/health", "/metrics") else "POST"
        return f'INFO:     127.0.0.1:{r.randint(30000, 65000)} - "{verb} {path} HTTP/1.1" 200 OK'

    def engine_stats(self, e: int) -> str:
        r, c = self.r, self.c
        return (f"INFO {c.vllm} [loggers.py:123] Engine {e:03d}: Avg prompt throughput: {r.uniform(800, 9000):.1f} tokens/s, "
                f"Avg generation throughput: {r.uniform(300, 2500):.1f} tokens/s, Running: {r.randint(8, 256)} reqs, "
                f"Waiting: {r.randint(0, 600)} reqs, GPU KV cache usage: {r.uniform(10, 95):.1f}%, "
                f"Prefix cache hit rate: {r.uniform(0, 80):.1f}%")

    def vllm_worker(self) -> str:
        r, c = self.r, self.c
        rank = r.randrange(4)
        p = f"(VllmWorker rank={rank} pid={self.worker_pids[rank]}) "
        x = r.random()
        if x < 0.4:
            return f"{p}INFO {c.vllm} [custom_all_reduce.py:196] Registering {r.randint(2000, 9000)} cuda graph addresses"
        if x < 0.7:
            return f"{p}INFO {c.vllm} [gpu_model_runner.py:2090] Graph capturing finished in {r.randint(5, 40)} secs, took {r.uniform(0.1, 2):.2f} GiB"
        return f"{p}INFO {c.vllm} [pynccl.py:70] vLLM is using nccl==2.26.2"

    # ---------------------------------------------------------------- trainer
    def hf_dict(self) -> str:
        return f"[rank{self.r.randrange(8)}]:" + self.hf_metrics()

    def megatron(self) -> str:
        r, c = self.r, self.c
        self.iteration += 1
        return (f" [{c.iso}] iteration {self.iteration:8d}/{500000:8d} | consumed samples: {self.iteration * 64:12d} | "
                f"elapsed time per iteration (ms): {r.uniform(800, 2000):.1f} | throughput per GPU (TFLOP/s/GPU): "
                f"{r.uniform(300, 450):.1f} | learning rate: {r.uniform(1, 3) * 1e-5:.6E} | global batch size: {64:5d} | "
                f"lm loss: {r.uniform(1.5, 3):.6E} | loss scale: 1.0 | grad norm: {r.uniform(0.1, 2):.3f} | "
                f"number of skipped iterations: {0:3d} | number of nan iterations: {0:3d} |")

    def warning_pair(self) -> str:
        r = self.r
        if r.random() < 0.5:
            return self.queue([
                f"{SITE}/transformers/tokenization_utils_base.py:1601: FutureWarning: `clean_up_tokenization_spaces` "
                "was not set. It will be set to `True` by default. This behavior will be depracted in transformers "
                "v4.45, and will be then set to `False` by default. For more details check this issue: "
                "https://github.com/huggingface/transformers/issues/31884",
                "  warnings.warn("])
        return self.queue([
            f"[rank{r.randrange(8)}]:{SITE}/torch/utils/checkpoint.py:1399: UserWarning: torch.utils.checkpoint: the "
            "use_reentrant parameter should be passed explicitly. In version 2.5 we will raise an exception if "
            "use_reentrant is not passed. use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences "
            "between the two variants.",
            f"[rank{r.randrange(8)}]:  return fn(*args, **kwargs)"])

    def deepspeed(self) -> str:
        r, c = self.r, self.c
        if r.random() < 0.5:
            return f"[{c.iso},{c.ms:03d}] [INFO] [real_accelerator.py:222:get_accelerator] Setting ds_accelerator to cuda (auto detect)"
        return (f"[{c.iso},{c.ms:03d}] [INFO] [logging.py:128:log_dist] [Rank 0] step={self.iteration}, "
                f"skipped=0, lr=[{r.uniform(1, 3) * 1e-5:.6e}], mom=[(0.9, 0.95)]")

    def decoy_prompt(self) -> str:
        """A user's prompt that quotes a traceback: one line, repr-escaped, in a Received request line."""
        return self.received("Why does this fail?\\nTraceback (most recent call last):\\n  File \"train.py\", line 3, "
                             "in <module>\\nRuntimeError: CUDA error: out of memory\\nHow do I fix it?")

    # ---------------------------------------------------------------- worst case: ledger hits
    def ledger_hit(self) -> str:
        r, c = self.r, self.c
        x = r.random()
        if x < 0.35:
            return self.engine_stats(r.randrange(ENGINES))
        if x < 0.55:
            return (f"INFO {c.vllm} [utils.py:326] non-default args: {{'model': '{self.model}', 'max_model_len': "
                    f"{r.choice((8192, 32768))}, 'gpu_memory_utilization': 0.9, 'enable_prefix_caching': True}}")
        if x < 0.7:
            return f"GPU {r.randrange(8)}: {self.gpu} (UUID: GPU-{_uuid(r)})"
        if x < 0.82:
            return f"{c.iso},{c.ms:03d} - launcher - INFO - env: torch=={r.choice(('2.7.1', '2.8.0'))} vllm==0.10.1.1"
        if x < 0.94:
            return self.shard_marker()
        if x < 0.99:
            return (f"{c.iso},{c.ms:03d} - transformers.tokenization_utils_base - INFO - loading file "
                    f"tokenizer_config.json from cache at /root/.cache/huggingface/hub/models--x/snapshots/"
                    f"{r.getrandbits(160):040x}/tokenizer_config.json")
        return (f"(EngineCore_DP0 pid={self.core_pid}) WARNING {c.vllm} [shm_broadcast.py:466] No available shared "
                "memory broadcast block found in 60 second. This typically happens when some processes are hanging "
                "or doing some time-consuming work (e.g. compilation)")

    # ---------------------------------------------------------------- start-up
    def startup(self) -> list[str]:
        r, c = self.r, self.c
        gpus, weights = zip(*GPUS)
        self.gpu = r.choices(gpus, weights)[0]
        self.core_pid = r.randint(40000, 60000)
        self.worker_pids = [r.randint(40000, 60000) for _ in range(4)]
        host = r.choice(gen_log.HOSTS)
        p = f"(EngineCore_DP0 pid={self.core_pid}) "
        out = [f"{c.iso},{c.ms:03d} - launcher - INFO - starting worker on {host}: torch 2.7.1+cu126, vllm 0.10.1.1"]
        out += [f"GPU {i}: {self.gpu} (UUID: GPU-{_uuid(r)})" for i in range(8)]
        out.append(f"[{c.iso},{c.ms:03d}] [INFO] [real_accelerator.py:222:get_accelerator] Setting ds_accelerator to cuda "
                   "(auto detect)")
        out += self.nccl_storm(host)
        snap = f"{r.getrandbits(160):040x}"
        for f in HF_FILES:
            out.append(f"[INFO|tokenization_utils_base.py:2021] {c.iso},{c.ms:03d} >> loading file {f} from cache at "
                       f"/root/.cache/huggingface/hub/models--{self.model.replace('/', '--')}/snapshots/{snap}/{f}")
        out.append(f"INFO {c.vllm} [__init__.py:241] Automatically detected platform cuda.")
        out.append(f"INFO {c.vllm} [api_server.py:1805] vLLM API server version 0.10.1.1")
        out.append(f"INFO {c.vllm} [utils.py:326] non-default args: {{'model': '{self.model}', 'max_model_len': 32768, "
                   f"'gpu_memory_utilization': 0.9, 'data_parallel_size': {ENGINES}, 'enable_prefix_caching': True}}")
        out.append(f"{p}INFO {c.vllm} [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with config: "
                   f"model='{self.model}', speculative_config=None, tokenizer='{self.model}', skip_tokenizer_init=False, "
                   "tokenizer_mode=auto, revision=None, override_neuron_config={}, tokenizer_revision=None, "
                   "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, "
                   "load_format=auto, tensor_parallel_size=4, pipeline_parallel_size=1, disable_custom_all_reduce=False, "
                   "quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
                   f"seed=0, served_model_name={self.model}, enable_prefix_caching=True, chunked_prefill_enabled=True, "
                   "use_async_output_proc=True, pooler_config=None, compilation_config={\"level\":3,"
                   "\"debug_dump_path\":\"\",\"cache_dir\":\"\",\"backend\":\"\",\"custom_ops\":[],"
                   "\"splitting_ops\":[\"vllm.unified_attention\",\"vllm.unified_attention_with_output\"],"
                   "\"use_inductor\":true,\"compile_sizes\":[],\"use_cudagraph\":true,\"cudagraph_num_of_warmups\":1,"
                   "\"cudagraph_capture_sizes\":[512,504,496,488,480,472,464,456,448,440,432,424,416,408,400],"
                   "\"max_capture_size\":512}")
        for rank, pid in enumerate(self.worker_pids):
            out.append(f"(VllmWorker rank={rank} pid={pid}) INFO {c.vllm} [parallel_state.py:1134] rank {rank} in world "
                       f"size 4 is assigned as DP rank 0, PP rank 0, TP rank {rank}, EP rank {rank}")
        out.append("\r".join(f"Loading safetensors checkpoint shards: {100 * i // 4:3d}% Completed | {i}/4 "
                             f"[00:{i * 3:02d}<00:{(4 - i) * 3:02d},  {r.uniform(0.2, 0.4):.2f}s/it]" for i in range(5)))
        out.append(f"{p}INFO {c.vllm} [gpu_worker.py:276] Available KV cache memory: {r.uniform(8, 40):.2f} GiB")
        out.append(f"{p}INFO {c.vllm} [monitor.py:34] torch.compile takes {r.uniform(10, 60):.2f} s in total")
        out.append(f"{p}INFO {c.vllm} [core.py:214] init engine (profile, create kv cache, warmup model) took "
                   f"{r.uniform(30, 90):.2f} seconds")
        out.append(f"INFO {c.vllm} [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000")
        return out

    def nccl_storm(self, host: str) -> list[str]:
        r = self.r
        pids = [r.randint(40000, 60000) for _ in range(8)]
        ip = f"10.0.3.{r.randint(2, 250)}"
        out = []
        for rank, pid in enumerate(pids):
            h0 = f"{host}:{pid}:{pid} [{rank}] NCCL INFO "
            out += [f"{h0}Bootstrap: Using eth0:{ip}<0>", f"{h0}cudaDriverVersion 12080"]
            if rank == 0:
                out.append(f"{h0}NCCL version 2.26.2+cuda12.8")
        for rank, pid in enumerate(pids):
            tid = pid + r.randint(20, 200)
            h = f"{host}:{pid}:{tid} [{rank}] NCCL INFO "
            comm = r.getrandbits(44)
            out += [f"{h}NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
                    f"{h}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0:{ip}<0>",
                    f"{h}Using network IB",
                    f"{h}ncclCommInitRank comm 0x{comm:x} rank {rank} nranks 8 cudaDev {rank} nvmlDev {rank} busId "
                    f"{r.choice(('18000', '2a000', '3a000', '5d000'))} commId 0x{r.getrandbits(64):x} - Init START",
                    f"{h}Trees [0] {(rank + 1) % 8}/-1/-1->{rank}->{(rank - 1) % 8} [1] {(rank + 1) % 8}/-1/-1->{rank}->{(rank - 1) % 8}",
                    f"{h}P2P Chunksize set to 524288"]
            for ch in range(r.randint(8, 16)):
                out.append(f"{h}Channel {ch:02d}/0 : {rank}[{rank}] -> {(rank + 1) % 8}[{(rank + 1) % 8}] via P2P/CUMEM/read")
            out += [f"{h}Connected all rings, use ring PXN 0 GDR 1",
                    f"{h}ncclCommInitRank comm 0x{comm:x} rank {rank} nranks 8 cudaDev {rank} nvmlDev {rank} busId "
                    f"{r.choice(('18000', '2a000', '3a000', '5d000'))} commId 0x{r.getrandbits(64):x} - Init COMPLETE"]
        return out


# ---------------------------------------------------------------------------- failures


class RealInjector(gen_log.Injector):
    """bench/gen_log.py's failures, plus a torchrun failure with the elastic summary and a TP worker failure."""

    def __init__(self, r: random.Random, clock: gen_log.Clock, noise: RealNoise) -> None:
        super().__init__(r, clock, noise)
        self.funcs += [self.elastic_summary, self.vllm_worker_oom]
        self.weights += [5, 4]

    def elastic_summary(self) -> gen_log.Failure:
        """A rank's CUDA OOM traceback, then torchrun's ChildFailedError block naming the root cause."""
        r, c = self.r, self.c
        f = gen_log.Failure()
        rank = r.randrange(8)
        exc = [f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {r.choice((2, 4, 8))}.00 GiB. GPU {rank} "
               f"has a total capacity of 79.15 GiB of which {r.uniform(0.1, 2):.2f} GiB is free."]
        body, key = gen_log._tb(r, "train", exc)
        f.add(gen_log._prefix(body, f"[rank{rank}]: "), "cuda-oom", key=key, worker=str(rank), kind="traceback",
              what="OOM traceback on a rank, then torch elastic's ChildFailedError summary")
        pid = r.randint(40000, 60000)
        when = c.iso.replace(" ", "_")
        host = r.choice(gen_log.HOSTS)
        f.extend([f"W{c.glog}.{c.us:06d} {pid - 10} torch/distributed/elastic/multiprocessing/api.py:900] Sending "
                  f"process {pid + 1} closing signal SIGTERM",
                  f"E{c.glog}.{c.us:06d} {pid - 10} torch/distributed/elastic/multiprocessing/api.py:874] failed "
                  f"(exitcode: 1) local_rank: {rank} (pid: {pid}) of binary: /opt/conda/bin/python3.11",
                  "Traceback (most recent call last):",
                  '  File "/opt/conda/bin/torchrun", line 8, in <module>',
                  "    sys.exit(main())",
                  f'  File "{SITE}/torch/distributed/launcher/api.py", line 270, in launch_agent',
                  "    raise ChildFailedError(",
                  "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                  "=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
                  "Root Cause (first observed failure):", "[0]:", f"  time      : {when}", f"  host      : {host}",
                  f"  rank      : {rank} (local_rank: {rank})", f"  exitcode  : 1 (pid: {pid})", "  error_file: <N/A>",
                  "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
                  "=" * 60])
        return f

    def vllm_worker_oom(self) -> gen_log.Failure:
        """A tensor-parallel worker runs out of memory while capturing CUDA graphs; its lines carry its prefix."""
        r, c = self.r, self.c
        f = gen_log.Failure()
        noise: RealNoise = self.noise  # type: ignore[assignment]
        rank = r.randrange(4)
        p = f"(VllmWorker rank={rank} pid={noise.worker_pids[rank]}) ERROR {c.vllm} [multiproc_executor.py:596] "
        exc = [f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {r.choice((512, 896, 1024))}.00 MiB. "
               f"GPU {rank} has a total capacity of 79.19 GiB of which {r.randint(20, 400)}.00 MiB is free."]
        f.extend([p + "WorkerProc hit an exception."])
        body = ["Traceback (most recent call last):",
                f'  File "{SITE}/vllm/v1/executor/multiproc_executor.py", line 591, in worker_busy_loop',
                "    output = func(*args, **kwargs)",
                f'  File "{SITE}/vllm/v1/worker/gpu_worker.py", line 301, in compile_or_warm_up_model',
                "    self.model_runner.capture_model()",
                f'  File "{SITE}/vllm/v1/worker/gpu_model_runner.py", line 2592, in capture_model',
                "    self._dummy_run(num_tokens, capture_attn_cudagraph=full_cg)"]
        key = len(body)
        body += exc
        f.add([p + x for x in body], "cuda-oom", key=key, worker=None, kind="traceback",
              what="OOM in a VllmWorker (TP) process, prefixed lines")
        return f


# ---------------------------------------------------------------------------- writer


IMA = "cuda-illegal-memory-access"
H100_IMA = "vllm-h100-prefix-cache-ima"


def generate(path: Path, size_mb: float, seed: int, case: str, every_mb: float | None = None,
             manifest_path: Path | None = None) -> dict:
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; one of {', '.join(CASES)}")
    every = every_mb if every_mb is not None else EVERY_MB[case]
    r = random.Random(f"{case}:{seed}")
    clock = gen_log.Clock()
    clock.tick(0.0)
    noise = RealNoise(r, clock, case)
    inj = RealInjector(r, clock, noise)
    restart = case != "storm"
    target = int(size_mb * MB)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries: list[dict] = []
    written = lines_done = group = 0
    next_at = int(r.uniform(0.25, 0.75) * every * MB)
    t0 = time.perf_counter()
    with open(path, "wb") as out:
        while written < target:
            chunk: list[str] = [] if written else noise.startup()
            est = sum(len(x) + 1 for x in chunk)
            limit = min(CHUNK, target - written)
            while est < limit:
                if written + est >= next_at and not noise.pending:
                    f = inj.next()
                    base = lines_done + len(chunk)
                    group += 1
                    h100 = noise.gpu.startswith("NVIDIA H100")
                    for e in f.entries:
                        fam = H100_IMA if (h100 and e["family"] == IMA) else e["family"]
                        entries.append({"line": base + e["first"] + 1, "key_line": base + e["key"] + 1,
                                        "end_line": base + e["end"] + 1, "family": fam, "worker": e["worker"],
                                        "kind": e["kind"], "needs_ledger": e["needs_ledger"], "what": e["what"],
                                        "group": group, "group_line": base + 1, "group_end_line": base + len(f.lines)})
                    tail = [noise.line() for _ in range(r.randint(2, 30))]
                    while noise.pending:  # a multi-line item finishes before the restart
                        tail.append(noise.line())
                    burst = [*f.lines, *tail, *(noise.startup() if restart else ())]
                    chunk.extend(burst)
                    est += sum(len(x.encode()) + 1 for x in burst)
                    next_at = written + est + int(r.uniform(0.5, 1.5) * every * MB)
                    continue
                ln = noise.line()
                chunk.append(ln)
                est += (len(ln.encode()) if "\r" in ln else len(ln)) + 1
            data = ("\n".join(chunk) + "\n").encode("utf-8")
            out.write(data)
            written += len(data)
            lines_done += len(chunk)
    entries.sort(key=lambda e: e["line"])
    for i, e in enumerate(entries):
        e["id"] = i
    manifest = {"log": path.name, "generator": "gen_realistic", "generator_version": GENERATOR_VERSION, "case": case,
                "seed": seed, "size_mb_requested": size_mb, "bytes": written, "lines": lines_done, "every_mb": every,
                "generate_seconds": round(time.perf_counter() - t0, 2), "injected": entries}
    (manifest_path or gen_log.manifest_for(path)).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def default_path(case: str, size_mb: float, seed: int) -> Path:
    return HERE / "out" / f"{case}-{size_mb:g}mb-s{seed}.log"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=300.0, help="size in MB (10^6 bytes); default 300")
    ap.add_argument("--seed", type=int, default=1, help="random seed; default 1")
    ap.add_argument("--case", default="realistic", choices=CASES, help="default realistic")
    ap.add_argument("--every-mb", type=float, help="mean spacing of injected failures in MB (default: by case)")
    ap.add_argument("--out", type=Path, help="log path (default: bench/out/<case>-<size>mb-s<seed>.log)")
    a = ap.parse_args(argv)
    if a.size_mb <= 0:
        print(f"--size-mb {a.size_mb}: give a size above 0", file=sys.stderr)
        return 2
    path = a.out or default_path(a.case, a.size_mb, a.seed)
    try:
        m = generate(path, a.size_mb, a.seed, a.case, a.every_mb)
    except OSError as e:
        print(f"{path}: cannot write the log ({e.strerror}); choose another --out", file=sys.stderr)
        return 2
    print(gen_log.describe(path, m, gen_log.manifest_for(path)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
