"""The frozen results the Python API returns, each with ``to_dict()`` (plain JSON types, the shapes of
``sigclass schema``) and ``from_dict()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Mapping, TypedDict

from sigclass import records
from sigclass.problems import from_dict as problem_from_dict, ProblemLine, to_dicts
from sigclass.records import Finding, Supersede, Verdict
from sigclass.typeschema import frozen_copy, J, Plain
from sigclass.vocab import Role, Status, UnitStatus


class FindingRecord(frozen_copy(Finding, "FindingRecord", optional=("workers", "facts"), module=__name__)):
    """One classified failure: what it is, the evidence, and what to do about it.

    Its fields are the JSON fields of `records.Finding` (the keys of ``sigclass scan --format json``), frozen:
    lists are tuples, objects mappings.
    """

    __slots__ = ()
    noun = "finding"

    @property
    def known(self) -> bool:
        """True when a ledger family explains the failure."""
        return self.family != "unknown"

    @classmethod
    def from_finding(cls, f: Finding) -> FindingRecord:
        return cls.from_dict(f.to_dict())

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FindingRecord:
        if isinstance(d, Mapping) and not d.get("workers") and d.get("worker") is not None:
            d = {**d, "workers": [d["worker"]]}  # an older finding: its own worker
        return super().from_dict(d)


FINDING_DESCRIPTION = "One failure in a log, classified against the gotcha ledger."


@dataclass(frozen=True)
class Classification(Plain):
    """The findings of one log, repeats folded, in the order they occur, and the log's verdict: which fault started
    it (family, worker, line, fingerprint, confidence), what it took down, and any independent second fault."""

    source: str
    findings: tuple[Annotated[FindingRecord, J(title="sigclass finding", description=FINDING_DESCRIPTION)], ...]
    problems: tuple[ProblemLine, ...] = ()  # each a line (`str`) with .path, .kind and .message
    verdict: Annotated[Verdict | None, J(required=False, description="After the whole log: the fault that started it, "
                                                                     "what it took down, independent faults.")] = None

    @property
    def roots(self) -> tuple[FindingRecord, ...]:
        return tuple(f for f in self.findings if f.role == "root")

    @property
    def families(self) -> tuple[str, ...]:
        """Distinct families found, first occurrence first."""
        return tuple(dict.fromkeys(f.family for f in self.findings))

    def __bool__(self) -> bool:
        return bool(self.findings)


FamilyId = Annotated[str, J(pattern="^[a-z0-9]+(-[a-z0-9]+)*$")]
# a signature's own status (a finding's may also be `unknown` or `recovered`)
SignatureStatus = Annotated[Status, J(enum=[Status.ACTIVE.value, Status.RED_HERRING.value, Status.RETIRED.value])]
Patterns = tuple[str, ...]


class Match(TypedDict):
    any: Patterns
    all: Patterns
    none: Patterns
    multiline: Patterns


class Fact(TypedDict):
    name: str
    pattern: str


class OverTimeRule(TypedDict):
    """A rule read from what the log does over time (its whole entry; `kind` and `name` always)."""

    kind: Annotated[str, J(enum=["metric", "storm", "stall", "rate", "recovery"])]
    name: str


class Conditions(TypedDict):
    require: dict[str, str]
    prefer: dict[str, str]


@dataclass(frozen=True)
class Gotcha(Plain):
    """A whole ledger entry (``sigclass explain --format json``)."""

    id: FamilyId
    title: str
    role: Role
    status: SignatureStatus
    priority: int
    match: Match
    min_count: Annotated[int, J(minimum=1)]
    # `any` patterns that count lines: pattern -> lines needed
    pattern_min_count: Mapping[str, Annotated[int, J(minimum=1)]]
    facts: tuple[Fact, ...]
    conditions: Conditions
    mitigation: str
    probes: tuple[str, ...]
    caveats: tuple[str, ...]
    supersedes: tuple[Supersede, ...]
    superseded_by: tuple[Supersede, ...]
    references: tuple[str, ...]
    over_time: Annotated[tuple[OverTimeRule, ...], J(
        description="Rules read from what the log does over time (metric, storm, stall, rate, recovery).")]
    path: Annotated[str, J(description="The signature file the entry was loaded from.")]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Gotcha:
        """A ledger entry (`Signature.to_dict()`); entries of older versions may lack the newer keys."""
        return super().from_dict({"pattern_min_count": {}, "over_time": [], **d} if isinstance(d, Mapping) else d)


@dataclass(frozen=True)
class GotchaSummary(Plain):
    """One line of the ledger: id, title, role, status."""

    id: FamilyId
    title: str
    role: Role
    status: SignatureStatus


class RunUnit(frozen_copy(records.Unit, "RunUnit", module=__name__)):
    """One unit (shard, rank, task) of a run and what became of it (the JSON fields of `records.Unit`)."""

    __slots__ = ()


class RootFault(frozen_copy(records.RootFault, "RootFault", optional=("caveats", "superseded_by"), module=__name__)):
    """A root fault of a run and its blast radius, the units lost to it (the JSON fields of `records.RootFault`)."""

    __slots__ = ()


class SystematicFault(frozen_copy(records.Systematic, "SystematicFault", optional=("fingerprint",), module=__name__)):
    """One family striking several workers separately; `fingerprint` only for `unknown`."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return records.systematic_dict(self.family, self.workers, self.fingerprint)


class RunAnalysis(frozen_copy(records.Run, "RunAnalysis", module=__name__)):
    """The post-mortem of one run directory: the run object of ``sigclass runs --format json``."""

    __slots__ = ()

    @property
    def failed(self) -> bool:
        return any(u.status != UnitStatus.OK for u in self.units)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunAnalysis:
        if isinstance(d, Mapping) and "path" not in d and "run" in d:
            d = {**d, "path": d["run"]}  # an older run object
        return super().from_dict(d)


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
