"""Learned signatures: a text classifier for the failure blocks no regex signature explains.

A failure block (the scanner's own segmentation) is normalised and masked
(`BlockText`), featurised by word and character n-gram TF-IDF, and classified
by a linear model with calibrated probabilities (`CalibratedLinearClassifier`).
The labels are family ids plus two abstain labels, `clean` and `unknown`:
predicting one of those, or a family below the abstain threshold (chosen by
cross-validation over corpus files), leaves the block `unknown`.

Training data comes from a corpus laid out as ``<dir>/<label>/<name>.log``:
each file is scanned with the same `Scanner` that runs at inference time, so
training and inference see the same text (see `collect`). sklearn naming
(`X`, `y`, trailing-underscore attributes) stays inside this module.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import LabelEncoder
from sklearn.svm import LinearSVC
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sigclass.errors import ModelError
from sigclass.text.lines import split_line

from sigclass.learn.blocktext import ABSTAIN, decide  # noqa: E402,F401  (re-exported)
SEED = 0
DEFAULT_PARAMS: dict[str, Any] = {
    "C": 3.0, "loss": "hinge", "calibration": "sigmoid",
    "word_min_df": 1, "word_features": 20000, "char_min_df": 2, "char_features": 30000, "char_max_n": 5,
    "repeat_exceptions": 1, "facts": True,
}
LATER_WEIGHT = 0.5  # weight of a later block that the regex ledger attributes to a family
_LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".jsonl", ".log.gz", ".log.zst")


# =========================================================================== text

from sigclass.learn.blocktext import FACT_MARK, block_input, normalise_block  # noqa: E402,F401  (re-exported)


class BlockText(TransformerMixin, BaseEstimator):
    """Raw failure blocks (strings) -> normalised, masked strings. Stateless."""

    _parameter_constraints: dict = {
        "max_lines": [Interval(Integral, 2, None, closed="left")],
        "repeat_exceptions": [Interval(Integral, 0, None, closed="left")],
        "facts": ["boolean"],
    }

    def __init__(self, *, max_lines: int = 160, repeat_exceptions: int = 1, facts: bool = True) -> None:
        self.max_lines = max_lines
        self.repeat_exceptions = repeat_exceptions
        self.facts = facts

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def transform(self, X):
        return [normalise_block(str(x), max_lines=self.max_lines, repeat_exceptions=self.repeat_exceptions,
                                facts=self.facts) for x in X]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags


# =========================================================================== classifier

class CalibratedLinearClassifier(ClassifierMixin, BaseEstimator):
    """A linear classifier with calibrated probabilities, on numeric (dense or sparse) features.

    ``loss='hinge'`` fits a LinearSVC, ``'logistic'`` a LogisticRegression.
    With ``calibration`` set, probabilities come from CalibratedClassifierCV
    (one base model on all data, calibrators from ``calibration_cv``-fold predictions;
    ``calibration_cv`` shrinks to the smallest class). ``coef_dtype='float32'`` stores the
    weights in single precision (half the file). When a class has a single sample,
    or ``calibration='none'``, the logistic model's own probabilities (or a
    softmax of the SVM's decision values) are used.
    """

    _parameter_constraints: dict = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "loss": [StrOptions({"hinge", "logistic"})],
        "calibration": [StrOptions({"sigmoid", "isotonic", "none"})],
        "calibration_cv": [Interval(Integral, 2, None, closed="left")],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "coef_dtype": [StrOptions({"float32", "float64"})],
        "random_state": ["random_state"],
    }

    def __init__(self, *, C: float = 1.0, loss: str = "hinge", calibration: str = "sigmoid", calibration_cv: int = 3,
                 class_weight: str | dict | None = "balanced", max_iter: int = 5000, coef_dtype: str = "float32",
                 random_state=SEED) -> None:
        self.C = C
        self.loss = loss
        self.calibration = calibration
        self.calibration_cv = calibration_cv
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.coef_dtype = coef_dtype
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        self.label_encoder_ = LabelEncoder().fit(y)
        self.classes_ = self.label_encoder_.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"the data has one class only ({self.classes_[0]!r}); a classifier needs at least 2 classes")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
        return self._fit_model(X, self.label_encoder_.transform(y), sample_weight)

    def _base(self):
        if self.loss == "hinge":
            return LinearSVC(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter, random_state=self.random_state)
        return LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter, random_state=self.random_state)

    def _fit_model(self, X, y_enc, sample_weight):
        counts = np.bincount(y_enc)
        folds = int(min(self.calibration_cv, counts.min()))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(converge|least populated).*")
            if self.calibration != "none" and folds >= 2:
                from sklearn.model_selection import StratifiedKFold

                cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=self.random_state)
                model = CalibratedClassifierCV(self._base(), method=self.calibration, cv=cv, ensemble=False)
                self.calibrated_ = True
            else:
                model = self._base()
                self.calibrated_ = False
            model.fit(X, y_enc, sample_weight=sample_weight)
        self.model_ = model
        base = model.calibrated_classifiers_[0].estimator if self.calibrated_ else model
        self.n_iter_ = int(np.max(base.n_iter_))
        # float32 weights halve the model file; the probabilities move by about 1e-8
        base.coef_ = base.coef_.astype(self.coef_dtype)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def predict_proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if hasattr(self.model_, "predict_proba"):
            return self.model_.predict_proba(X)
        d = self.model_.decision_function(X)
        if d.ndim == 1:
            d = np.column_stack([-d, d])
        e = np.exp(d - d.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X):
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


# =========================================================================== pipeline

_WORD_TOKENS = r"<[A-Z]+>|[A-Za-z_][A-Za-z0-9_]+"


def make_pipeline(params: dict[str, Any] | None = None) -> Pipeline:
    """The whole model: block text -> word and char TF-IDF -> calibrated linear classifier."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    p = {**DEFAULT_PARAMS, **(params or {})}
    features = FeatureUnion([
        ("word", TfidfVectorizer(token_pattern=_WORD_TOKENS, lowercase=False, ngram_range=(1, 2), sublinear_tf=True,
                                 min_df=p["word_min_df"], max_features=p["word_features"], dtype=np.float32)),
        ("char", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, p["char_max_n"]), sublinear_tf=True,
                                 min_df=p["char_min_df"], max_features=p["char_features"], dtype=np.float32)),
    ])
    clf = CalibratedLinearClassifier(C=p["C"], loss=p["loss"], calibration=p["calibration"], random_state=SEED)
    text = BlockText(repeat_exceptions=p["repeat_exceptions"], facts=p["facts"])
    return Pipeline([("text", text), ("features", features), ("clf", clf)])


