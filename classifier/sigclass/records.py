"""The records sigclass emits: one Finding per failure; per run directory, its Units, RootFaults, Systematic faults, the Run and a Batch of runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sigclass.vocab import Role, UnitRole, UnitStatus

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
    family_role: str = Role.ROOT  # the ledger's role for the family
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


STATUSES = tuple(UnitStatus)


ROLES = tuple(UnitRole)


@dataclass(slots=True)
class Unit:
    """One unit of a run and what became of it."""

    unit: str
    worker: str | None
    status: str  # ok | failed | incomplete
    family: str | None = None
    role: str | None = None  # root | cascade | None
    root: str | None = None  # the root unit's id, for a cascade victim
    time: str | None = None
    fingerprint: str | None = None
    evidence: list[str] = field(default_factory=list)
    source: str | None = None
    line: int | None = None
    start: str | None = None  # start time (ordering within a worker)
    order: tuple = ()
    distributed: bool = False  # a rank of a distributed job (its id is the rank / pid / task)
    finding: Finding | None = None  # the finding that names its family

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "worker": self.worker, "status": self.status, "family": self.family,
            "role": self.role, "root": self.root, "time": self.time, "fingerprint": self.fingerprint,
            "evidence": list(self.evidence), "source": self.source, "line": self.line,
        }


@dataclass(slots=True)
class RootFault:
    """A root fault and its blast radius."""

    unit: str
    worker: str | None
    family: str
    time: str | None
    fingerprint: str | None
    victims: list[str]
    evidence: list[str]
    source: str | None
    line: int | None
    mitigation: str = ""
    probes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # red-herring / superseded notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "worker": self.worker, "family": self.family, "time": self.time,
            "fingerprint": self.fingerprint, "victims": list(self.victims), "evidence": list(self.evidence),
            "source": self.source, "line": self.line, "mitigation": self.mitigation, "probes": list(self.probes),
            "notes": list(self.notes),
        }


@dataclass(slots=True)
class Systematic:
    """One family striking several workers separately."""

    family: str
    workers: int
    units: list[str]
    fingerprint: str | None = None  # only for `unknown`, whose repeats group by fingerprint

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"family": self.family, "workers": self.workers}
        if self.fingerprint is not None:
            d["fingerprint"] = self.fingerprint
        return d


@dataclass(slots=True)
class Run:
    """The post-mortem of one run directory."""

    run: str
    path: str
    units: list[Unit]
    roots: list[RootFault]
    systematic: list[Systematic]
    problems: list[str]
    summary: str
    readable: bool = True  # False: nothing in the directory could be read at all
    noun: str = "units"
    workers: int = 0
    launcher: list[str] = field(default_factory=list)  # failures printed by the launcher, not by a unit

    @property
    def failed(self) -> bool:
        return any(u.status != UnitStatus.OK for u in self.units)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run, "path": self.path,
            "units": [u.to_dict() for u in self.units],
            "roots": [r.to_dict() for r in self.roots],
            "systematic": [s.to_dict() for s in self.systematic],
            "problems": list(self.problems),
            "summary": self.summary,
        }


@dataclass(slots=True)
class Batch:
    runs: list[Run]

    @property
    def unreadable(self) -> bool:
        """True when some input could not be read at all (exit status 2)."""
        return any(not r.readable for r in self.runs)

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.runs)

    def to_dict(self) -> dict[str, Any]:
        units = [u for r in self.runs for u in r.units]
        return {
            "runs": [r.to_dict() for r in self.runs],
            "summary": {
                "runs": len(self.runs),
                "units": len(units),
                "failed": sum(1 for u in units if u.status == UnitStatus.FAILED),
                "incomplete": sum(1 for u in units if u.status == UnitStatus.INCOMPLETE),
                "root_faults": sum(len(r.roots) for r in self.runs),
                "problems": sum(len(r.problems) for r in self.runs),
            },
        }
