"""Deciding and evaluating: the abstain threshold chosen by cross-validation over corpus files, per-file scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence
import warnings

import numpy as np
from sklearn.pipeline import Pipeline

from sigclass.errors import ModelError
from sigclass.learn.blocktext import ABSTAIN, decide, retry_pending
from sigclass.learn.corpus import CorpusFile, design, GROUPINGS, project_of, training_rows
from sigclass.learn.estimator import DEFAULT_PARAMS, make_pipeline, SEED


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


THRESHOLDS = (0.01, 0.02, 0.03, 0.04) + tuple(round(x, 2) for x in np.arange(0.05, 0.96, 0.05)) + (0.97, 0.99)

# What abstaining must keep, measured on out-of-fold predictions: the share of `unknown` files that stay
# unknown, and of `clean` files that stay quiet (of the files the regexes leave quiet). A block that ends
# with a retry announcement is never named (`blocktext.retry_pending`): a request a library still retries
# is not yet a failure, and a clean run may print one before it goes on.
RETAIN_UNKNOWN = 0.95
# In `learned` not 1.0: one clean file whose real-looking error block the model names at p > 0.97 would push
# the threshold to its top, where the model abstains on most known families too (out of fold on 880 training
# files: known-family accuracy 90% -> 45%). One clean file in fifty is that mode's bar. In `both` the model
# must not make a clean run noisier than the regexes alone, so every clean file they leave quiet stays quiet.
RETAIN_CLEAN = 0.98
RETAIN_CLEAN_BOTH = 1.0
# In `both` the ledger has already spent the unknowns' error budget: out of fold, its own (secondary, kill)
# findings name a family in about one unknown file in ten, so the model may add almost nothing on top of that
# and still leave nine unknowns in ten unknown. Its bar on the files the regexes leave quiet is higher.
RETAIN_UNKNOWN_BOTH = 0.98


def answers(cfs: Sequence[CorpusFile], oof: Sequence[np.ndarray], classes: Sequence[str], threshold: float,
            mode: str = "learned") -> list[str | None]:
    """Each file's first family in a signature mode: `learned` (the model on every block), `both` (the
    regex ledger's answer for a block it explains, the model for the rest) or `regex`."""
    got = []
    for cf, proba in zip(cfs, oof):
        model = [None if retry_pending(b) else decide(r, classes, threshold) for b, r in zip(cf.blocks, proba)]
        if mode == "regex":
            guesses = [(rx, 1.0) if rx is not None else None for rx in cf.regex]
        elif mode == "both":
            guesses = [(rx, 1.0) if rx is not None else g for rx, g in zip(cf.regex, model)]
        else:
            guesses = model
        got.append(first_root(guesses))
    return got


def quiet_rates(cfs: Sequence[CorpusFile], got: Sequence[str | None],
                base: Sequence[str | None] | None = None) -> dict[str, float]:
    """The share of `unknown` files that name no family, and of `clean` files; with ``base`` (the regex
    answers), only the files ``base`` leaves quiet count: what the model adds on top of the regexes."""
    out: dict[str, float] = {}
    for label in ABSTAIN:
        idx = [i for i, cf in enumerate(cfs) if cf.label == label and (base is None or base[i] is None)]
        out[label] = sum(1 for i in idx if got[i] is None) / len(idx) if idx else 1.0
    return out


def _right(cfs: Sequence[CorpusFile], got: Sequence[str | None]) -> int:
    return sum(1 for cf, g in zip(cfs, got) if (g is None if cf.label in ABSTAIN else g == cf.label))


def choose_threshold(cfs: Sequence[CorpusFile], oof: list[np.ndarray], classes: Sequence[str],
                     mode: str = "learned", floor: float = 0.0) -> tuple[float, dict[float, dict[str, float]]]:
    """The lowest abstain threshold whose out-of-fold answers keep `RETAIN_UNKNOWN` (`RETAIN_UNKNOWN_BOTH` in
    `both` mode) of the unknown files unknown and `RETAIN_CLEAN` (`RETAIN_CLEAN_BOTH`) of the clean files quiet (the
    highest threshold if none does).

    The rates count the files the regexes leave quiet: where the ledger names a family in an unknown
    file, the model is taught that family for that block. In `both` mode that is also where the model's one
    way to do harm is, naming a family for a block that is not one. Only thresholds from ``floor`` up count
    (`both` is never laxer than `learned`); the lowest, because above it a higher threshold only loses
    right answers. Returns the threshold and, per threshold, the rates, macro-F1 and right answers.
    """
    labels = [cf.label for cf in cfs]
    # an unknown file in which the ledger itself names a family (a secondary one, a kill after the failure)
    # trains the model to name that family there, so in either mode only the files the regexes leave quiet count
    base = answers(cfs, oof, classes, 1.0, "regex")
    curve: dict[float, dict[str, float]] = {}
    for t in THRESHOLDS:
        got = answers(cfs, oof, classes, t, mode)
        rates = quiet_rates(cfs, got, base)
        curve[t] = {"unknown_quiet": rates["unknown"], "clean_quiet": rates["clean"], "right": _right(cfs, got),
                    "macro_f1": file_scores(labels, got)["macro_f1"]}
    retain, quiet = (RETAIN_UNKNOWN_BOTH, RETAIN_CLEAN_BOTH) if mode == "both" else (RETAIN_UNKNOWN, RETAIN_CLEAN)
    ok = [t for t in THRESHOLDS if t >= floor and curve[t]["unknown_quiet"] >= retain
          and curve[t]["clean_quiet"] >= quiet]
    return (ok[0] if ok else THRESHOLDS[-1]), curve


