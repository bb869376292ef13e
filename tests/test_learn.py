"""Learned signatures: the estimator, the artefact and its refusals, the CLI, and the devset bar."""

from __future__ import annotations

import json
from pathlib import Path
import struct
import warnings

import numpy as np
import pytest
from conftest import DEVSET, REPO
from sklearn.utils.estimator_checks import parametrize_with_checks
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.errors import ModelError
from sigclass.folders import DATA_ENV
from sigclass.learn import artefact
from sigclass.learn.blocktext import block_input, normalise_block
from sigclass.learn.corpus import corpus_files, corpus_hash, ledger_hash, shipped_corpus
from sigclass.learn.examples import corpus_phrasings
from sigclass.learn.predictor import load_pipeline, ModelWarning, Predictor, predictor_from
from sigclass.learn.scoring import score
from sigclass.learn.estimator import CalibratedLinearClassifier
from sigclass.learn.train import train
from sigclass.scan.scanner import Scanner

runner = CliRunner()

# --------------------------------------------------------------------------- sklearn common checks

# Why each check is expected to fail (imbalanced-learn keeps such a map too):
_CALIBRATED_XFAIL = {
    "check_sample_weight_equivalence_on_dense_data":
        "probabilities are calibrated on cross-validation folds; repeating a row moves it across folds, weighting it does not",
    "check_sample_weight_equivalence_on_sparse_data": "same as on dense data: fold-based calibration",
    "check_class_weight_classifiers":
        "calibration re-fits the probability scale on held-out folds, which undoes part of the class weighting",
}


def _expected_failures(estimator) -> dict[str, str]:
    return dict(_CALIBRATED_XFAIL) if estimator.calibration != "none" else {}


@parametrize_with_checks(
    [CalibratedLinearClassifier(), CalibratedLinearClassifier(loss="logistic", calibration="none")],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_common_checks(estimator, check):
    check(estimator)


def test_estimator_conventions():
    est = CalibratedLinearClassifier(C=3.0)
    assert est.get_params()["C"] == 3.0
    with pytest.raises(TypeError):
        CalibratedLinearClassifier(3.0)  # type: ignore[misc]  # keyword-only
    X = np.random.RandomState(0).rand(30, 4)
    y = np.array(["a", "b", "c"] * 10)
    assert est.fit(X, y) is est
    assert list(est.classes_) == ["a", "b", "c"]
    assert est.predict_proba(X).shape == (30, 3)
    np.testing.assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)


# --------------------------------------------------------------------------- a tiny corpus

def _oom(i: int) -> str:
    return ("INFO step %d loss 2.1\nTraceback (most recent call last):\n"
            '  File "/srv/job%d/train.py", line %d, in <module>\n    loss = model(batch)\n'
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %d.00 MiB. GPU %d has a total capacity of 79.1 GiB\n"
            % (i, i, 40 + i, 100 + i, i % 8))


def _segv(i: int) -> str:
    return ("INFO loading shard %d\nFatal Python error: Segmentation fault\n\nCurrent thread 0x%08x (most recent call first):\n"
            '  File "/usr/lib/python3/site-packages/ext/ops.py", line %d in forward\n'
            "Segmentation fault (core dumped)\n" % (i, 0x7F00 + i, 10 + i))


def _clean(i: int) -> str:
    return ("INFO step %d loss 1.9 lr 1e-4\nWARNING tokenizer has no pad token; using eos\n"
            "ConnectionError: metrics push failed, retrying in %d s (attempt 1 of 5)\n"
            "INFO eval accuracy 0.%d error_rate 0.01\nINFO saved checkpoint to /ckpt/step_%d\n" % (i, i, i, i))


def _write_corpus(root: Path) -> Path:
    for label, make in (("cuda-oom", _oom), ("segfault", _segv), ("clean", _clean)):
        d = root / label
        d.mkdir(parents=True)
        for i in range(6):
            (d / f"{label}-{i}.log").write_text(make(i + 1))
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, ledger):
    root = _write_corpus(tmp_path_factory.mktemp("corpus"))
    files = corpus_files([root])
    trained = train(files, ledger, folds=3, params={"example_weight": 0})  # the tiny corpus alone
    return root, trained


