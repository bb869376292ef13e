"""sigclass: failure-log signature classifier for ML and GPU runs."""

from __future__ import annotations

__version__ = "0.1.0"

from sigclass.api import (  # noqa: E402
    Classification,
    FindingRecord,
    Gotcha,
    GotchaSummary,
    RootFault,
    RunAnalysis,
    RunUnit,
    SystematicFault,
    analyze_run,
    classify,
    explain,
    list_gotchas,
)
from sigclass.errors import InputError, ModelError, SigclassError, SignatureError  # noqa: E402

__all__ = [
    "__version__",
    "classify", "analyze_run", "explain", "list_gotchas",
    "Classification", "FindingRecord", "RunAnalysis", "RunUnit", "RootFault", "SystematicFault",
    "Gotcha", "GotchaSummary",
    "SigclassError", "InputError", "SignatureError", "ModelError",
]
