"""sigclass: failure-log signature classifier for ML and GPU runs."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