# =========================================================================== corpus

@dataclass
class CorpusFile:
    path: Path
    label: str
    blocks: list[str] = field(default_factory=list)  # every block the learned path sees, in order
    regex: list[str | None] = field(default_factory=list)  # the family the regex ledger gives each block


def corpus_files(dirs: Iterable[str | Path]) -> list[tuple[Path, str]]:
    """Labelled files of corpus folders laid out as <dir>/<label>/<name>.log."""
    out: list[tuple[Path, str]] = []
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise ModelError(f"{d}: corpus folder does not exist; name a folder laid out as <label>/<name>.log")
        for sub in sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            for f in sorted(sub.iterdir()):
                if f.is_file() and f.name.endswith(_LOG_SUFFIXES):
                    out.append((f, sub.name))
    return out


def corpus_hash(files: Sequence[tuple[Path, str]]) -> str:
    h = hashlib.sha256()
    for path, label in sorted(files, key=lambda t: (t[1], t[0].name, str(t[0]))):
        h.update(f"{label}/{path.name}\0".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def ledger_hash(ledger) -> str:
    """A content hash of the ledger that does not depend on where it is installed."""
    import json

    h = hashlib.sha256()
    for sig in ledger:
        h.update(sig.id.encode() + b"\0" + json.dumps(sig.raw, sort_keys=True, default=str).encode() + b"\n")
    return h.hexdigest()[:16]


def _keys(block: Sequence[str]) -> tuple[str, str]:
    """A finding's block as the learned path saw it (counted evidence keeps its log headers; the learned path not)."""
    return "\n".join(block), "\n".join(split_line(x).body for x in block)


def collect(files: Sequence[tuple[Path, str]], ledger) -> list[CorpusFile]:
    """Scan each corpus file twice: learned mode (the blocks, in reported order) and regex mode (what the ledger says).

    The learned-mode recorder claims every block for a placeholder family so that the
    scanner reports each one as a finding, in the order (by start line) it reports findings.
    """
    from sigclass.scan.scanner import Scanner

    placeholder = next(iter(ledger)).id
    seen: dict[str, list[str]] = {}

    def recorder(bodies: list[str], facts: dict[str, str] | None = None) -> tuple[str, float]:
        seen.setdefault("\n".join(bodies), []).append(block_input(bodies, facts))
        return placeholder, 1.0

    recorder.wants_facts = True  # type: ignore[attr-defined]

    learn_sc = Scanner(ledger, signatures="learned", learned=recorder)
    regex_sc = Scanner(ledger, signatures="regex")
    out: list[CorpusFile] = []
    for path, label in files:
        cf = CorpusFile(path, label)
        seen.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            order = learn_sc.scan(str(path)).findings
            res = regex_sc.scan(str(path))
        plain: list[str] = []
        for f in order:
            for key in _keys(f.block):
                if seen.get(key):
                    plain.append(key)
                    cf.blocks.append(seen[key].pop(0))
                    break
        for key, rest in seen.items():
            plain.extend([key] * len(rest))
            cf.blocks.extend(rest)
        by_block: dict[str, str] = {}
        for f in res.findings:
            if f.method == "regex" and f.block:
                for key in _keys(f.block):
                    by_block.setdefault(key, f.family)
        cf.regex = [by_block.get(b) for b in plain]
        out.append(cf)
    return out


def training_rows(cf: CorpusFile) -> list[tuple[int, str, float]]:
    """(block index, label, weight) rows of one corpus file.

    A family file F: its target block (the first block the regex ledger calls F,
    else the first block) is F; a block before it is what the ledger calls it,
    else `unknown` (the model must stay quiet there); a later block counts only
    when the ledger attributes it to a family, at half weight. Clean files: every
    block is `clean`. Unknown files: every block is `unknown` unless the ledger
    attributes it to a secondary family's text.
    """
    rows: list[tuple[int, str, float]] = []
    if not cf.blocks:
        return rows
    if cf.label in ABSTAIN:
        for i, fam in enumerate(cf.regex):
            rows.append((i, cf.label if cf.label == "clean" or fam is None else fam, 1.0 if fam is None else LATER_WEIGHT))
        return rows
    target = next((i for i, fam in enumerate(cf.regex) if fam == cf.label), 0)
    for i, fam in enumerate(cf.regex):
        if i == target:
            rows.append((i, cf.label, 1.0))
        elif i < target:
            rows.append((i, fam or "unknown", LATER_WEIGHT))
        elif fam is not None:
            rows.append((i, fam, LATER_WEIGHT))
    return rows


def design(cfs: Sequence[CorpusFile]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    X, y, w, g = [], [], [], []
    for k, cf in enumerate(cfs):
        for i, label, weight in training_rows(cf):
            X.append(cf.blocks[i])
            y.append(label)
            w.append(weight)
            g.append(k)
    return X, np.array(y, dtype=object), np.array(w), np.array(g)


# =========================================================================== deciding

def first_root(guesses: Sequence[tuple[str, float] | None]) -> str | None:
    """What the scanner reports first in learned mode: the first finding never follows a root, so its role is root."""
    return next((g[0] for g in guesses if g is not None), None)


def file_scores(expected: Sequence[str], got: Sequence[str | None]) -> dict[str, Any]:
    """Per-label precision/recall/F1 over files; clean and unknown files expect no family."""
    exp = ["(none)" if e in ABSTAIN else e for e in expected]
    pred = ["(none)" if g is None else g for g in got]
    labels = sorted(set(exp) | set(pred))
    per: dict[str, dict[str, float]] = {}
    for lab in labels:
        tp = sum(1 for e, p in zip(exp, pred) if e == lab and p == lab)
        fp = sum(1 for e, p in zip(exp, pred) if e != lab and p == lab)
        fn = sum(1 for e, p in zip(exp, pred) if e == lab and p != lab)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per[lab] = {"precision": prec, "recall": rec, "f1": f1, "support": sum(1 for e in exp if e == lab)}
    fams = [lab for lab in labels if lab != "(none)" and per[lab]["support"] > 0]
    macro = float(np.mean([per[lab]["f1"] for lab in fams])) if fams else 0.0
    known = [(e, p) for e, p in zip(exp, pred) if e != "(none)"]
    confusion: dict[str, dict[str, int]] = {}
    for e, p in zip(exp, pred):
        confusion.setdefault(e, {}).setdefault(p, 0)
        confusion[e][p] += 1
    return {
        "per_label": per,
        "macro_f1": macro,
        "known_accuracy": (sum(1 for e, p in known if e == p) / len(known)) if known else 0.0,
        "quiet_on_clean": (sum(1 for e, p in zip(exp, pred) if e == "(none)" and p == "(none)")
                           / max(1, sum(1 for e in exp if e == "(none)"))),
        "files": len(exp),
        "confusion": confusion,
    }


THRESHOLDS = (0.01, 0.02, 0.03, 0.04) + tuple(round(x, 2) for x in np.arange(0.05, 0.96, 0.05))


def choose_threshold(cfs: Sequence[CorpusFile], oof: list[np.ndarray], classes: Sequence[str]) -> tuple[float, dict[float, float]]:
    """The abstain threshold that maximises file-level macro-F1 of out-of-fold predictions.

    Among thresholds within 0.005 of the best score, the middle one is taken.
    """
    curve: dict[float, float] = {}
    for t in THRESHOLDS:
        got = [first_root([decide(r, classes, t) for r in proba]) for proba in oof]
        curve[t] = file_scores([cf.label for cf in cfs], got)["macro_f1"]
    best = max(curve.values())
    return min(t for t, s in curve.items() if s >= best - 0.005), curve


# =========================================================================== training

@dataclass
class CVResult:
    threshold: float
    curve: dict[float, float]
    scores: dict[str, Any]
    folds: int
    threshold_both: float | None = None  # for `--signatures both`: the model sees only blocks no regex explains


def _folds(cfs: Sequence[CorpusFile], n_splits: int, seed: int = SEED):
    from sklearn.model_selection import StratifiedKFold

    labels = np.array([cf.label for cf in cfs])
    n = max(2, min(n_splits, len(cfs)))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*least populated.*")
        warnings.filterwarnings("ignore", message=".*members.*")
        yield from StratifiedKFold(n_splits=n, shuffle=True, random_state=seed).split(np.zeros(len(cfs)), labels)


def cross_validate(cfs: Sequence[CorpusFile], *, folds: int = 5,
                   params: dict[str, Any] | None = None, threshold: float | None = None) -> CVResult:
    """Stratified k-fold over files: out-of-fold block probabilities, the threshold, file-level scores."""
    oof: list[np.ndarray | None] = [None] * len(cfs)
    all_labels = sorted({lab for cf in cfs for _, lab, _ in training_rows(cf)})
    n = 0
    for train_idx, test_idx in _folds(cfs, folds):
        n += 1
        X, y, w, _ = design([cfs[i] for i in train_idx])
        pipe = make_pipeline(params)
        pipe.fit(X, y, clf__sample_weight=w)
        cls = list(pipe.classes_)
        for i in test_idx:
            full = np.zeros((len(cfs[i].blocks), len(all_labels)))
            if cfs[i].blocks:
                pr = pipe.predict_proba(cfs[i].blocks)
                for j, c in enumerate(cls):
                    full[:, all_labels.index(c)] = pr[:, j]
            oof[i] = full
    probs = [p if p is not None else np.zeros((0, len(all_labels))) for p in oof]
    if threshold is None:
        threshold, curve = choose_threshold(cfs, probs, all_labels)
    else:
        curve = {}
    got = [first_root([decide(r, all_labels, threshold) for r in proba]) for proba in probs]
    scores = file_scores([cf.label for cf in cfs], got)
    return CVResult(threshold, curve, scores, n, choose_threshold_both(cfs, probs, all_labels))


def choose_threshold_both(cfs: Sequence[CorpusFile], oof: list[np.ndarray], classes: Sequence[str]) -> float:
    """The abstain threshold for `both` mode, where a block reaches the model only when no regex signature
    explains it (so most of what it sees is unknown): the one that maximises file-level macro-F1 of the
    out-of-fold predictions combined with the regex answers. Among thresholds within 0.005 of the best,
    the lowest is taken: on a corpus the regexes already explain, the curve is flat over a wide range, and
    the lowest keeps the most recall for reworded errors the regexes miss."""
    curve: dict[float, float] = {}
    for t in THRESHOLDS:
        got = []
        for cf, proba in zip(cfs, oof):
            guesses = [(rx, 1.0) if rx is not None else decide(r, classes, t)
                       for rx, r in zip(cf.regex, proba)]
            got.append(first_root(guesses))
        curve[t] = file_scores([cf.label for cf in cfs], got)["macro_f1"]
    best = max(curve.values())
    return min(t for t, s in curve.items() if s >= best - 0.005)


def fit(cfs: Sequence[CorpusFile], params: dict[str, Any] | None = None) -> Pipeline:
    X, y, w, _ = design(cfs)
    if len(set(y)) < 2:
        raise ModelError("the corpus yields fewer than 2 labels; add labelled files (and clean ones) before training")
    pipe = make_pipeline(params)
    pipe.fit(X, y, clf__sample_weight=w)
    for _, vec in pipe.named_steps["features"].transformer_list:
        # a cache holding id(stop_words), a memory address: dropping it keeps the pickle byte-reproducible
        vec.__dict__.pop("_stop_words_id", None)
    return pipe


# =========================================================================== prediction

class Predictor:
    """The callable the scanner calls: block bodies -> (family, probability) or None."""

    def __init__(self, pipeline: Pipeline, threshold: float, meta: dict[str, Any]) -> None:
        self.pipeline = pipeline
        self.threshold = float(threshold)
        self.meta = meta
        self.classes = [str(c) for c in pipeline.classes_]

    def set_mode(self, signatures: str) -> None:
        """`both`: the model sees only what no regex explains; use the threshold chosen for that."""
        if signatures == "both" and self.meta.get("threshold_both") is not None:
            self.threshold = float(self.meta["threshold_both"])
        elif signatures == "learned":
            self.threshold = float(self.meta["threshold"])

    wants_facts = True  # the scanner passes the source's facts (gpu model, engine flags) along with each block

    def __call__(self, bodies: list[str], facts: dict[str, str] | None = None) -> tuple[str, float] | None:
        return decide(self.pipeline.predict_proba([block_input(bodies, facts)])[0], self.classes, self.threshold)



class ModelWarning(UserWarning):
    """The model still loads, but something about it is out of date."""


_warned: set[str] = set()


def predictor_from(obj: Any, meta: dict[str, Any], ledger, where: str, rebuild: str, *, warn_ledger: bool = True) -> Predictor:
    """Check a loaded model against the ledger. Labels the ledger lacks: ModelError; another ledger: ModelWarning."""
    if not isinstance(obj, Pipeline) or not hasattr(obj, "classes_"):
        raise ModelError(f"{where}: model payload is not a fitted sigclass pipeline; rebuild it with `{rebuild}`")
    classes = sorted(str(c) for c in obj.classes_)
    if sorted(meta["labels"]) != classes:
        raise ModelError(f"{where}: model metadata lists labels that differ from its classifier's; rebuild it with `{rebuild}`")
    missing = sorted(c for c in classes if c not in ABSTAIN and c not in ledger)
    if missing:
        raise ModelError(f"{where}: model predicts families this ledger does not define ({', '.join(missing)}); "
                         f"pass the --ledger that defines them or rebuild it with `{rebuild}`")
    have = ledger_hash(ledger)
    if warn_ledger and meta.get("ledger_hash") != have and where not in _warned:
        _warned.add(where)
        # attributed to "sigclass" (no source line to quote), so the default display is a single line
        warnings.warn_explicit(f"{where}: model was trained against ledger {meta.get('ledger_hash')}, this ledger is "
                               f"{have}; learned findings still apply; refresh it with `{rebuild}`",
                               ModelWarning, "sigclass", 0)
    return Predictor(obj, meta["threshold"], meta)


def load_predictor(model: Path | None, ledger) -> Predictor | None:
    """The scanner's learned callback: the named model (verified and trusted), else the shipped one, else None."""
    from sigclass.learn import artefact

    if model is None:
        got = artefact.load_shipped()
        if got is None:
            return None
        obj, meta = got
        # the shipped model's freshness is the project's job (the test suite reports a stale one), not the user's
        return predictor_from(obj, meta, ledger, str(artefact.shipped_dir() / artefact.SHIPPED_FILE),
                              artefact.SHIPPED_REBUILD, warn_ledger=False)
    trusted = set(artefact.trusted_hashes())
    pin = artefact.pinned_hash()
    if pin:
        trusted.add(pin)
    rebuild = artefact.rebuild_command(model)
    obj, meta = artefact.load(model, trusted=trusted, rebuild=rebuild)
    return predictor_from(obj, meta, ledger, str(model), rebuild)


# =========================================================================== the whole training run

def shipped_corpus() -> Path | None:
    """The corpus/ folder of a source checkout (an installed wheel ships none)."""
    import sigclass

    root = Path(sigclass.__file__).resolve().parents[2]  # classifier/sigclass/__init__.py
    d = root / "corpus"
    return d if d.is_dir() and (root / "pyproject.toml").exists() else None


@dataclass
class Trained:
    pipeline: Pipeline
    meta: dict[str, Any]
    cv: CVResult
    files: list[CorpusFile]
    seconds: float


def train(files: Sequence[tuple[Path, str]], ledger, *, folds: int = 5, params: dict[str, Any] | None = None) -> Trained:
    """Collect blocks, choose the abstain threshold by stratified CV over files, fit on everything."""
    import time

    if not files:
        raise ModelError("no labelled files found; a corpus folder holds <label>/<name>.log files")
    t0 = time.perf_counter()
    cfs = collect(files, ledger)
    labels = {cf.label for cf in cfs}
    if len(labels - set(ABSTAIN)) < 1 or len(labels) < 2:
        raise ModelError(f"the corpus has labels {sorted(labels)}; training needs at least one family and one other label")
    cv = cross_validate(cfs, folds=folds, params=params)
    pipe = fit(cfs, params)
    seconds = time.perf_counter() - t0
    meta = {
        "corpus_hash": corpus_hash(files),
        "ledger_hash": ledger_hash(ledger),
        "labels": sorted(str(c) for c in pipe.classes_),
        "abstain": list(ABSTAIN),
        "threshold": cv.threshold,
        "threshold_both": cv.threshold_both,
        "params": {**DEFAULT_PARAMS, **(params or {})},
        "cv": {"folds": cv.folds, "macro_f1": round(cv.scores["macro_f1"], 4),
               "known_accuracy": round(cv.scores["known_accuracy"], 4),
               "quiet_on_clean": round(cv.scores["quiet_on_clean"], 4)},
        "corpus_files": len(cfs),
        "training_blocks": int(sum(len(training_rows(cf)) for cf in cfs)),
        "seed": SEED,
    }
    return Trained(pipe, meta, cv, cfs, seconds)
