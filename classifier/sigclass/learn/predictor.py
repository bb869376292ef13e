"""The trained pipeline as the scanner's learned callback, loaded from a verified artefact."""

from __future__ import annotations

from pathlib import Path
from typing import Any
import warnings

from sklearn.pipeline import Pipeline

from sigclass.errors import ModelError
from sigclass.learn.blocktext import ABSTAIN, block_input, decide, retry_pending
from sigclass.learn.corpus import ledger_hash
from sigclass.vocab import SignatureMode


class Predictor:
    """The callable the scanner calls: block bodies -> (family, probability) or None."""

    def __init__(self, pipeline: Pipeline, threshold: float, meta: dict[str, Any]) -> None:
        self.pipeline = pipeline
        self.threshold = float(threshold)
        self.meta = meta
        self.classes = [str(c) for c in pipeline.classes_]

    def set_mode(self, signatures: str) -> None:
        """`both`: the model sees only what no regex explains; use the threshold chosen for that."""
        if signatures == SignatureMode.BOTH and self.meta.get("threshold_both") is not None:
            self.threshold = float(self.meta["threshold_both"])
        elif signatures == SignatureMode.LEARNED:
            self.threshold = float(self.meta["threshold"])

    wants_facts = True  # the scanner passes the source's facts (gpu model, engine flags) along with each block

    def __call__(self, bodies: list[str], facts: dict[str, str] | None = None) -> tuple[str, float] | None:
        text = block_input(bodies, facts)
        if retry_pending(text):
            return None
        return decide(self.pipeline.predict_proba([text])[0], self.classes, self.threshold)


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


def load_pipeline(model: Path | None, ledger) -> Predictor | None:
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
