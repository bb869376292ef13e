"""The learned model: features, estimator, corpus, training, artefacts and the predictor the scanner calls."""

from __future__ import annotations


def __getattr__(name: str):
    """Models pickled before the package layout named their classes `sigclass.learn.<Class>`: resolve them here."""
    if name in ("BlockText", "CalibratedLinearClassifier"):
        from sigclass.learn import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module 'sigclass.learn' has no attribute {name!r}")
