"""Learned signatures (placeholder until the trained model lands): no model, no predictions."""

from __future__ import annotations

from pathlib import Path


def load_predictor(model: Path | None, ledger):
    if model is not None:
        from sigclass.errors import ModelError

        raise ModelError(f"{model}: learned signatures are not available in this build")
    return None
