"""Learned signatures: a text classifier for the failure blocks no regex signature explains.

A failure block (the scanner's own segmentation) is normalised and masked
(`BlockText`), featurised by word and character n-gram TF-IDF, and classified
by a linear model with calibrated probabilities (`CalibratedLinearClassifier`).
The labels are family ids plus two abstain labels, `clean` and `unknown`:
predicting one of those, or a family below the abstain threshold (chosen by
cross-validation over corpus files), leaves the block `unknown`.

Training data comes from a corpus laid out as ``<dir>/<label>/<name>.log``:
each file is scanned with the same `Scanner` that runs at inference time, so
training and inference see the same text (see `collect`).

The stages: `estimator`, `corpus`, `evaluate` (cross-validation and thresholds), `predictor`; this module runs
the whole training.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from sklearn.pipeline import Pipeline

from sigclass.errors import ModelError
from sigclass.learn.blocktext import ABSTAIN
from sigclass.learn.corpus import collect, corpus_hash, CorpusFile, ledger_hash, training_rows
from sigclass.learn.estimator import DEFAULT_PARAMS, SEED
from sigclass.learn.evaluate import cross_validate, CV_GROUPS, CVResult, fit
from sigclass.learn.examples import examples_hash, ledger_examples


@dataclass
class Trained:
    pipeline: Pipeline
    meta: dict[str, Any]
    cv: CVResult
    files: list[CorpusFile]
    seconds: float


def train(files: Sequence[tuple[Path, str]], ledger, *, folds: int = 5, params: dict[str, Any] | None = None,
          phrasings: Sequence[tuple[str, str, str]] = (), groups: str = CV_GROUPS) -> Trained:
    """Collect blocks, choose the abstain threshold by stratified CV over files, fit on everything.

    The ledger's examples and the corpus's ``phrasings`` (`sigclass.learn.examples`) are extra training text
    at the weights the parameters give them: in every fold, never scored. ``groups``: what a fold holds out
    whole, a thread or a project (`sigclass.learn.evaluate._folds`)."""
    import time

    if not files:
        raise ModelError("no labelled files found; a corpus folder holds <label>/<name>.log files")
    t0 = time.perf_counter()
    p = {**DEFAULT_PARAMS, **(params or {})}
    examples = (ledger_examples(ledger) if p["example_weight"] > 0 else []) + (
        list(phrasings) if p["phrasing_weight"] > 0 else [])
    collected = collect(files, ledger, examples)
    cfs = [cf for cf in collected if cf.source in ("real", "written")]
    extras = [cf for cf in collected if cf.source not in ("real", "written")]
    labels = {cf.label for cf in cfs}
    if len(labels - set(ABSTAIN)) < 1 or len(labels) < 2:
        raise ModelError(f"the corpus has labels {sorted(labels)}; training needs at least one family and one other label")
    cv = cross_validate(cfs, folds=folds, params=params, extras=extras, by=groups)
    pipe = fit(cfs + extras, params)
    seconds = time.perf_counter() - t0
    meta = {
        "corpus_hash": corpus_hash(files),
        "ledger_hash": ledger_hash(ledger),
        **({"examples": len(extras), "examples_hash": examples_hash(examples)} if examples else {}),
        "labels": sorted(str(c) for c in pipe.classes_),
        "abstain": list(ABSTAIN),
        "threshold": cv.threshold,
        "threshold_both": cv.threshold_both,
        "params": p,
        "cv": {"folds": cv.folds, "groups": cv.groups, "macro_f1": round(cv.scores["macro_f1"], 4),
               "known_accuracy": round(cv.scores["known_accuracy"], 4),
               "quiet_on_clean": round(cv.scores["quiet_on_clean"], 4),
               "modes": {mode: {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()}
                         for mode, m in (cv.modes or {}).items()}},
        "corpus_files": len(cfs),
        "training_blocks": int(sum(len(training_rows(cf)) for cf in cfs + extras)),
        "seed": SEED,
    }
    return Trained(pipe, meta, cv, cfs, seconds)
