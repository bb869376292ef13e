"""sigclass: failure-log signature classifier for ML and GPU runs."""

from __future__ import annotations

__version__ = "0.1.0"

_API = (
    "Classification", "FindingRecord", "Gotcha", "GotchaSummary", "RootFault", "RunAnalysis", "RunUnit",
    "SystematicFault", "analyze_run", "classify", "explain", "list_gotchas", "compare", "Comparison",
    "Verdict", "Cause", "Victim",
)


def __getattr__(name: str):
    """The Python API, imported on first use so that the command line starts fast."""
    if name in _API:
        from sigclass import api

        return getattr(api, name)
    raise AttributeError(f"module 'sigclass' has no attribute {name!r}")


from sigclass.errors import InputError, ModelError, SigclassError, SignatureError  # noqa: E402

__all__ = [
    "__version__",
    "classify", "analyze_run", "compare", "explain", "list_gotchas",
    "Classification", "Comparison", "FindingRecord", "RunAnalysis", "RunUnit", "RootFault", "SystematicFault",
    "Gotcha", "GotchaSummary", "Verdict", "Cause", "Victim",
    "SigclassError", "InputError", "SignatureError", "ModelError",
]