@pytest.fixture()
def data_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "userdata"
    monkeypatch.setenv(DATA_ENV, str(d))
    return d


def test_fit_predict_on_a_tiny_corpus(tiny, ledger):
    _, trained = tiny
    pred = Predictor(trained.pipeline, trained.meta["threshold"], trained.meta)
    got = pred(_oom(77).splitlines())
    assert got is not None and got[0] == "cuda-oom" and 0 < got[1] <= 1
    got = pred(_segv(55).splitlines())
    assert got is not None and got[0] == "segfault"
    assert set(trained.meta["labels"]) == {"clean", "cuda-oom", "segfault"}
    assert 0.0 < trained.meta["threshold"] < 1.0


def test_abstains_on_clean_text_and_on_what_it_has_not_seen(tiny):
    _, trained = tiny
    pred = Predictor(trained.pipeline, trained.meta["threshold"], trained.meta)
    assert pred(_clean(99).splitlines()) is None
    strict = Predictor(trained.pipeline, 0.999, trained.meta)
    assert strict(["ValueError: shapes (3,4) and (5,6) not aligned"]) is None


def test_learned_findings_say_learned_and_give_the_probability(tiny, ledger):
    _, trained = tiny
    pred = Predictor(trained.pipeline, trained.meta["threshold"], trained.meta)
    res = Scanner(ledger, signatures="learned", learned=pred).scan_text(_oom(5))
    (f,) = [f for f in res.findings if f.family == "cuda-oom"]
    assert f.method == "learned" and 0 < f.confidence <= 1


def test_training_is_reproducible(tiny, ledger):
    root, _ = tiny  # (the fixture's model has been used, and a used vectorizer caches a memory address)
    trained = train(corpus_files([root]), ledger, folds=3)
    again = train(corpus_files([root]), ledger, folds=3)
    a = artefact.dump_bytes(trained.pipeline, {**trained.meta, "created": "x"})
    b = artefact.dump_bytes(again.pipeline, {**again.meta, "created": "x"})
    assert a == b


# --------------------------------------------------------------------------- the artefact

def _saved(tiny, path: Path) -> str:
    _, trained = tiny
    return artefact.save(trained.pipeline, trained.meta, path)


def test_artefact_round_trip(tiny, tmp_path, ledger):
    path = tmp_path / "m.joblib"
    digest = _saved(tiny, path)
    meta, _, file_digest = artefact.read_header(path)
    assert file_digest == digest
    for key in ("format", "sklearn", "sigclass", "corpus_hash", "ledger_hash", "labels", "threshold", "created"):
        assert key in meta
    obj, meta2 = artefact.load(path, trusted={digest})
    assert meta2 == meta
    pred = predictor_from(obj, meta, ledger, str(path), "x")
    assert pred(_oom(3).splitlines())[0] == "cuda-oom"


def test_train_records_the_file_in_the_trust_list(tiny, tmp_path, data_dir, ledger):
    path = tmp_path / "m.joblib"
    digest = _saved(tiny, path)
    with pytest.raises(ModelError, match=r"did not train.*sigclass train --out"):
        load_pipeline(path, ledger)
    artefact.trust(path, digest)
    assert digest in artefact.trusted_hashes()
    assert load_pipeline(path, ledger) is not None


def _mutate(path: Path, fn) -> None:
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(fn(data)))


