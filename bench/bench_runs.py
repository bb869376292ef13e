"""Benchmark of `sigclass runs`: a fleet of generated sweeps, -j1 against -j2.

Generates RUNS run directories of SHARDS shards on 8 workers (alternately
layout 1, one file per shard in worker folders, and layout 2, one file per
worker with shard markers), with realistic small vLLM-style logs. About one
run in five has root faults (an H100 prefix-cache illegal memory access,
a CUDA OOM or a segfault) on one to three workers, each followed by its
cascade (queued shards failing with EngineDeadError, or never finishing).
The runs go to a temporary directory (or --dir) and are not kept unless
--keep.

Then it times whole processes, page cache warm:

    sigclass runs --format jsonl -j 1 RUN...
    sigclass runs --format jsonl -j 2 RUN...
    sigclass runs --format jsonl --dask ADDR RUN...   (with --dask: a LocalCluster of 2 worker
                                                        processes, 1 thread each, started here)
    rg -z -c -f PATTERNS RUNS_DIR              (PATTERNS: `sigclass ledger patterns`)
    sigclass runs --format jsonl -j 1 RUN      (one run: the fixed cost)

and prints files/s for each, the per-file cost in microseconds ((-j1 wall less
the one-run wall) / files, beside rg's wall / files), runs/s, the ratio (-j2 over -j1), the peak RSS (the
sigclass process alone and its whole process tree, sampled with psutil),
and whether both outputs are identical and match the generated answer
(every unit's status and family, every victim's root).

    python bench/bench_runs.py                    # 2,000 runs of 42 shards
    python bench/bench_runs.py --runs 200 --repeat 3 --json
    python bench/bench_runs.py --repeat 3 --dask  # also a two-worker dask cluster

Every timing is printed as it is made, with the 1-minute load average beside
it; the figures are medians over --repeat rounds (-j1, -j2 and dask take
turns within a round), with their spread.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

WORKERS = 8
T0 = datetime(2026, 3, 1, 8, 0, 0, tzinfo=timezone.utc)

ENGINE_INIT = [
    "INFO {vd} [__init__.py:213] Automatically detected platform cuda.",
    "INFO {vd} [config.py:783] This model supports multiple tasks: {{'generate', 'embed'}}. Defaulting to 'generate'.",
    "INFO {vd} [config.py:625] Chunked prefill is enabled with max_num_batched_tokens=8192.",
    "(EngineCore_DP0 pid={epid}) INFO {vd} [core.py:63] Initializing a V1 LLM engine (v0.10.2) with config: "
    "model='/models/Qwen3-8B', max_seq_len=32768, enforce_eager=False, enable_prefix_caching=True, tensor_parallel_size=1",
    "(EngineCore_DP0 pid={epid}) INFO {vd} [gpu_model_runner.py:2493] Starting to load model /models/Qwen3-8B...",
    "(EngineCore_DP0 pid={epid}) INFO {vd} [gpu_worker.py:276] Available KV cache memory: 49.38 GiB",
    "(EngineCore_DP0 pid={epid}) INFO {vd} [core.py:225] init engine (profile, create kv cache, warmup model) took 33.41 seconds",
]

ROOTS = {
    "vllm-h100-prefix-cache-ima": [
        "(EngineCore_DP0 pid={epid}) ERROR {vd} [core.py:583] EngineCore encountered a fatal error.",
        "(EngineCore_DP0 pid={epid}) ERROR {vd} [core.py:583] Traceback (most recent call last):",
        '(EngineCore_DP0 pid={epid}) ERROR {vd} [core.py:583]   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 691, in run_engine_core',
        "(EngineCore_DP0 pid={epid}) ERROR {vd} [core.py:583]     engine_core.run_busy_loop()",
        '(EngineCore_DP0 pid={epid}) ERROR {vd} [core.py:583]   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 277, in step',
        "(EngineCore_DP0 pid={epid}) ERROR {vd} [core.py:583]     model_output = self.execute_model_with_error_logging(",
        "(EngineCore_DP0 pid={epid}) ERROR {vd} [core.py:583] torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        "ERROR {vd} [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
    ],
    "cuda-oom": [
        "Traceback (most recent call last):",
        '  File "/app/gen_shard.py", line 132, in process_shard',
        "    outputs = model.generate(batch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is free.",
    ],
    "segfault": [
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x00007f3a9c1ff640 (most recent call first):",
        '  File "/app/gen_shard.py", line 74 in load_prompts',
        "/opt/run_worker.sh: line 53: {pid} Segmentation fault      (core dumped) python3 -u /app/gen_shard.py",
    ],
}

VICTIM = [
    "Traceback (most recent call last):",
    '  File "/app/gen_shard.py", line 132, in process_shard',
    "    outputs = llm.generate(prompts, sampling_params, use_tqdm=True)",
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
]


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _vd(t: datetime) -> str:
    return t.strftime("%m-%d %H:%M:%S")


def make_run(root: Path, idx: int, shards: int) -> dict:
    """Write one run; return its answer: unit -> (worker, status, family, root)."""
    rng = random.Random(idx)
    layout = 1 if idx % 2 == 0 else 2
    name = f"sweep-{idx:05d}"
    d = root / name
    d.mkdir(parents=True)
    fail_workers: dict[int, tuple[int, str, bool]] = {}  # worker -> (position of the root shard, family, victims print?)
    if rng.random() < 0.2:
        fam = rng.choice(sorted(ROOTS))
        for w in rng.sample(range(WORKERS), rng.randint(1, 3)):
            fail_workers[w] = (rng.randint(0, max(0, shards // WORKERS - 1)), fam, rng.random() < 0.7)
    answer: dict[str, tuple] = {}
    per_worker: dict[int, list[int]] = {w: [s for s in range(shards) if s % WORKERS == w] for w in range(WORKERS)}
    for w, mine in per_worker.items():
        t = T0 + timedelta(seconds=rng.randint(0, 30))
        wname = f"gpu{w}"
        epid, pid = rng.randint(1000, 400000), rng.randint(1000, 400000)
        head = [f"[{_ts(t)}][gen][INFO] - host=hgx-{idx % 97} worker={wname} pid={pid} python=3.12 vllm=0.10.2",
                f"[{_ts(t)}][gen][INFO] - device NVIDIA H100 80GB HBM3, prefix caching enabled",
                *(x.format(vd=_vd(t), epid=epid) for x in ENGINE_INIT)]
        worker_lines: list[str] = list(head)
        dead_root: str | None = None
        for pos, s in enumerate(mine):
            lines = [] if layout == 2 else list(head)
            n = rng.choice((128, 256, 500, 512, 1000))
            lines.append(f"[{_ts(t)}][gen][INFO] - [shard {s}] starting: {n} prompts")
            lines.append(f"[{_ts(t)}][gen][INFO] - [shard {s}] loading {n} prompts from /data/prompts/part-{s:05d}.jsonl")
            lines.append(f"[{_ts(t)}][gen][INFO] - prompt tokens p50={rng.randint(500, 9000):,} p99={rng.randint(9000, 30000):,}")
            fw = fail_workers.get(w)
            if dead_root is not None:
                t += timedelta(seconds=rng.randint(1, 5))
                if fw and fw[2]:
                    lines += VICTIM
                    lines.append(f"[{_ts(t)}][gen][ERROR] - [shard {s}] failed: EngineDeadError")
                    answer[str(s)] = (wname, "failed", "vllm-engine-dead", dead_root)
                else:
                    answer[str(s)] = (wname, "incomplete", None, dead_root)
            elif fw and fw[0] == pos:
                for k in range(rng.randint(2, 6)):
                    t += timedelta(seconds=rng.randint(10, 40))
                    lines.append(f"Processed prompts:  {10 * (k + 1)}%|{'█' * (k + 1)}{' ' * (9 - k)}| {k * n // 10}/{n} "
                                 f"[00:{10 + k:02d}<03:00,  4.18it/s, est. speed input: 5527.98 toks/s, output: 303.39 toks/s]")
                t += timedelta(seconds=rng.randint(5, 60))
                lines += [x.format(vd=_vd(t), epid=epid, pid=pid) for x in ROOTS[fw[1]]]
                lines.append(f"[{_ts(t)}][gen][ERROR] - [shard {s}] failed: {fw[1]}")
                answer[str(s)] = (wname, "failed", fw[1], None)
                dead_root = str(s)
            else:
                for k in range(rng.randint(3, 8)):
                    t += timedelta(seconds=rng.randint(10, 40))
                    lines.append(f"Processed prompts:  {10 * (k + 1)}%|{'█' * (k + 1)}{' ' * (9 - k)}| {k * n // 10}/{n} "
                                 f"[00:{10 + k:02d}<03:00,  4.18it/s, est. speed input: 5527.98 toks/s, output: 303.39 toks/s]")
                if rng.random() < 0.1:
                    lines.append(f"[{_ts(t)}][gen][WARNING] - retrying 3 requests after a transient error (error_rate=0.001)")
                t += timedelta(seconds=rng.randint(5, 30))
                lines.append(f"[{_ts(t)}][gen][INFO] - wrote {n} records to /results/gen-{s:05d}.jsonl")
                lines.append(f"[{_ts(t)}][gen][INFO] - [shard {s}] done in {rng.randint(60, 900)}s ({n} records)")
                answer[str(s)] = (wname, "ok", None, None)
            t += timedelta(seconds=rng.randint(1, 5))
            if layout == 1:
                (d / wname).mkdir(exist_ok=True)
                (d / wname / f"shard_{s}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
            else:
                worker_lines += lines
        if layout == 2:
            (d / f"{wname}.log").write_text("\n".join(worker_lines) + "\n", encoding="utf-8")
    return {"run": name, "units": answer}


def generate(root: Path, runs: int, shards: int) -> list[dict]:
    return [make_run(root, i, shards) for i in range(runs)]


def warm(root: Path) -> int:
    total = 0
    for dp, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(dp, f), "rb") as fh:
                total += len(fh.read())
    return total


def sigclass_cmd() -> list[str]:
    exe = shutil.which("sigclass")
    return [exe] if exe else [sys.executable, "-m", "sigclass"]


def _idle_total() -> tuple[float, float]:
    import psutil

    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    return idle, sum(t)


def timed(cmd: list[str], out: Path) -> tuple[float, float, float, float, float, int, float]:
    """(wall s, CPU s of the process tree, peak RSS of the process in MB, peak RSS of its process tree in MB,
    share of the machine other processes used meanwhile, exit status, CPU s of the command's own process).

    The command's own CPU (the parent of -j N workers: planning, sending tasks, decoding and writing results)
    is its last psutil sample, at most one sampling interval (50 ms) before it exited."""
    import resource

    import psutil

    peak_main = peak_tree = 0
    own_cpu = 0.0
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    idle0, total0 = _idle_total()
    with open(out, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.PIPE)
        ps = psutil.Process(proc.pid)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak_main, peak_tree, own_cpu
            while not done.is_set():
                try:
                    t = ps.cpu_times()
                    own_cpu = t.user + t.system
                    main = ps.memory_info().rss
                    tree = main + sum(c.memory_info().rss for c in ps.children(recursive=True))
                except psutil.Error:
                    tree = main = 0
                peak_main, peak_tree = max(peak_main, main), max(peak_tree, tree)
                done.wait(0.05)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        _, err = proc.communicate()
        wall = time.perf_counter() - t0
        done.set()
        th.join()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    idle1, total1 = _idle_total()
    busy = 1.0 - (idle1 - idle0) / max(1e-9, total1 - total0)  # the whole machine, every process
    others = max(0.0, busy - cpu / (wall * (os.cpu_count() or 1)))
    if proc.returncode not in (0, 1):
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return wall, cpu, peak_main / 1e6, peak_tree / 1e6, others, proc.returncode, own_cpu


def check(answers: list[dict], out: Path) -> tuple[int, list[str]]:
    got = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            got[r["run"]] = {u["unit"]: (u["worker"], u["status"], u["family"], u["root"]) for u in r["units"]}
    bad = []
    for a in answers:
        want = {k: tuple(v) for k, v in a["units"].items()}
        if got.get(a["run"]) != want:
            have = got.get(a["run"], {})
            diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
            bad.append(f"{a['run']}: units {', '.join(diff[:8])} differ")
    return len(answers) - len(bad), bad


def cluster_cpu(client) -> float:
    """CPU seconds the dask worker processes (and their nannies) have used so far."""
    import psutil

    total = 0.0
    for pid in client.run(os.getpid).values():
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def main() -> int:
    # timed as an installed package runs: its modules compiled to bytecode once, not at every start
    # (bench_scan.py says more)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--shards", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=1, help="timed repetitions per -j (median reported)")
    ap.add_argument("--dir", type=Path, help="generate here instead of a temporary directory")
    ap.add_argument("--keep", action="store_true", help="keep the generated runs")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--dask", action="store_true",
                    help="also time --dask on a LocalCluster(n_workers=2, threads_per_worker=1, processes=True)")
    args = ap.parse_args()

    if args.dir is not None:
        try:
            args.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            ap.error(f"--dir {args.dir}: cannot make it ({exc.strerror}); name a writable directory")
    base = Path(tempfile.mkdtemp(prefix="sigclass-bench-runs-", dir=args.dir))
    try:
        t = time.perf_counter()
        answers = generate(base / "runs", args.runs, args.shards)
        gen_s = time.perf_counter() - t
        size = warm(base / "runs")
        nfiles = sum(len(f) for _, _, f in os.walk(base / "runs"))
        dirs = sorted(str(p) for p in (base / "runs").iterdir())
        figures: dict = {"runs": args.runs, "shards": args.shards, "files": nfiles, "mb": round(size / 1e6, 1),
                         "generate_s": round(gen_s, 1), "cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
        outs = {}
        modes: dict[str, list[str]] = {"j1": ["-j", "1"], "j2": ["-j", "2"]}
        cluster = client = None
        if args.dask:
            import distributed

            cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                               dashboard_address=":0")
            client = distributed.Client(cluster)
            modes["dask"] = ["--dask", cluster.scheduler_address]
            # the first batch on a new cluster: the workers import sigclass and build their scanner (timed apart)
            wall, cpu, *_ = timed([*sigclass_cmd(), "runs", "--format", "jsonl", *modes["dask"], dirs[0]],
                                  base / "dask-warm.out")
            figures["dask_first_call_s"] = round(wall, 2)
        rounds: dict[str, dict[str, list[float]]] = {m: {"wall": [], "cpu": [], "main": [], "tree": [], "others": [],
                                                          "load": [], "own": []} for m in modes}
        try:
            for k in range(args.repeat):
                for m, opt in modes.items():
                    out = base / f"out-{m}-{k}.jsonl"
                    load = os.getloadavg()[0]
                    extra0 = cluster_cpu(client) if m == "dask" else 0.0
                    wall, cpu, pm, pt, oth, rc, own = timed([*sigclass_cmd(), "runs", "--format", "jsonl", *opt, *dirs],
                                                            out)
                    if m == "dask":
                        cpu += cluster_cpu(client) - extra0
                    if rc not in (0, 1):
                        print(f"sigclass runs {' '.join(opt)} failed with exit status {rc}", file=sys.stderr)
                        return 2
                    if not args.json:
                        print(f"  round {k + 1} {m:>4}: {wall:7.2f} s wall, CPU {cpu:6.2f} s (the command's own "
                              f"{own:5.2f} s), load {load:4.1f}, other processes {oth:.0%}", flush=True)
                    r = rounds[m]
                    for key, v in (("wall", wall), ("cpu", cpu), ("main", pm), ("tree", pt), ("others", oth),
                                   ("load", load), ("own", own)):
                        r[key].append(v)
                    outs[m] = out
        finally:
            if client is not None:
                client.close()
                cluster.close()
        for m, r in rounds.items():
            med = statistics.median(r["wall"])
            figures[m] = {"seconds": round(med, 2), "runs_per_s": round(args.runs / med, 1),
                          "seconds_min_max": [round(min(r["wall"]), 2), round(max(r["wall"]), 2)],
                          "cpu_s": round(statistics.median(r["cpu"]), 1),
                          "cpu_min_max": [round(min(r["cpu"]), 2), round(max(r["cpu"]), 2)],
                          "cores_busy": round(statistics.median(r["cpu"]) / med, 2),
                          "own_cpu_s": round(statistics.median(r["own"]), 2),
                          "others_share": round(max(r["others"]), 2),
                          "load_min_max": [round(min(r["load"]), 1), round(max(r["load"]), 1)],
                          "peak_rss_mb": round(max(r["main"]), 1), "peak_tree_rss_mb": round(max(r["tree"]), 1),
                          "files_per_s": round(nfiles / med, 1)}
        figures["ratio_j2_over_j1"] = round(figures["j2"]["runs_per_s"] / figures["j1"]["runs_per_s"], 2)
        figures["cpu_ratio_j2_over_j1"] = round(2 * figures["j1"]["cpu_s"] / figures["j2"]["cpu_s"], 2)
        if "dask" in figures:
            figures["ratio_dask_over_j1"] = round(figures["dask"]["runs_per_s"] / figures["j1"]["runs_per_s"], 2)
            figures["cpu_ratio_dask_over_j1"] = round(2 * figures["j1"]["cpu_s"] / figures["dask"]["cpu_s"], 2)
        # the same tree through ripgrep with the pack's patterns, and sigclass's fixed cost on one run
        pats = subprocess.run([*sigclass_cmd(), "ledger", "patterns"], capture_output=True, text=True)
        if pats.returncode != 0:
            print(f"`sigclass ledger patterns` failed: {pats.stderr.strip()}", file=sys.stderr)
            return 2
        (base / "patterns.txt").write_text(pats.stdout, encoding="utf-8")
        rg = shutil.which("rg") or str(Path(sys.executable).parent / "rg")
        rg_walls, one_walls, one_cpus = [], [], []
        for k in range(max(3, args.repeat)):
            wall, _, _, _, _, rc, _ = timed([rg, "-z", "-c", "-f", str(base / "patterns.txt"), str(base / "runs")],
                                         base / "rg.out")
            if rc not in (0, 1):
                print(f"rg failed with exit status {rc}", file=sys.stderr)
                return 2
            rg_walls.append(wall)
            wall, cpu, *_ = timed([*sigclass_cmd(), "runs", "--format", "jsonl", "-j", "1", dirs[0]], base / "one.out")
            one_walls.append(wall)
            one_cpus.append(cpu)
        rg_s, one_s = statistics.median(rg_walls), statistics.median(one_walls)
        figures["rg"] = {"seconds": round(rg_s, 2), "files_per_s": round(nfiles / rg_s, 1),
                         "cmd": "rg -z -c -f PATTERNS RUNS_DIR"}
        figures["one_run_s"] = round(one_s, 3)
        figures["per_file_us_j1"] = round(1e6 * (figures["j1"]["seconds"] - one_s) / max(1, nfiles), 1)
        figures["per_file_cpu_us_j1"] = round(1e6 * (figures["j1"]["cpu_s"] - statistics.median(one_cpus)) / max(1, nfiles), 1)
        figures["per_file_us_rg"] = round(1e6 * rg_s / max(1, nfiles), 1)
        figures["ratio_j2_over_rg"] = round(figures["j2"]["files_per_s"] / figures["rg"]["files_per_s"], 3)
        figures["identical_j1_j2"] = outs["j1"].read_bytes() == outs["j2"].read_bytes()
        if "dask" in outs:
            figures["identical_j1_dask"] = outs["j1"].read_bytes() == outs["dask"].read_bytes()
        ok, bad = check(answers, outs["j2"])
        figures["runs_matching_the_generated_answer"] = f"{ok}/{len(answers)}"
        if args.json:
            print(json.dumps(figures))
        else:
            print(f"{args.runs} runs x {args.shards} shards: {nfiles} files, {figures['mb']} MB "
                  f"(generated in {figures['generate_s']} s), {os.cpu_count()} CPUs")
            for m in rounds:
                f = figures[m]
                print(f"  {m:>4}: {f['seconds']:8.2f} s (min-max {f['seconds_min_max'][0]:.2f}-"
                      f"{f['seconds_min_max'][1]:.2f})  {f['runs_per_s']:8.1f} runs/s  CPU {f['cpu_s']:.1f} s "
                      f"({f['cores_busy']:.2f} cores busy; the command's own {f['own_cpu_s']:.2f} s)  peak RSS {f['peak_rss_mb']:.0f} MB "
                      f"(process tree {f['peak_tree_rss_mb']:.0f} MB)  load {f['load_min_max'][0]:.1f}-"
                      f"{f['load_min_max'][1]:.1f}, other processes used up to {f['others_share']:.0%} of the machine")
            print(f"  files/s: -j1 {figures['j1']['files_per_s']:,.0f}, -j2 {figures['j2']['files_per_s']:,.0f}, "
                  f"rg -z -c -f PATTERNS over the same tree {figures['rg']['files_per_s']:,.0f} "
                  f"({figures['rg']['seconds']:.2f} s; sigclass -j2 / rg = {figures['ratio_j2_over_rg']:.3f})")
            print(f"  per file: sigclass -j1 {figures['per_file_us_j1']:,.0f} us (wall less the "
                  f"{figures['one_run_s']:.2f} s of a one-run call), {figures['per_file_cpu_us_j1']:,.0f} us of CPU; "
                  f"rg {figures['per_file_us_rg']:,.0f} us")
            print(f"  ratio -j2/-j1: {figures['ratio_j2_over_j1']:.2f}   (1-min load average before timing: "
                  f"{figures['load_before']:.1f}; other processes on the machine lower the ratio)")
            print(f"  CPU ratio (-j1 CPU x 2 / -j2 CPU, the ratio on an otherwise idle 2-core machine "
                  f"less start-up and tail): {figures['cpu_ratio_j2_over_j1']:.2f}")
            print(f"  identical output -j1/-j2: {figures['identical_j1_j2']}")
            if "dask" in figures:
                print(f"  dask (2 worker processes, 1 thread each; CPU includes the workers'): ratio dask/-j1 "
                      f"{figures['ratio_dask_over_j1']:.2f} by wall, {figures['cpu_ratio_dask_over_j1']:.2f} by CPU; "
                      f"the cluster's first call {figures['dask_first_call_s']:.2f} s; identical output "
                      f"{figures['identical_j1_dask']}")
            print(f"  runs matching the generated answer: {figures['runs_matching_the_generated_answer']}")
        for b in bad[:10]:
            print("  mismatch:", b, file=sys.stderr)
        same = figures["identical_j1_j2"] and figures.get("identical_j1_dask", True)
        return 0 if same and not bad else 1
    finally:
        if args.keep:
            print(f"runs kept in {base / 'runs'}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
