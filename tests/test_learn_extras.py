"""Extra training text of the learned model (the ledger's examples, a corpus's phrasings) and the identifier
words the model reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sigclass.learn import evaluate
from sigclass.learn.blocktext import ident_words, normalise_block
from sigclass.learn.corpus import collect, corpus_files, design
from sigclass.learn.examples import corpus_phrasings, examples_hash, ledger_examples

REPO = Path(__file__).resolve().parents[1]


def test_identifier_words_split_camel_and_snake_case():
    assert ident_words("torch.OutOfMemoryError: CUDA out of memory") == "out of memory error"
    assert ident_words("CUDA_ERROR_OUT_OF_MEMORY") == "cuda error out of memory"
    assert ident_words("NCCLWatchdogTimeout and cudaErrorIllegalAddress") == "nccl watchdog timeout cuda error illegal address"
    assert ident_words("plain words, H100, sm_90 and 42") == ""


def test_split_words_and_last_exception_reach_the_normalised_text():
    block = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
             "ValueError: first\n\nThe above exception was the direct cause of the following exception:\n\n"
             "torch.OutOfMemoryError: CUDA out of memory")
    plain = normalise_block(block, frames="none")
    assert "idw" not in plain
    words = normalise_block(block, frames="none", split_words="exc")
    idw = [x for x in words.splitlines() if x.startswith("idw ")]
    assert len(idw) == 1 and "out of memory error" in idw[0]
    every = normalise_block(block, frames="none", split_words="all")
    assert "idw " in every
    last = normalise_block(block, frames="none", repeat_exceptions=0, last_exception=2)
    assert last.count("torch.OutOfMemoryError") == 3 and last.count("ValueError: first") == 1


def test_ledger_examples_are_the_expect_blocks_of_each_signature(ledger):
    ex = ledger_examples(ledger)
    fams = {f for _, f, _ in ex}
    assert fams <= {s.id for s in ledger} and len(fams) >= 10
    assert all(text.strip() and name.endswith(tuple(f":{n}" for n in range(1, 10000))) for name, _, text in ex[:5])
    assert examples_hash(ex) == examples_hash(list(reversed(ex)))
    assert examples_hash(ex) != examples_hash(ex[1:])


def test_phrasings_are_read_from_their_folder_and_never_become_a_label(tmp_path):
    (tmp_path / "cuda-oom").mkdir()
    (tmp_path / "cuda-oom" / "a.log").write_text("RuntimeError: CUDA out of memory\n")
    (tmp_path / "phrasings").mkdir()
    (tmp_path / "phrasings" / "p.log").write_text(
        "# a header the parser skips\n# expect: disk-full\nOSError: [Errno 28] No space left on device\n"
        "# expect-not: disk-full\nall good\n")
    assert [label for _, label in corpus_files([tmp_path])] == ["cuda-oom"]
    got = corpus_phrasings([tmp_path])
    assert got == [("phrasings/p.log:2", "disk-full", "OSError: [Errno 28] No space left on device\n")]
    assert corpus_phrasings([tmp_path / "cuda-oom"]) == []


def test_extras_train_in_every_fold_at_their_weight_and_are_never_scored(ledger, tmp_path):
    files = corpus_files([REPO / "corpus" / "written"])
    files = [f for f in files if f[1] in ("cuda-oom", "disk-full", "clean", "unknown")]
    texts = [(f"ex{i}", "disk-full", "OSError: [Errno 28] No space left on device\n") for i in range(3)]
    texts.append(("phrasings/p.log:2", "cuda-oom", "RuntimeError: CUDA out of memory. Tried to allocate 2 MiB\n"))
    cfs = collect(files, ledger, texts)
    scored = [cf for cf in cfs if cf.source in ("real", "written")]
    extras = [cf for cf in cfs if cf.source not in ("real", "written")]
    assert [cf.source for cf in extras] == ["example"] * 3 + ["phrasing"]
    assert all(cf.blocks for cf in extras)
    _, _, w, _ = design(extras, {"example": 0.5, "phrasing": 0.0})
    assert len(w) == 3 and np.allclose(w, 0.5)
    probs, labels, n = evaluate.oof_probabilities(scored, folds=3, params={"example_weight": 0.5}, extras=extras)
    assert len(probs) == len(scored) and n == 3
    assert "disk-full" in labels
