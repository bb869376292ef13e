"""The one scanner factory: a `Scanner` with its learned callback, under one fallback policy for the model.

Used by the command line, the run post-mortem and the Python API; each
passes how it reports a note, and nothing else decides what happens when the
model cannot be used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable
import warnings

from sigclass.errors import ModelError


def build_scanner(ledger: Any, signatures: str = "both", model: Path | None = None, *, engine: str | None = None,
                  on_note: Callable[[str], None] | None = None, warnings_as_notes: bool = False,
                  require_model: bool = False):
    """The scanner for this ledger and signature mode, its learned callback chosen by `load_learned`."""
    from sigclass.scan.scanner import Scanner

    learned = load_learned(ledger, signatures, model, on_note=on_note, warnings_as_notes=warnings_as_notes,
                           require_model=require_model)
    return Scanner(ledger, engine=engine, signatures=signatures, learned=learned)


def usable_model(ledger: Any, signatures: str, model: Path | None, on_note: Callable[[str], None]) -> tuple[str, Path | None]:
    """The signature mode and model a command can go on with when the user named a model (``--model``).

    A model that cannot be used (missing, corrupt, not sigclass's, stale pin) is reported on ``on_note`` in one
    line and the command carries on with regex signatures only, so no regex finding is lost; only ``learned``
    mode, which has nothing else to go on, stops with the `ModelError`. Returns ``(signatures, model)`` to use,
    unchanged when the model loads (or none was named). For commands whose workers load the model again (runs,
    report, compare); a scan that builds its one scanner here falls back the same way without a second load.
    """
    if model is None or signatures == "regex":
        return signatures, model
    try:
        load_learned(ledger, signatures, model)
    except ModelError as exc:
        if signatures == "learned":
            raise
        on_note(regex_only(exc))
        return "regex", None
    return signatures, model


def regex_only(exc: ModelError) -> str:
    """The one line that says a named model cannot be used and the work goes on with regex signatures."""
    return f"{exc}; carrying on with regex signatures only"


def load_learned(ledger: Any, signatures: str = "both", model: Path | None = None, *,
                 on_note: Callable[[str], None] | None = None, warnings_as_notes: bool = False,
                 require_model: bool = False):
    """The learned callback for this signature mode (None: regex signatures only).

    * ``regex``: no model is loaded.
    * A model named by the user (``model``) must load: its `ModelError` propagates.
    * The shipped model: a `ModelError` propagates in ``learned`` mode, or when there is no ``on_note`` to
      report it on; otherwise it is noted and the scan carries on with regex signatures only.
    * ``require_model``: in ``learned`` mode, having no model at all is an error too.
    * ``warnings_as_notes``: warnings raised while loading the model are passed to ``on_note``.
    """
    learned = None
    if signatures != "regex":
        from sigclass.learn.lazy import load_predictor

        try:
            if warnings_as_notes and on_note is not None:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    learned = load_predictor(model, ledger, on_error=on_note)
                for w in caught:
                    on_note(str(w.message))
            else:
                learned = load_predictor(model, ledger, on_error=on_note)
        except ModelError as exc:
            if signatures == "learned" or model is not None or on_note is None:
                raise
            on_note(f"{exc} (continuing with regex signatures only)")
        if learned is None and signatures == "learned" and require_model:
            raise ModelError("no learned model is installed; train one with `sigclass train` or use signatures='regex'")
    return learned