def _rewrite_meta(path: Path, **changes) -> str:
    data = path.read_bytes()
    n = len(artefact.MAGIC)
    version, mlen = struct.unpack_from(">HI", data, n)
    meta = json.loads(data[n + 6:n + 6 + mlen])
    meta.update(changes)
    head = json.dumps(meta).encode()
    new = artefact.MAGIC + struct.pack(">HI", version, len(head)) + head + data[n + 6 + mlen:]
    path.write_bytes(new)
    return artefact.sha256_file(path)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[: len(d) - 100], r"corrupt \(payload"),
        (lambda d: d[:12], r"corrupt|not a sigclass"),
        (lambda d: b"PK\x03\x04" + d[4:], r"not a sigclass model file"),
        (lambda d: d[:8] + struct.pack(">H", 99) + d[10:], r"format version 99.*reads version 1"),
        (lambda d: d[:-5] + bytes(x ^ 0xFF for x in d[-5:]), r"corrupt \(payload"),
    ],
    ids=["truncated", "header-only", "wrong-magic", "format-version", "flipped-bytes"],
)
def test_refuses_a_damaged_file(tiny, tmp_path, damage, message):
    path = tmp_path / "m.joblib"
    digest = _saved(tiny, path)
    _mutate(path, damage)
    with pytest.raises(ModelError, match=message) as exc:
        artefact.load(path, trusted={digest, artefact.sha256_file(path)})
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_refuses_another_sklearn_version_naming_both(tiny, tmp_path):
    import sklearn

    path = tmp_path / "m.joblib"
    _saved(tiny, path)
    digest = _rewrite_meta(path, sklearn="0.24.2")
    with pytest.raises(ModelError, match=rf"scikit-learn 0\.24\.2.*scikit-learn {sklearn.__version__}.*sigclass train --out"):
        artefact.load(path, trusted={digest})


def test_inconsistent_version_warning_becomes_a_model_error(tiny, tmp_path, monkeypatch):
    """A payload pickled by another scikit-learn (metadata notwithstanding) is refused, not half-loaded."""
    import sklearn
    import sklearn.base

    _, trained = tiny
    path = tmp_path / "m.joblib"
    monkeypatch.setattr(sklearn.base, "__version__", "1.0.0")
    digest = artefact.save(trained.pipeline, trained.meta, path)
    monkeypatch.undo()
    with pytest.raises(ModelError, match=rf"pickled by scikit-learn 1\.0\.0.*has scikit-learn {sklearn.__version__}"):
        artefact.load(path, trusted={digest})


def test_refuses_an_untrusted_file_without_unpickling(tiny, tmp_path, data_dir, ledger, monkeypatch):
    path = tmp_path / "m.joblib"
    _saved(tiny, path)
    import joblib

    monkeypatch.setattr(joblib, "load", lambda *a, **k: pytest.fail("unpickled an untrusted file"))
    with pytest.raises(ModelError, match=rf"{path}: refusing.*sigclass train --out {path}"):
        load_pipeline(path, ledger)


