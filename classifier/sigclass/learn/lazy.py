"""The learned callback as the scanner sees it, without paying for scikit-learn up front.

Importing scikit-learn costs about a second; most logs never need the model
(every failure matches a regex signature, or there is no failure). So the
shipped model is verified against its pinned hash at once (cheap), and
loaded only when the first block that no regex explains arrives — from the
compact export (plain numpy arrays: no scikit-learn, nothing unpickled) when
the package ships one, else from the joblib pipeline. A model named with `--model` is loaded and verified at once, so a
bad file is refused before the scan starts.
"""

from __future__ import annotations

from pathlib import Path
import sys
from typing import Any, Callable

from sigclass.errors import ModelError
from sigclass.vocab import SignatureMode


class LazyPredictor:
    """Calls `predictor.load_pipeline` on first use; a model that then fails is reported once and skipped."""

    wants_facts = True

    def __init__(self, ledger: Any, on_error: Callable[[str], None] | None = None) -> None:
        self._ledger = ledger
        self._mode = SignatureMode.BOTH
        self._predictor: Any = None
        self._failed = False
        self._on_error = on_error or (lambda msg: sys.stderr.write(f"sigclass: {msg}\n"))

    def set_mode(self, signatures: str) -> None:
        self._mode = signatures
        if self._predictor is not None:
            self._predictor.set_mode(signatures)

    def _load(self) -> Any:
        from sigclass.learn.predictor import load_pipeline

        return load_pipeline(None, self._ledger)

    def __call__(self, bodies: list[str], facts: dict[str, str] | None = None) -> tuple[str, float] | None:
        if self._predictor is None:
            if self._failed:
                return None
            try:
                self._predictor = self._load()
            except ModelError as exc:
                self._on_error(f"{exc} (continuing with regex signatures only)")
                self._predictor = None
            if self._predictor is None:
                self._failed = True
                return None
            self._predictor.set_mode(self._mode)
        return self._predictor(bodies, facts)


class LazyCompact(LazyPredictor):
    """The shipped compact model (plain arrays): checked against its pin and loaded on first use."""

    def __init__(self, path: Path, sha256: str, ledger: Any, on_error: Callable[[str], None] | None) -> None:
        super().__init__(ledger, on_error)
        self._path, self._sha = path, sha256

    def _load(self) -> Any:
        from sigclass.learn.blocktext import ABSTAIN
        from sigclass.learn.compact import CompactModel, CompactPredictor

        model = CompactModel.load(self._path, sha256=self._sha)
        missing = sorted(c for c in model.classes if c not in ABSTAIN and c not in self._ledger)
        if missing:
            raise ModelError(f"{self._path}: model predicts families this ledger does not define ({', '.join(missing)}); "
                             "pass the --ledger that defines them or retrain with `sigclass train`")
        return CompactPredictor(model)


def load_predictor(model: Path | None, ledger: Any, *, on_error: Callable[[str], None] | None = None):
    """The scanner's learned callback, or None when there is no model at all (the one entry point: cli, runs and api)."""
    from sigclass.learn import artefact

    if model is not None:
        from sigclass.learn.predictor import load_pipeline

        return load_pipeline(model, ledger)

    folder = artefact.shipped_dir()
    compact_pin = artefact.pinned_compact_hash(folder)
    if compact_pin is not None and (folder / artefact.COMPACT_FILE).exists():
        return LazyCompact(folder / artefact.COMPACT_FILE, compact_pin, ledger, on_error)
    path = folder / artefact.SHIPPED_FILE
    if not path.exists():
        return None
    pin = artefact.pinned_hash(folder)
    digest = artefact.sha256_file(path)
    if pin is None or digest != pin:
        # the full loader words this refusal (with the rebuild command)
        from sigclass.learn.predictor import load_pipeline

        return load_pipeline(None, ledger)
    return LazyPredictor(ledger, on_error)
