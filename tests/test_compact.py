"""The compact model: the pipeline's probabilities from plain arrays, no scikit-learn, nothing unpickled."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import REPO

from sigclass.errors import ModelError
from sigclass.learn import artefact, compact
from sigclass.learn.blocktext import block_input
from sigclass.learn.corpus import corpus_files
from sigclass.scan.scanner import Scanner

SHIPPED = artefact.shipped_dir() / compact.COMPACT_FILE


@pytest.fixture(scope="module")
def corpus_blocks(ledger) -> list[str]:
    texts: list[str] = []

    def rec(bodies, facts=None):
        texts.append(block_input(bodies, facts))
        return None

    rec.wants_facts = True  # type: ignore[attr-defined]
    sc = Scanner(ledger, signatures="learned", learned=rec)
    for path, _ in corpus_files([REPO / "corpus" / "written", REPO / "corpus" / "real"], split="all"):
        sc.scan(str(path))
    assert len(texts) > 100
    return texts


def test_shipped_compact_is_pinned_and_taken_from_the_shipped_pipeline():
    pin = artefact.pinned_compact_hash()
    assert pin == artefact.sha256_file(SHIPPED)
    model = compact.CompactModel.load(SHIPPED, sha256=pin)
    assert model.settings["source_sha256"] == artefact.pinned_hash()


def test_compact_probabilities_equal_the_pipeline(corpus_blocks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obj, meta = artefact.load_shipped()
    model = compact.CompactModel.load(SHIPPED, sha256=artefact.pinned_compact_hash())
    assert model.classes == [str(c) for c in obj.classes_]
    want = obj.predict_proba(corpus_blocks)
    got = np.array([model.proba(t) for t in corpus_blocks])
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert model.threshold == meta["threshold"]


def test_a_tampered_or_corrupt_compact_model_is_refused(tmp_path: Path):
    data = SHIPPED.read_bytes()
    bad = tmp_path / "model.npz"
    bad.write_bytes(data[:-100] + b"x" * 100)
    with pytest.raises(ModelError, match="pinned sha256"):
        compact.CompactModel.load(bad, sha256=artefact.pinned_compact_hash())
    with pytest.raises(ModelError, match="corrupt"):
        compact.CompactModel.load(bad, sha256=None)
    with pytest.raises(ModelError, match="cannot read"):
        compact.CompactModel.load(tmp_path / "missing.npz", sha256=None)


def test_scan_uses_the_learned_model_without_importing_sklearn():
    code = (
        "import sys, sigclass\n"
        "r = sigclass.classify(signatures='learned', text_or_path='Traceback (most recent call last):\\n  File \"x.py\", line 1\\n"
        "RuntimeError: CUDA ran out of device memory while allocating 2 GiB for the KV buffer\\n')\n"
        "f = r.findings[0]\n"
        "print(f.family, f.method, 'sklearn' in sys.modules)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["cuda-oom", "learned", "False"]


def test_both_mode_uses_its_own_threshold():
    model = compact.CompactModel.load(SHIPPED, sha256=artefact.pinned_compact_hash())
    both = model.settings["threshold_both"]
    assert both is not None and 0.0 < model.threshold <= both <= 1.0
    assert compact.CompactPredictor(model, "learned").threshold == model.threshold
    assert compact.CompactPredictor(model, "both").threshold == both
    from sigclass.learn.lazy import load_predictor
    from sigclass.ledger.pack import load_ledger

    lg = load_ledger()
    lazy = load_predictor(None, lg)
    Scanner(lg, signatures="both", learned=lazy)  # the scanner tells the model its mode
    lazy(["RuntimeError: CUDA ran out of device memory while allocating 2 GiB"])
    assert lazy._predictor.threshold == both


@pytest.mark.parametrize("params", [
    {"frames": "all", "exc_features": 0, "signals": False},
    {"frames": "last", "exc_features": 500, "signals": True},
    {"frames": "none", "exc_features": 500, "signals": True, "repeat_exceptions": 1},
    {"frames": "none", "exc_features": 0, "signals": True, "split_words": "exc", "last_exception": 1},
    {"frames": "none", "exc_features": 0, "signals": True, "split_words": "all", "last_exception": 2},
    {"frames": "none", "exc_features": 0, "signals": True, "code": "none"},
    {"frames": "all", "exc_features": 0, "signals": True, "code": "all"},
])
def test_compact_probabilities_equal_the_pipeline_for_each_text_setting(params, corpus_blocks):
    import io

    from sigclass.learn.estimator import make_pipeline

    texts = corpus_blocks[:240]
    labels = np.array(["a", "b", "c", "unknown"] * 60)
    pipe = make_pipeline({**params, "char_min_df": 1}).fit(texts, labels)
    data = compact.export(pipe, {"threshold": 0.3, "threshold_both": 0.4}, source_sha256="0" * 64)
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        model = compact.CompactModel({k: z[k] for k in z.files}, "test")
    assert ("exc" in model.settings) == bool(params["exc_features"])
    np.testing.assert_allclose([model.proba(t) for t in corpus_blocks[:300]], pipe.predict_proba(corpus_blocks[:300]),
                               atol=1e-6)