def test_shipped_model_pin_mismatch_and_missing_pin(tiny, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    digest = _saved(tiny, folder / artefact.SHIPPED_FILE)
    with pytest.raises(ModelError, match="no pinned hash"):
        artefact.load_shipped(folder)
    artefact.write_pin("0" * 64, folder)
    with pytest.raises(ModelError, match=r"does not match its pinned sha256.*--pin"):
        artefact.load_shipped(folder)
    artefact.write_pin(digest, folder)
    obj, meta = artefact.load_shipped(folder)
    assert meta["labels"] == sorted(obj.classes_)
    assert artefact.load_shipped(tmp_path / "nothing-here") is None


def test_refuses_labels_the_ledger_does_not_define(tiny, ledger):
    from sigclass.ledger.pack import Ledger

    _, trained = tiny
    small = Ledger([s for s in ledger if s.id != "segfault"])
    with pytest.raises(ModelError, match=r"segfault.*--ledger"):
        predictor_from(trained.pipeline, trained.meta, small, "m.joblib", "sigclass train --out m.joblib")


def test_ledger_change_warns_but_loads(tiny, ledger):
    _, trained = tiny
    meta = {**trained.meta, "ledger_hash": "0" * 16}
    with pytest.warns(ModelWarning, match="trained against ledger 0000000000000000.*sigclass train"):
        pred = predictor_from(trained.pipeline, meta, ledger, "stale-model-for-test", "sigclass train --out m")
    assert pred is not None


# --------------------------------------------------------------------------- the CLI

def test_cli_train_scan_and_eval(tiny, tmp_path, data_dir):
    root, _ = tiny
    out = tmp_path / "cli.joblib"
    r = runner.invoke(app, ["train", "--no-shipped-corpus", "--corpus", str(root), "--out", str(out), "--folds", "3"])
    assert r.exit_code == 0, r.output
    assert "abstain threshold" in r.output and out.exists()
    log = tmp_path / "x.log"
    log.write_text(_oom(42))
    r = runner.invoke(app, ["scan", "--signatures", "learned", "--model", str(out), "-f", "jsonl", str(log)])
    assert r.exit_code == 1, r.output
    rec = json.loads(r.output.splitlines()[0])
    assert rec["family"] == "cuda-oom" and rec["method"] == "learned"
    r = runner.invoke(app, ["eval", "--no-shipped-corpus", "--corpus", str(root), "--folds", "3", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["macro_f1"] > 0.5 and "cuda-oom" in doc["per_label"] and "confusion" in doc
    r = runner.invoke(app, ["eval", "--no-shipped-corpus", "--corpus", str(root), "--folds", "3"])
    assert r.exit_code == 0, r.output
    assert "macro-F1" in r.output and "precision" in r.output


def test_cli_refuses_an_untrusted_model_in_one_line(tiny, tmp_path, data_dir):
    path = tmp_path / "foreign.joblib"
    _saved(tiny, path)
    log = tmp_path / "x.log"
    log.write_text(_oom(1))
    r = runner.invoke(app, ["scan", "--signatures", "learned", "--model", str(path), str(log)])
    assert r.exit_code == 2
    assert "Traceback" not in r.output
    assert f"sigclass train --out {path}" in r.output


def test_cli_pin_only_for_the_shipped_file(tmp_path, data_dir):
    r = runner.invoke(app, ["train", "--out", str(tmp_path / "x.joblib"), "--pin"])
    assert r.exit_code == 2 and "--pin only applies" in r.output


# --------------------------------------------------------------------------- the shipped model and the devset

SHIPPED = REPO / "classifier" / "sigclass" / "data" / artefact.SHIPPED_FILE


@pytest.mark.skipif(not SHIPPED.exists(), reason="no shipped model in this tree")
def test_shipped_model_loads_verified(ledger):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelWarning)  # the shipped model never nags at scan time
        pred = load_pipeline(None, ledger)
    assert pred is not None
    assert SHIPPED.stat().st_size < 2 << 20
    assert pred.meta["sklearn"] and pred.meta["corpus_hash"]


def _known_family_rate(scanner, root) -> tuple[float, list]:
    rows = [r for r in score(scanner, root) if r.label not in ("clean", "unknown")]
    return sum(r.got == r.label for r in rows) / len(rows), [r for r in rows if r.got != r.label]


def _checkout_corpus():
    """The corpus of this checkout: the installed package's when it is one (an editable install), else that of
    the tree the tests run from (scripts/test.sh installs a copy of the package, which carries no corpus)."""
    return shipped_corpus() or [d for d in (REPO / "corpus" / n for n in ("written", "real")) if d.is_dir()] or None


@pytest.mark.skipif(not SHIPPED.exists(), reason="no shipped model in this tree")
def test_shipped_model_freshness_is_reported(ledger):
    """A stale shipped model still works (ledger changes only warn); say so with the rebuild command."""
    meta, _, _ = artefact.read_header(SHIPPED)
    corpus = _checkout_corpus()
    stale = []
    if meta["ledger_hash"] != ledger_hash(ledger):
        stale.append("ledger")
    if corpus and meta["corpus_hash"] != corpus_hash(corpus_files(corpus)):
        stale.append("corpus")
    if stale:
        warnings.warn(f"the shipped model predates the current {' and '.join(stale)}; "
                      f"rebuild it with `{artefact.SHIPPED_REBUILD}`", UserWarning, stacklevel=1)


@pytest.fixture(scope="session")
def corpus_model(ledger):
    """The model trained on the shipped corpus (its training part), once per session (3 folds keep it quick)."""
    parts = _checkout_corpus()
    if not parts:
        pytest.skip("no corpus in this tree")
    trained = train(corpus_files(parts), ledger, folds=3, phrasings=corpus_phrasings(parts))
    return Predictor(trained.pipeline, trained.meta["threshold"], trained.meta), trained


def test_corpus_cross_validation_is_sane(corpus_model):
    _, trained = corpus_model
    assert trained.meta["cv"]["macro_f1"] >= 0.6, trained.meta["cv"]
    assert len(trained.meta["labels"]) >= 10


@pytest.mark.skipif(not (DEVSET / "index.jsonl").exists(), reason="shared devset not present")
def test_devset_with_a_model_trained_now(ledger, corpus_model):
    pred, _ = corpus_model
    learned, misses = _known_family_rate(Scanner(ledger, signatures="learned", learned=pred), DEVSET)
    assert learned >= 0.80, f"learned alone: {learned:.1%} < 80%\n" + "\n".join(f"{m.label} got {m.got} {m.file}" for m in misses)


@pytest.mark.skipif(not (DEVSET / "index.jsonl").exists(), reason="shared devset not present")
@pytest.mark.skipif(not SHIPPED.exists(), reason="no shipped model in this tree")
def test_devset_learned_alone_and_both(ledger):
    pred = load_pipeline(None, ledger)
    learned, misses = _known_family_rate(Scanner(ledger, signatures="learned", learned=pred), DEVSET)
    assert learned >= 0.80, f"learned alone: {learned:.1%} < 80%\n" + "\n".join(f"{m.label} got {m.got} {m.file}" for m in misses)
    both, _ = _known_family_rate(Scanner(ledger, signatures="both", learned=pred), DEVSET)
    regex_only, _ = _known_family_rate(Scanner(ledger, signatures="regex"), DEVSET)
    assert both >= regex_only, f"both {both:.1%} < regex {regex_only:.1%}"


# --------------------------------------------------------------------------- scanner: counted evidence in learned mode

def test_learned_mode_hands_counted_family_evidence_to_the_model(ledger):
    counted = [s for s in ledger if s.min_count > 1]
    if not counted:
        pytest.skip("the ledger has no counted family")
    sig = counted[0]
    line = {"tokenizer-reload-per-call": "loading file tokenizer_config.json from cache at /hf/tok.json"}.get(sig.id)
    if line is None:
        pytest.skip(f"no sample line for {sig.id}")
    text = "".join(f"INFO item {i}\n{line}\n" for i in range(sig.min_count + 2))
    calls: list[list[str]] = []

    def model(bodies):
        calls.append(bodies)
        return (sig.id, 0.9)

    res = Scanner(ledger, signatures="learned", learned=model).scan_text(text)
    assert len(calls) == 1 and len(calls[0]) == sig.min_count
    (f,) = res.findings
    assert f.family == sig.id and f.method == "learned" and f.confidence == 0.9 and f.count == sig.min_count + 2
    calls.clear()
    quiet = Scanner(ledger, signatures="learned", learned=lambda b: calls.append(b)).scan_text(text)
    assert quiet.findings == [] and len(calls) == 1  # abstained once, not asked again for every later line
    assert Scanner(ledger, signatures="learned").scan_text(text).findings == []


def test_a_callback_that_wants_facts_gets_the_sources_facts(ledger):
    if not any(p.fact == "gpu_model" for s in ledger for p in s.facts):
        pytest.skip("the ledger reads no gpu_model fact")
    got: list[dict] = []

    def model(bodies, facts):
        got.append(facts)
        return None

    model.wants_facts = True
    Scanner(ledger, signatures="learned", learned=model).scan_text("INFO device 0: NVIDIA H100 80GB HBM3\n" + _oom(1))
    assert got and got[0].get("gpu_model", "").startswith("H100")
    text = block_input(["RuntimeError: x"], got[0])
    assert "fact_gpu_model_H100" in normalise_block(text)
    assert "fact_" not in normalise_block(text, facts=False)
