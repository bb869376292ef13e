"""The records sigclass emits: one Finding per failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FINDING_KEYS = (
    "family", "title", "role", "status", "confidence", "method", "source", "line", "end_line",
    "time", "worker", "evidence", "fingerprint", "count", "lines", "mitigation", "probes",
    "caveats", "supersedes", "superseded_by", "root", "unit",
)


@dataclass(slots=True)
class Finding:
    family: str
    title: str
    role: str  # root | secondary (secondary: follows a root fault of the same worker)
    status: str  # active | red-herring | retired | unknown
    confidence: float
    method: str  # regex | learned | none
    source: str
    line: int
    end_line: int
    time: str | None
    worker: str | None
    evidence: list[str]
    fingerprint: str
    mitigation: str = ""
    probes: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    supersedes: list[dict[str, str]] = field(default_factory=list)
    superseded_by: list[dict[str, str]] = field(default_factory=list)
    family_role: str = "root"  # the ledger's role for the family
    root: dict[str, Any] | None = None
    count: int = 1
    lines: list[int] = field(default_factory=list)
    unit: str | None = None
    stream: str = ""
    block: list[str] = field(default_factory=list)  # the normalised failure block
    facts: dict[str, str] = field(default_factory=dict)

    def to_dict(self, *, block: bool = False) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in FINDING_KEYS}
        d["lines"] = list(self.lines) or [self.line]
        d["facts"] = dict(self.facts)
        if block:
            d["block"] = list(self.block)
        return d

    def pointer(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "family": self.family,
                "fingerprint": self.fingerprint, "worker": self.worker}


def fold(findings: list[Finding]) -> list[Finding]:
    """Fold repeats of one fingerprint in one source into one finding with a count."""
    out: list[Finding] = []
    seen: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        key = (f.source, f.family, f.fingerprint)
        first = seen.get(key)
        if first is None:
            f.lines = list(f.lines) or [f.line]
            seen[key] = f
            out.append(f)
        else:
            first.count += f.count
            first.lines.extend(f.lines or [f.line])
            first.end_line = max(first.end_line, f.end_line)
    return out
