"""The records sigclass emits: one Finding per failure; per run directory, its Units, RootFaults, Systematic faults, the Run and a Batch of runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from sigclass.problems import to_dicts
from sigclass.vocab import Role, UnitRole, UnitStatus

if TYPE_CHECKING:
    from sigclass.text.prefixes import Stream

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
    stream: Stream | None = None
    block: list[str] = field(default_factory=list)  # the normalised failure block
    facts: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. a condition met by a fact another worker printed
    workers: list[str] = field(default_factory=list)  # every worker of the folded repeats, first seen first

    def to_dict(self, *, block: bool = False) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in FINDING_KEYS}
        d["lines"] = list(self.lines) or [self.line]
        d["workers"] = self.all_workers()
        d["facts"] = dict(self.facts)
        if block:
            d["block"] = list(self.block)
        return d

    def all_workers(self) -> list[str]:
        """The workers this finding (and the repeats folded into it) came from."""
        return list(self.workers) or ([self.worker] if self.worker is not None else [])

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
            f.workers = f.all_workers()
            seen[key] = f
            out.append(f)
        else:
            first.count += f.count
            first.lines.extend(f.lines or [f.line])
            first.workers.extend(w for w in f.all_workers() if w not in first.workers)
            first.end_line = max(first.end_line, f.end_line)
    return out


STATUSES = tuple(UnitStatus)

# The JSON shape of each run record, in output order: the internal records (here) and the API's frozen results
# (results.py) both write exactly these keys.
UNIT_KEYS = ("unit", "worker", "status", "family", "role", "root", "time", "fingerprint", "evidence", "source", "line")
ROOT_FAULT_KEYS = ("unit", "worker", "family", "time", "fingerprint", "victims", "evidence", "source", "line",
                   "mitigation", "probes", "notes", "caveats", "superseded_by")
RUN_KEYS = ("run", "path", "units", "roots", "systematic", "problems", "summary")


def plain(value: Any) -> Any:
    """A field as plain JSON: records by their `to_dict()`, sequences as lists, the rest as it is."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if to_dict is not None else value


def shape(record: Any, keys: Sequence[str]) -> dict[str, Any]:
    """The record's JSON object: these keys, in this order."""
    return {k: plain(getattr(record, k)) for k in keys}


def systematic_dict(family: str, workers: int, fingerprint: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {"family": family, "workers": workers}
    if fingerprint is not None:
        d["fingerprint"] = fingerprint
    return d


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
    facts: dict[str, str] = field(default_factory=dict)  # context facts: its own log's, then its node's and job's

    def to_dict(self) -> dict[str, Any]:
        return shape(self, UNIT_KEYS)


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
    caveats: list[str] = field(default_factory=list)  # the ledger's caveats of the family, whole
    superseded_by: list[dict[str, str]] = field(default_factory=list)  # {id, note}: the fix to try first

    def to_dict(self) -> dict[str, Any]:
        return shape(self, ROOT_FAULT_KEYS)


@dataclass(slots=True)
class Systematic:
    """One family striking several workers separately."""

    family: str
    workers: int
    units: list[str]
    fingerprint: str | None = None  # only for `unknown`, whose repeats group by fingerprint

    def to_dict(self) -> dict[str, Any]:
        return systematic_dict(self.family, self.workers, self.fingerprint)


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
        return {**shape(self, RUN_KEYS), "problems": to_dicts(self.problems)}


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
