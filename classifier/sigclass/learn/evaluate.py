"""Deciding and evaluating: the abstain threshold chosen by cross-validation over corpus files, per-file scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence
import warnings

import numpy as np
from sklearn.pipeline import Pipeline

from sigclass.errors import ModelError
from sigclass.learn.blocktext import ABSTAIN, decide
from sigclass.learn.corpus import CorpusFile, design, training_rows
from sigclass.learn.estimator import make_pipeline, SEED


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
