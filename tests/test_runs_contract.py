"""`sigclass runs` against the run contract (../shared/runs.md) on generated run directories.

tests/runsgen.py writes seeded runs in every layout, name form, marker, time format,
container and cascade case the contract names, each with its own truth. Here a fixed
seed set is compared with `sigclass runs --format json`, its text report and the Python
API; SIGCLASS_RUNSGEN_SEEDS=N (or `python tests/runsgen.py --seeds N`) runs more. The
regression tests below are the disagreements the generator found, cut down to a few lines.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
import sys

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runsgen  # noqa: E402

from sigclass import api  # noqa: E402
from sigclass.cli.app import app  # noqa: E402

runner = CliRunner()
SEEDS = int(os.environ.get("SIGCLASS_RUNSGEN_SEEDS", "120"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("runsgen")
    blocks = runsgen.load_blocks(), runsgen.load_blocks(ranked=True)
    truths = [runsgen.generate(seed, root, blocks) for seed in range(SEEDS)]
    got, texts = runsgen.run_sigclass([root / t.run for t in truths])
    return root, truths, got, texts


def test_generated_runs_match_their_truth(generated):
    _, truths, got, _ = generated
    misses = [m for t in truths for m in runsgen.compare(t, got.get(t.run, {}))]
    assert not misses, f"{len(misses)} disagreements over {len(truths)} runs:\n" + "\n".join(misses[:60])


def test_generated_runs_text_report(generated):
    _, truths, _, texts = generated
    misses = [m for t in truths for m in runsgen.check_text(t, texts.get(t.run, ""))]
    assert not misses, "\n".join(misses[:60])


def test_generated_runs_through_the_python_api(generated):
    root, truths, _, _ = generated
    misses = []
    for t in truths[:: max(1, len(truths) // 12)]:
        got = api.analyze_run(root / t.run, n_jobs=1).to_dict()
        misses += runsgen.compare(t, got)
    assert not misses, "\n".join(misses)


def test_the_seed_set_covers_every_form_of_the_contract(generated):
    """The fixed seeds use every spelling runs.md names; a generator change that drops one fails here."""
    _, truths, _, _ = generated
    have = set().union(*(t.tags for t in truths))
    want = {f"layout:{n}" for n in (1, 2, 3, 4)}
    want |= {f"worker:{w}" for w in runsgen.WORKER_FOLDERS} | {f"shard:{s}" for s in runsgen.SHARD_FILES}
    want |= {f"kv:{k}" for k in runsgen.KV_WORKER} | {"l1:nokey"}
    want |= {f"marker:{m}" for m in runsgen.MARKERS}
    want |= {f"verb:{v}" for v in runsgen.START + runsgen.SUCCESS + runsgen.FAILURE}
    want |= {f"prefix:{p}" for p in runsgen.RANK_PREFIX + runsgen.RAY_PREFIX} | {"l3:slurm"}
    want |= {f"jsonl:{k}" for k in ("msg", "message", "log", "ts", "time", "timestamp", "iso_z", "iso_offset",
                                      "epoch", "worker", "rank", "gpu", "shard", "unit", "multi-line")}
    want |= {f"style:{s}" for s in runsgen.STYLES}
    want |= {f"ext:{e}" for e in runsgen.EXTS + [".jsonl"]} | {"compress:.gz", "compress:.zst"}
    want |= {"nest:logs", "nest:logs/2026-03-01", "ignored", "junk:truncated", "junk:binary", "systematic"}
    want |= {"unit:ok", "unit:fail", "unit:hang", "unit:loose", "unit:marker"}
    want |= {f"victim:{v}" for v in ("ok", "marker", "dead", "orphan", "silent")}
    want |= {"l3:cascade", "l3:independent", "l3:clean"} | {f"secondary:{f}" for f in runsgen.DIST_SECONDARY}
    want |= {"secondary:ray-actor-died"}
    missing = sorted(want - have) if SEEDS >= 120 else []
    assert not missing, missing


def test_the_truth_is_the_generators_own():
    """Two generations of one seed are the same files and truth; other seeds differ."""
    import tempfile

    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        ta, tb = runsgen.generate(7, Path(a)), runsgen.generate(7, Path(b))
        assert ta.to_dict() == tb.to_dict()
        files = sorted(p.relative_to(a) for p in Path(a).rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(b) for p in Path(b).rglob("*") if p.is_file())
        assert all((Path(a) / f).read_bytes() == (Path(b) / f).read_bytes() for f in files)
        assert runsgen.generate(8, Path(a)).to_dict() != ta.to_dict()


# --------------------------------------------------------------------------- what the generator found


def units(run_dir: Path) -> dict[str, tuple]:
    res = runner.invoke(app, ["runs", "-f", "json", "-j", "1", str(run_dir)])
    assert res.exit_code in (0, 1), res.output
    return {u["unit"]: (u["worker"], u["status"], u["family"], u["role"], u["root"])
            for u in json.loads(res.stdout)["runs"][0]["units"]}


ORPHAN = ("ERROR 08-24 00:45:09 [core.py:586] AssertionError: Error in memory profiling. Initial free memory 31.2 GiB, "
          "current free memory 35.9 GiB. This happens when other processes sharing the same container release GPU "
          "memory while vLLM is profiling during initialization.")
DEAD = ('  File "/workspace/vllm/engine/async_llm_engine.py", line 57, in _log_task_completion\n'
        "    raise AsyncEngineDeadError(\n"
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.\n")


def test_a_start_marker_ends_the_failure_of_the_unit_before(tmp_path: Path):
    # lines without a header after an error line used to run on as its message, across the next unit's start
    (tmp_path / "worker_2.log").write_text(
        "[shard 1] start\n" + ORPHAN + "\n[shard 2] start\nprocessed 64 prompts\n" + DEAD + "[shard 2] aborted\n")
    assert units(tmp_path) == {
        "1": ("worker_2", "failed", "vllm-orphan-gpu-memory", "root", None),
        "2": ("worker_2", "failed", "vllm-engine-dead", "cascade", "1"),
    }


def test_torch_bracketed_glog_info_lines_are_records_of_their_own(tmp_path: Path):
    # `[I824 00:45:18.856261123 file.cpp:88]` (no thread id) has no header sigclass splits off; at info level it
    # must still not continue the error block above it
    log = tmp_path / "x.log"
    log.write_text(ORPHAN + "\n" + "".join(f"[I824 00:45:{18 + i}.856261123 runner.cpp:88] processed {64 * i} prompts\n"
                                           for i in range(1, 3)) + DEAD)
    res = runner.invoke(app, ["scan", "-f", "json", str(log)])
    fams = [(f["family"], f["line"]) for f in json.loads(res.stdout)["findings"]]
    assert fams == [("vllm-orphan-gpu-memory", 1), ("vllm-engine-dead", 4)]


def test_the_next_units_progress_does_not_make_a_failure_recovered(tmp_path: Path):
    (tmp_path / "worker_3.log").write_text(
        "2026-10-26T17:30:05Z INFO shard 2 status=begin\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.9/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler\n'
        "    _error_if_any_worker_fails()\n"
        "RuntimeError: DataLoader worker (pid 9981) is killed by signal: Segmentation fault.\n"
        "2026-10-26T17:31:54Z ERROR shard 2 aborted\n"
        "2026-10-26T17:32:39Z INFO Starting shard-4\n"
        + "".join(f"[2026-10-26 17:33:0{i},239][train][INFO] - step {1180 + i} | loss 1.9021 | lr 2.4e-05\n"
                  for i in range(1, 5))
        + "2026-10-26T17:33:40Z INFO shard-4: done\n")
    assert units(tmp_path) == {
        "2": ("worker_3", "failed", "segfault", "root", None),
        "4": ("worker_3", "ok", None, None, None),
    }


def test_units_without_time_keep_their_place_in_the_file(tmp_path: Path):
    # the first unit prints no timestamp, later ones do: it is still the first on its worker
    (tmp_path / "node-d.txt").write_text(
        "shard=1001 begin\n"
        "OSError: [Errno 28] No space left on device: '/data/ckpt/model.safetensors'\n"
        "shard=1001 status=failed\n"
        "shard=1002 begin\n"
        "2026-10-13 00:46:45,000 INFO processed 64 prompts\n"
        "shard=1002 status=failed\n"
        "2026-10-13 00:49:31,000 INFO [shard 1004] start\n"
        "2026-10-13 00:49:40,000 INFO [shard 1004] done\n")
    got = units(tmp_path)
    assert got["1001"] == ("node-d", "failed", "disk-full", "root", None)
    assert got["1002"][1:] == ("failed", "unknown", "cascade", "1001")
    assert got["1004"] == ("node-d", "ok", None, None, None)


@pytest.mark.parametrize("message", ["Killed\n", "$ python train.py\nEpoch 1:   3%| 118/3912\nKilled\n"])
def test_a_line_anchored_signature_matches_a_json_message(tmp_path: Path, message: str):
    # a container log collector writes the shell's `Killed` as a record's whole message
    rec = [{"time": "2026-09-18T05:25:56Z", "rank": 0, "unit": 105, "log": "[shard 105] begin\n"},
           {"time": "2026-09-18T05:25:59Z", "rank": 0, "unit": 105, "log": message}]
    (tmp_path / "rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rec))
    assert units(tmp_path) == {"105": ("0", "failed", "host-oom-killed", "root", None)}


@pytest.mark.parametrize("prefix", ["[rank1]:", "1: ", "(pid=4242, ip=10.0.0.2) "])
def test_a_line_anchored_over_time_rule_matches_after_a_worker_prefix(tmp_path: Path, prefix: str):
    # cProfile's table: the over-time metric rule's pattern is anchored at the line start
    profile = ["         4182689 function calls (4075521 primitive calls) in 912.440 seconds", "",
               "   Ordered by: cumulative time", "",
               "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)",
               "      500    0.021    0.000  880.113    1.760 render.py:12(render_prompt)",
               "      500    0.310    0.001  879.402    1.759 tokenization_auto.py:812(from_pretrained)"]
    ident = "4242" if prefix.startswith("(") else "1"
    lines = [f"[shard {ident}] start", *profile, f"[shard {ident}] aborted"]
    (tmp_path / "driver.log").write_text("".join(prefix + x + "\n" for x in lines))
    assert units(tmp_path)[ident][1:3] == ("failed", "tokenizer-reload-per-call")


def test_a_json_record_is_one_line_for_recovered(tmp_path: Path):
    # a multi-line message (a whole traceback) once shifted the error's end past the next unit's start marker
    tb = ("Traceback (most recent call last):\n"
          '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1741\n'
          "    valid_sampled_token_ids = sampled_token_ids.tolist()\n"
          "RuntimeError: CUDA error: an illegal memory access was encountered\n"
          "CUDA kernel errors might be asynchronously reported at some other API call.\n"
          "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n")
    rec = [("shard=1004 begin", 1004), (tb, 1004), ("shard=1004 status=failed", 1004), ("shard_1005 running", 1005)]
    rec += [(f"step {1180 + i} | loss 1.9021 | lr 2.4e-05 | tokens/s 11873", 1005) for i in range(1, 5)]
    rec += [("shard_1005: completed", 1005)]
    (tmp_path / "rank1.jsonl").write_text("".join(
        json.dumps({"ts": 1771697839.9 + i, "rank": 1, "shard": u, "msg": m}) + "\n" for i, (m, u) in enumerate(rec)))
    assert units(tmp_path) == {
        "1004": ("1", "failed", "cuda-illegal-memory-access", "root", None),
        "1005": ("1", "ok", None, None, None),
    }


def test_counted_evidence_starts_again_with_each_unit(tmp_path: Path):
    # two hang warnings in a later shard are that shard's hang, not more evidence of an earlier shard's stall
    stall = ["2026-02-21 18:23:44 iter 4000: loss 2.9012, time 812.40ms, mfu 41.20%",
             "2026-02-21 18:23:45 iter 4001: loss 2.9007, time 811.97ms, mfu 41.21%",
             "2026-02-21 18:23:46 iter 4002: loss 2.9004, time 812.11ms, mfu 41.20%",
             "2026-02-21 19:36:23 ^CTraceback (most recent call last):", "2026-02-21 19:36:23 KeyboardInterrupt"]
    warn = "DEBUG 02-21 {t} shm_broadcast.py:456] No available shared memory broadcast block found in 60 second."
    rec = [(1772000000.0, 3, "shard 3 begin")] + [(1772000004.0 + i, 3, x) for i, x in enumerate(stall[:3])]
    rec += [(1772004383.0, 3, stall[3]), (1772004383.0, 3, stall[4])]
    rec += [(1772004400.0, 6, "Begin [shard 6]"), (1772004401.0, 6, "[shard 6] finished"),
            (1772004500.0, 8, "shard 8 begin"), (1772004503.0, 8, warn.format(t="20:39:08")),
            (1772004563.0, 8, warn.format(t="20:40:08"))]
    with gzip.open(tmp_path / "gpu3.jsonl.gz", "wt") as fh:
        fh.write("".join(json.dumps({"time": t, "gpu": 3, "shard": u, "log": m + "\n"}) + "\n" for t, u, m in rec))
    got = units(tmp_path)
    assert got["3"][1:3] == ("failed", "vllm-engine-hang")
    assert got["6"][1] == "ok"
    assert got["8"] == ("3", "failed", "vllm-engine-hang", "root", None)


@pytest.mark.parametrize("form", ["jsonl", "[rank{r}]:", "{r}: ", "(RayWorkerWrapper pid={r}) "])
def test_each_worker_has_its_own_rate_count(tmp_path: Path, form: str):
    # two workers' lines interleaved in one file: each one's per-prompt model loads are its own fault
    comfy = ["got prompt", "Requested to load FluxClipModel_", "loaded completely 9.5 4777.55 True",
             "Requested to load Flux", "Prompt executed in 41.20 seconds"]
    rec = []
    for gpu, shard in ((5, 5), (6, 6)):
        rec.append((gpu, shard, f"[shard {shard}] start"))
    for _ in range(3):
        for gpu, shard in ((5, 5), (6, 6)):
            rec += [(gpu, shard, x) for x in comfy]
    if form == "jsonl":
        (tmp_path / "run_events.jsonl").write_text("".join(
            json.dumps({"timestamp": 1773844304.8 + i, "gpu": g, "unit": s, "message": m}) + "\n"
            for i, (g, s, m) in enumerate(rec)))
    else:
        (tmp_path / "torchrun.out").write_text("".join(form.format(r=g) + m + "\n" for g, _, m in rec))
    got = units(tmp_path)
    assert got["5"] == ("5", "failed", "tokenizer-reload-per-call", "root", None)
    assert got["6"] == ("6", "failed", "tokenizer-reload-per-call", "root", None)


def test_random_bytes_without_nul_under_a_log_name_are_binary(tmp_path: Path):
    import random

    rng = random.Random(30179)
    data = bytes(rng.choice(range(1, 256)) for _ in range(2048))  # no NUL byte, few control bytes, not UTF-8
    (tmp_path / "dump.log").write_bytes(data)
    (tmp_path / "shard_3.log").write_text("[shard 3] start\n[shard 3] done\n")
    res = runner.invoke(app, ["runs", "-f", "json", "-j", "1", str(tmp_path)])
    run = json.loads(res.stdout)["runs"][0]
    assert {p["path"]: p["kind"] for p in run["problems"]} == {"dump.log": "binary"}
    assert [(u["unit"], u["status"]) for u in run["units"]] == [("3", "ok")]


def test_a_rate_count_starts_again_with_each_unit(tmp_path: Path):
    # the same worker reloads per prompt in two shards with a good one between: two faults, each its shard's own
    comfy = ["got prompt", "Requested to load FluxClipModel_", "loaded completely 9.5 4777.55 True",
             "Requested to load Flux", "Prompt executed in 41.20 seconds"]
    lines = ["[shard 1] start", *comfy * 3, "[shard 1] aborted", "[shard 2] start", "[shard 2] done",
             "[shard 3] start", *comfy * 3]
    (tmp_path / "worker_2.log").write_text("".join(x + "\n" for x in lines))
    assert units(tmp_path) == {
        "1": ("worker_2", "failed", "tokenizer-reload-per-call", "root", None),
        "2": ("worker_2", "ok", None, None, None),
        "3": ("worker_2", "failed", "tokenizer-reload-per-call", "root", None),
    }


def test_a_headless_traceback_in_one_json_record_stays_in_its_unit(tmp_path: Path):
    # no unit field: the markers mark the units; the frames above the exception line are in the same record,
    # so they must not be counted as lines above it (into the unit before)
    frag = ('  File "/opt/conda/lib/python3.9/site-packages/torch/utils/data/_utils/signal_handling.py", line 66\n'
            "    _error_if_any_worker_fails()\n"
            "RuntimeError: DataLoader worker (pid 9981) is killed by signal: Segmentation fault.\n")
    rec = ["Starting shard=1001", "processed 64 prompts (45.7 it/s)", "shard=1001: succeeded", "shard-1005 status=begin",
           frag, "shard-1005 status=aborted"]
    (tmp_path / "rank0.jsonl").write_text("".join(
        json.dumps({"timestamp": f"2026-02-09T06:55:{10 + i}Z", "rank": 0, "msg": m}) + "\n" for i, m in enumerate(rec)))
    assert units(tmp_path) == {
        "1001": ("0", "ok", None, None, None),
        "1005": ("0", "failed", "segfault", "root", None),
    }


def test_a_shard_marker_with_a_colon_is_not_a_pdsh_host(tmp_path: Path):
    # `shard-100: completed` has the shape of pdsh's `worker-1: ` host prefix; the marker must win
    (tmp_path / "rank0.log").write_text("shard-100 status=running\nprocessed 64 prompts (36.8 it/s)\n"
                                        "shard-100: completed (862 prompts)\nshard-101: begin\nshard-101: aborted\n")
    got = units(tmp_path)
    assert got["100"] == ("rank0", "ok", None, None, None)
    assert got["101"][1:3] == ("failed", "unknown")
