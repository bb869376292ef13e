"""The real corpus: its index is complete and consistent, the held-out rule holds, the dev set stays out."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from sigclass.learn.corpus import corpus_files, index_entries

from conftest import DEVSET, REPO

REAL = REPO / "corpus" / "real"
FIELDS = {"file", "family", "source", "thread", "split", "multi", "root_worker", "noexc", "why"}

pytestmark = pytest.mark.skipif(not (REAL / "index.jsonl").is_file(), reason="no real corpus in this tree")


def _families() -> set[str]:
    ids = {p.stem for p in (REPO / "signatures").glob("*.yaml")}
    return ids | {"clean", "unknown"}


def _records() -> list[dict]:
    return index_entries(REAL) or []


def test_every_record_is_complete_and_names_its_file():
    recs = _records()
    assert len(recs) >= 500
    fams = _families()
    for r in recs:
        assert set(r) == FIELDS, r["file"]
        assert r["family"] in fams, r
        assert r["file"].startswith(r["family"] + "/"), r["file"]
        assert (REAL / r["file"]).is_file(), r["file"]
        assert r["source"].startswith("https://") and r["thread"].startswith("https://"), r["file"]
        assert r["split"] in ("train", "heldout")
        assert r["why"].strip(), r["file"]
    listed = {r["file"] for r in recs}
    on_disk = {str(p.relative_to(REAL)) for p in REAL.rglob("*.log")}
    assert listed == on_disk, (on_disk - listed, listed - on_disk)


def test_the_split_follows_the_thread_rule():
    for r in _records():
        held = hashlib.sha256(r["thread"].encode()).digest()[0] < 77
        assert r["split"] == ("heldout" if held else "train"), r["file"]
    share = Counter(r["split"] for r in _records())
    assert 0.2 < share["heldout"] / sum(share.values()) < 0.4


def test_at_most_three_excerpts_a_thread():
    per = Counter(r["thread"] for r in _records())
    assert max(per.values()) <= 3, per.most_common(3)


def test_training_never_sees_the_held_out_part():
    train = {p for p, _ in corpus_files([REAL])}
    held = {p for p, _ in corpus_files([REAL], split="heldout")}
    assert train and held and not train & held
    assert len(train) + len(held) == len(_records())


def test_what_the_issue_asks_for_is_there():
    recs = _records()
    counts = Counter(r["family"] for r in recs)
    assert counts["clean"] >= 60 and counts["unknown"] >= 60
    assert sum(r["multi"] for r in recs) >= 120
    assert sum(r["noexc"] and r["family"] != "clean" for r in recs) >= 80


def test_the_readme_counts_match_the_index():
    text = (REPO / "corpus" / "README.md").read_text(encoding="utf-8")
    for fam, n in Counter(r["family"] for r in _records()).items():
        assert re.search(rf"^\| {re.escape(fam)} \| {n} \|", text, re.M), fam


@pytest.mark.skipif(not (DEVSET / "index.jsonl").exists(), reason="shared devset not present")
def test_the_dev_set_stays_out():
    dev = {json.loads(l)["source"].rstrip("/") for l in (DEVSET / "index.jsonl").read_text().splitlines() if l.strip()}
    for r in _records():
        assert r["thread"].rstrip("/") not in dev and r["source"].rstrip("/") not in dev, r["file"]
    dev_text = {p.read_bytes() for p in DEVSET.rglob("*.log")}
    assert not any((REAL / r["file"]).read_bytes() in dev_text for r in _records())
