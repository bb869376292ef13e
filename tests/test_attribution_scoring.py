"""Scoring the verdict's cause (family and worker) on labelled multi-worker excerpts, with the held-out split by thread."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sigclass.learn.scoring import accuracy, held_out, main, score_attribution
from sigclass.text.workers import norm_worker

OOM_RANK3 = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
KILLED_RANK5 = ("E0325 20:57:27.620000 2606 api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: "
                "/usr/bin/python\n")


@pytest.mark.parametrize("a, b", [("rank3", "3"), ("[rank3]:", "3"), ("task 4", "4"), ("local_rank: 3", "3"),
                                  ("WorkerDict pid=859188", "859188"), ("VllmWorker rank=5 pid=33", "5"),
                                  ("VllmWorker-1", "1"), ("pid=1942, ip=100.97.252.234", "1942"), ("07", "7"),
                                  ("(2/4)", "2")])
def test_worker_ids_compare_normalised(a, b):
    assert norm_worker(a) == norm_worker(b)


def test_different_workers_stay_different():
    assert norm_worker("rank3") != norm_worker("rank4")
    assert norm_worker("node-a") != norm_worker("node-b")
    assert norm_worker("(2/4)") != norm_worker("(4/4)")


def _thread(want_held_out: bool) -> str:
    for i in range(1000):
        url = f"https://github.com/example/project/issues/{i}"
        if (hashlib.sha256(url.encode()).digest()[0] < 77) == want_held_out:
            return url
    raise AssertionError("no such thread")


def test_held_out_is_the_first_byte_of_the_threads_sha256_below_77():
    for i in range(200):
        url = f"https://github.com/o/r/issues/{i}"
        assert held_out(url) == (hashlib.sha256(url.encode()).digest()[0] < 77)


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "real"
    (root / "cuda-oom").mkdir(parents=True)
    (root / "host-oom-killed").mkdir()
    (root / "cuda-oom" / "a.log").write_text(OOM_RANK3)
    (root / "host-oom-killed" / "b.log").write_text(KILLED_RANK5)
    (root / "cuda-oom" / "single.log").write_text(OOM_RANK3)
    rows = [
        {"file": "cuda-oom/a.log", "family": "cuda-oom", "thread": _thread(True), "multi": True, "root_worker": "rank3"},
        # the labels name another worker than the one the log shows: a miss on the worker only
        {"file": "host-oom-killed/b.log", "family": "host-oom-killed", "thread": _thread(False), "multi": True,
         "root_worker": "local_rank: 4"},
        {"file": "cuda-oom/single.log", "family": "cuda-oom", "thread": _thread(True), "multi": False,
         "root_worker": None},
    ]
    (root / "index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_score_attribution_splits_by_thread_and_checks_the_worker(tmp_path, scanner):
    root = _folder(tmp_path)
    held = score_attribution(scanner, [root], split="heldout")
    assert [(Path(r.file).name, r.ok) for r in held] == [("a.log", True)]  # single-worker entries are not scored
    train = score_attribution(scanner, [root], split="train")
    assert [(Path(r.file).name, r.ok_family, r.ok, r.got_worker) for r in train] == [("b.log", True, False, "5")]
    assert accuracy(score_attribution(scanner, [root], split="all")) == 0.5
    with pytest.raises(ValueError):
        score_attribution(scanner, [root], split="everything")


def test_the_scoring_entry_point_prints_misses_and_the_accuracy(tmp_path, capsys):
    root = _folder(tmp_path)
    assert main(["--split", "all", "--signatures", "regex", str(root)]) == 0
    out = capsys.readouterr().out
    assert "b.log" in out and "a.log" not in out
    assert out.strip().endswith("family and worker 1/2 (50.0%)")


def test_an_index_records_own_split_wins_over_the_hash(tmp_path, scanner):
    root = _folder(tmp_path)
    rows = [json.loads(x) for x in (root / "index.jsonl").read_text().splitlines()]
    rows[0]["split"] = "train"  # its thread hashes to held-out, but the index says train
    (root / "index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert score_attribution(scanner, [root], split="heldout") == []
    assert sorted(Path(r.file).name for r in score_attribution(scanner, [root], split="train")) == ["a.log", "b.log"]