# What a cross-validation fold holds out whole. `project` (every thread of one repository) is the harder test
# and the nearer one to a held-out part, whose threads come from projects and phrasings the training part lacks.
CV_GROUPS = "project"


@dataclass
class CVResult:
    threshold: float
    curve: dict[float, dict[str, float]]
    scores: dict[str, Any]
    folds: int
    threshold_both: float | None = None  # for `--signatures both`: the model sees only blocks no regex explains
    curve_both: dict[float, dict[str, float]] | None = None
    modes: dict[str, dict[str, Any]] | None = None  # out-of-fold scores per signature mode at the chosen thresholds
    groups: str = "thread"  # what a fold holds out whole: threads or projects (`_folds`)


def _folds(cfs: Sequence[CorpusFile], n_splits: int, seed: int = SEED, by: str = "thread"):
    """Stratified by label, grouped: the files of one group (a thread of a real corpus) share a fold; ``by``
    ``project``, the threads of one project (`corpus.project_of`) do, so a fold holds out whole projects."""
    from sklearn.model_selection import StratifiedGroupKFold

    if by not in GROUPINGS:
        raise ValueError(f"cross-validation groups are one of {GROUPINGS}, not {by!r}")
    labels = np.array([cf.label for cf in cfs])
    groups = np.array([(project_of(cf.group) if by == "project" else cf.group) if cf.group else f"file:{k}"
                       for k, cf in enumerate(cfs)])
    n = max(2, min(n_splits, len(set(groups))))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*least populated.*")
        warnings.filterwarnings("ignore", message=".*members.*")
        yield from StratifiedGroupKFold(n_splits=n, shuffle=True, random_state=seed).split(np.zeros(len(cfs)), labels, groups)


def source_weights(params: dict[str, Any] | None = None) -> dict[str, float]:
    """The weight of each training text's source (`CorpusFile.source`) under the parameters."""
    p = {**DEFAULT_PARAMS, **(params or {})}
    return {"real": 1.0, "written": float(p["written_weight"]), "example": float(p["example_weight"]),
            "phrasing": float(p["phrasing_weight"])}


def oof_probabilities(cfs: Sequence[CorpusFile], *, folds: int = 5, params: dict[str, Any] | None = None,
                      extras: Sequence[CorpusFile] = (), by: str = "thread") -> tuple[list[np.ndarray], list[str], int]:
    """Out-of-fold block probabilities of every file (columns: every label of the corpus), and the fold count.
    ``extras`` (the ledger's examples) join the training part of every fold and are never scored."""
    oof: list[np.ndarray | None] = [None] * len(cfs)
    all_labels = sorted({lab for cf in [*cfs, *extras] for _, lab, _ in training_rows(cf)})
    weights = source_weights(params)
    n = 0
    for train_idx, test_idx in _folds(cfs, folds, by=by):
        n += 1
        X, y, w, _ = design([cfs[i] for i in train_idx] + list(extras), weights)
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
    return [p if p is not None else np.zeros((0, len(all_labels))) for p in oof], all_labels, n


def mode_scores(cfs: Sequence[CorpusFile], got: Sequence[str | None]) -> dict[str, Any]:
    s = file_scores([cf.label for cf in cfs], got)
    rates = quiet_rates(cfs, got)
    known = sum(1 for cf in cfs if cf.label not in ABSTAIN)
    return {"right": _right(cfs, got), "files": len(cfs), "macro_f1": s["macro_f1"],
            "known_accuracy": s["known_accuracy"], "known_files": known,
            "unknown_quiet": rates["unknown"], "clean_quiet": rates["clean"]}


def cross_validate(cfs: Sequence[CorpusFile], *, folds: int = 5, params: dict[str, Any] | None = None,
                   threshold: float | None = None, extras: Sequence[CorpusFile] = (), by: str = CV_GROUPS) -> CVResult:
    """Stratified, grouped k-fold over files (``by`` thread or project, `_folds`): out-of-fold block
    probabilities, a threshold per mode, scores."""
    probs, all_labels, n = oof_probabilities(cfs, folds=folds, params=params, extras=extras, by=by)
    if threshold is None:
        threshold, curve = choose_threshold(cfs, probs, all_labels)
    else:
        curve = {}
    # the model sees less in `both` (only what no regex explains, mostly unknown), so it is never laxer there
    both, curve_both = choose_threshold(cfs, probs, all_labels, "both", floor=threshold)
    got = answers(cfs, probs, all_labels, threshold)
    scores = file_scores([cf.label for cf in cfs], got)
    modes = {"regex": mode_scores(cfs, answers(cfs, probs, all_labels, 1.0, "regex")),
             "learned": mode_scores(cfs, got),
             "both": mode_scores(cfs, answers(cfs, probs, all_labels, both, "both"))}
    return CVResult(threshold, curve, scores, n, both, curve_both, modes, by)


def fit(cfs: Sequence[CorpusFile], params: dict[str, Any] | None = None) -> Pipeline:
    X, y, w, _ = design(cfs, source_weights(params))
    if len(set(y)) < 2:
        raise ModelError("the corpus yields fewer than 2 labels; add labelled files (and clean ones) before training")
    pipe = make_pipeline(params)
    pipe.fit(X, y, clf__sample_weight=w)
    for _, vec in pipe.named_steps["features"].transformer_list:
        # a cache holding id(stop_words), a memory address: dropping it keeps the pickle byte-reproducible
        vec.__dict__.pop("_stop_words_id", None)
    return pipe
