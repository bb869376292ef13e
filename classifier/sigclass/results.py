"""The frozen results the Python API returns, each with ``to_dict()`` (plain JSON types, the shapes of
``sigclass schema``) and ``from_dict()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from sigclass.errors import InputError
from sigclass.problems import from_dict as problem_from_dict, ProblemLine, to_dicts
from sigclass.records import Finding, FINDING_KEYS, ROOT_FAULT_KEYS, RUN_KEYS, shape, systematic_dict, UNIT_KEYS
from sigclass.vocab import UnitStatus


@dataclass(frozen=True)
class FindingRecord:
    """One classified failure: what it is, the evidence, and what to do about it."""

    family: str
    title: str
    role: str
    status: str
    confidence: float
    method: str
    source: str
    line: int
    end_line: int
    time: str | None
    worker: str | None
    evidence: tuple[str, ...]
    fingerprint: str
    count: int
    lines: tuple[int, ...]
    mitigation: str
    probes: tuple[str, ...]
    caveats: tuple[str, ...]
    supersedes: tuple[Mapping[str, str], ...]
    superseded_by: tuple[Mapping[str, str], ...]
    root: Mapping[str, Any] | None
    unit: str | None
    facts: Mapping[str, str] = field(default_factory=dict)
    workers: tuple[str, ...] = ()  # every worker of the folded repeats

    @property
    def known(self) -> bool:
        """True when a ledger family explains the failure."""
        return self.family != "unknown"

    @classmethod
    def from_finding(cls, f: Finding) -> FindingRecord:
        return cls.from_dict(f.to_dict())

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FindingRecord:
        missing = [k for k in (*FINDING_KEYS, "facts") if k not in d]
        if missing:
            raise InputError(f"not a finding: missing {', '.join(missing)}")
        return cls(
            family=d["family"], title=d["title"], role=d["role"], status=d["status"],
            confidence=float(d["confidence"]), method=d["method"], source=d["source"], line=int(d["line"]),
            end_line=int(d["end_line"]), time=d["time"], worker=d["worker"], evidence=tuple(d["evidence"]),
            fingerprint=d["fingerprint"], count=int(d["count"]), lines=tuple(d["lines"]),
            mitigation=d["mitigation"], probes=tuple(d["probes"]), caveats=tuple(d["caveats"]),
            supersedes=tuple(dict(s) for s in d["supersedes"]),
            superseded_by=tuple(dict(s) for s in d["superseded_by"]),
            root=dict(d["root"]) if d["root"] is not None else None, unit=d["unit"], facts=dict(d["facts"]),
            workers=tuple(d.get("workers") or ([d["worker"]] if d["worker"] is not None else [])),
        )

    def to_dict(self) -> dict[str, Any]:
        """The same keys as ``sigclass scan --format json`` prints for a finding."""
        return {
            "family": self.family, "title": self.title, "role": self.role, "status": self.status,
            "confidence": self.confidence, "method": self.method, "source": self.source, "line": self.line,
            "end_line": self.end_line, "time": self.time, "worker": self.worker, "evidence": list(self.evidence),
            "fingerprint": self.fingerprint, "count": self.count, "lines": list(self.lines),
            "mitigation": self.mitigation, "probes": list(self.probes), "caveats": list(self.caveats),
            "supersedes": [dict(s) for s in self.supersedes],
            "superseded_by": [dict(s) for s in self.superseded_by],
            "root": dict(self.root) if self.root is not None else None, "unit": self.unit,
            "facts": dict(self.facts), "workers": list(self.workers),
        }


@dataclass(frozen=True)
class Classification:
    """The findings of one log, repeats folded, in the order they occur."""

    source: str
    findings: tuple[FindingRecord, ...]
    problems: tuple[ProblemLine, ...] = ()  # each a line (`str`) with .path, .kind and .message

    @property
    def roots(self) -> tuple[FindingRecord, ...]:
        return tuple(f for f in self.findings if f.role == "root")

    @property
    def families(self) -> tuple[str, ...]:
        """Distinct families found, first occurrence first."""
        return tuple(dict.fromkeys(f.family for f in self.findings))

    def __bool__(self) -> bool:
        return bool(self.findings)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Classification:
        return cls(d["source"], tuple(FindingRecord.from_dict(f) for f in d["findings"]),
                   tuple(problem_from_dict(p) for p in d.get("problems", ())))

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "findings": [f.to_dict() for f in self.findings],
                "problems": to_dicts(self.problems)}


@dataclass(frozen=True)
class Gotcha:
    """A whole ledger entry (``sigclass explain --format json``)."""

    id: str
    title: str
    role: str
    status: str
    priority: int
    match: Mapping[str, tuple[str, ...]]
    min_count: int
    pattern_min_count: Mapping[str, int]  # `any` patterns that count lines: pattern -> lines needed
    facts: tuple[Mapping[str, str], ...]
    conditions: Mapping[str, Mapping[str, str]]
    mitigation: str
    probes: tuple[str, ...]
    caveats: tuple[str, ...]
    supersedes: tuple[Mapping[str, str], ...]
    superseded_by: tuple[Mapping[str, str], ...]
    references: tuple[str, ...]
    path: str
    over_time: tuple[Mapping[str, Any], ...] = ()  # rules read from what the log does over time

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Gotcha:
        return cls(
            id=d["id"], title=d["title"], role=d["role"], status=d["status"], priority=int(d["priority"]),
            match={k: tuple(v) for k, v in d["match"].items()}, min_count=int(d["min_count"]),
            pattern_min_count={str(k): int(v) for k, v in d.get("pattern_min_count", {}).items()},
            facts=tuple(dict(x) for x in d["facts"]),
            conditions={k: dict(v) for k, v in d["conditions"].items()}, mitigation=d["mitigation"],
            probes=tuple(d["probes"]), caveats=tuple(d["caveats"]),
            supersedes=tuple(dict(s) for s in d["supersedes"]),
            superseded_by=tuple(dict(s) for s in d["superseded_by"]),
            references=tuple(d["references"]), path=d["path"],
            over_time=tuple(dict(r) for r in d.get("over_time", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "role": self.role, "status": self.status,
            "priority": self.priority, "match": {k: list(v) for k, v in self.match.items()},
            "min_count": self.min_count, "pattern_min_count": dict(self.pattern_min_count),
            "facts": [dict(x) for x in self.facts],
            "conditions": {k: dict(v) for k, v in self.conditions.items()}, "mitigation": self.mitigation,
            "probes": list(self.probes), "caveats": list(self.caveats),
            "supersedes": [dict(s) for s in self.supersedes], "superseded_by": [dict(s) for s in self.superseded_by],
            "references": list(self.references), "path": self.path,
            "over_time": [dict(r) for r in self.over_time],
        }


@dataclass(frozen=True)
class GotchaSummary:
    """One line of the ledger: id, title, role, status."""

    id: str
    title: str
    role: str
    status: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GotchaSummary:
        return cls(d["id"], d["title"], d["role"], d["status"])

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "role": self.role, "status": self.status}


@dataclass(frozen=True)
class RunUnit:
    """One unit (shard, rank, task) of a run and what became of it."""

    unit: str
    worker: str | None
    status: str  # ok | failed | incomplete
    family: str | None
    role: str | None  # root | cascade | None
    root: str | None  # the root fault's unit, for a cascade victim
    time: str | None
    fingerprint: str | None
    evidence: tuple[str, ...]
    source: str | None
    line: int | None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunUnit:
        return cls(d["unit"], d["worker"], d["status"], d["family"], d["role"], d["root"], d["time"],
                   d["fingerprint"], tuple(d["evidence"]), d["source"], d["line"])

    def to_dict(self) -> dict[str, Any]:
        return shape(self, UNIT_KEYS)


@dataclass(frozen=True)
class RootFault:
    """A root fault of a run and its blast radius (the units lost to it)."""

    unit: str
    worker: str | None
    family: str
    time: str | None
    fingerprint: str | None
    victims: tuple[str, ...]
    evidence: tuple[str, ...]
    source: str | None
    line: int | None
    mitigation: str
    probes: tuple[str, ...]
    notes: tuple[str, ...]
    caveats: tuple[str, ...] = ()
    superseded_by: tuple[Mapping[str, str], ...] = ()  # {id, note}: the fix to try first

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RootFault:
        return cls(d["unit"], d["worker"], d["family"], d["time"], d["fingerprint"], tuple(d["victims"]),
                   tuple(d["evidence"]), d["source"], d["line"], d["mitigation"], tuple(d["probes"]),
                   tuple(d["notes"]), tuple(d.get("caveats", ())),
                   tuple(dict(s) for s in d.get("superseded_by", ())))

    def to_dict(self) -> dict[str, Any]:
        return shape(self, ROOT_FAULT_KEYS)


@dataclass(frozen=True)
class SystematicFault:
    """One family striking several workers separately."""

    family: str
    workers: int
    fingerprint: str | None = None  # only for `unknown`

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SystematicFault:
        return cls(d["family"], int(d["workers"]), d.get("fingerprint"))

    def to_dict(self) -> dict[str, Any]:
        return systematic_dict(self.family, self.workers, self.fingerprint)


@dataclass(frozen=True)
class RunAnalysis:
    """The post-mortem of one run directory: the run object of ``sigclass runs --format json``."""

    run: str
    path: str
    units: tuple[RunUnit, ...]
    roots: tuple[RootFault, ...]
    systematic: tuple[SystematicFault, ...]
    problems: tuple[ProblemLine, ...]  # each a line (`str`) with .path, .kind and .message
    summary: str

    @property
    def failed(self) -> bool:
        return any(u.status != UnitStatus.OK for u in self.units)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunAnalysis:
        return cls(
            run=d["run"], path=d.get("path", d["run"]), units=tuple(RunUnit.from_dict(u) for u in d["units"]),
            roots=tuple(RootFault.from_dict(r) for r in d["roots"]),
            systematic=tuple(SystematicFault.from_dict(s) for s in d["systematic"]),
            problems=tuple(problem_from_dict(p) for p in d["problems"]), summary=d["summary"],
        )

    def to_dict(self) -> dict[str, Any]:
        return {**shape(self, RUN_KEYS), "problems": to_dicts(self.problems)}


@dataclass(frozen=True)
class Comparison:
    """The comparison of several runs (`sigclass.compare`); `to_dict()` is the JSON of `sigclass compare`."""

    runs: tuple[str, ...]
    units: int
    discriminating: tuple[dict[str, Any], ...]
    probes: tuple[dict[str, Any], ...]
    verdicts: tuple[dict[str, Any], ...]
    not_comparable: tuple[dict[str, Any], ...]
    problems: tuple[ProblemLine, ...] = ()  # each a line (`str`) with .path, .kind and .message

    def verdict(self, family: str) -> dict[str, Any] | None:
        return next((v for v in self.verdicts if v["family"] == family), None)

    def to_dict(self) -> dict[str, Any]:
        return {"runs": list(self.runs), "units": self.units, "discriminating": [dict(d) for d in self.discriminating],
                "probes": [dict(p) for p in self.probes], "verdicts": [dict(v) for v in self.verdicts],
                "not_comparable": [dict(n) for n in self.not_comparable], "problems": to_dicts(self.problems)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Comparison":
        return cls(tuple(d["runs"]), int(d["units"]), tuple(d["discriminating"]), tuple(d["probes"]),
                   tuple(d["verdicts"]), tuple(d["not_comparable"]),
                   tuple(problem_from_dict(p) for p in d.get("problems", ())))
