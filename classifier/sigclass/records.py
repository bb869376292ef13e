"""The records sigclass emits: one Finding per failure and one Verdict per log (its Cause, Victims and
independent faults); per run directory, its Units, RootFaults, Systematic faults, the Run and a Batch of runs.

Each record's JSON is its fields in order, less those marked internal; their
annotations (with `J` keywords) are the JSON types. The JSON Schemas
(`outputs/schemas.py`) and the API's frozen results (`results.py`) are derived
from these classes by `sigclass.typeschema`, so a field is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Mapping, NotRequired, Sequence, TypedDict

from sigclass.problems import ProblemLine, to_dicts
from sigclass.typeschema import INTERNAL, J, json_keys, plain
from sigclass.vocab import CauseBasis, Method, Role, Status, UnitRole, UnitStatus

if TYPE_CHECKING:
    from sigclass.text.prefixes import Stream


class Supersede(TypedDict):
    """A supersede link of the ledger: the other family and why."""

    id: str
    note: str


class Pointer(TypedDict):
    """Where a root fault was seen (`Finding.pointer()`)."""

    source: str
    line: int
    family: str
    fingerprint: str
    worker: NotRequired[str | None]


Line = Annotated[int, J(minimum=0)]


@dataclass(slots=True)
class Finding:
    family: Annotated[str, J(description="Family id from the ledger, or 'unknown'.")]
    title: str
    role: Annotated[Role, J(description="secondary: this failure follows a root fault (see 'root'); root otherwise.")]
    status: Annotated[Status, J(description="The ledger status of the family; 'unknown' for a failure no family explains; "
                                            "'recovered' for an error after which the same worker's progress went on.")]
    confidence: Annotated[float, J(minimum=0, maximum=1)]
    method: Method  # regex | learned | none
    source: Annotated[str, J(description="The log file, or '<text>' for text given inline.")]
    line: Line
    end_line: Line
    time: Annotated[str | None, J(description="ISO-8601 time of the failure, when the log shows one.")]
    worker: str | None
    evidence: Annotated[list[str], J(description="The log lines that matched.")]
    fingerprint: Annotated[str, J(description="Stable hash of the masked key lines: repeats share it.")]
    count: Annotated[int, J(minimum=1, description="Occurrences folded into this finding.")] = 1
    lines: list[Line] = field(default_factory=list)
    mitigation: Annotated[str, J(description="What to do about it.")] = ""
    probes: Annotated[list[str], J(description="What to check first, before any code hunt.")] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    supersedes: list[Supersede] = field(default_factory=list)
    superseded_by: list[Supersede] = field(default_factory=list)
    root: Annotated[Pointer | None, J(description="For a secondary finding: the root fault it follows.")] = None
    unit: str | None = None
    workers: Annotated[list[str], J(description="Every worker whose repeats are folded into this finding.")] = field(
        default_factory=list)  # first seen first
    facts: Annotated[dict[str, str], J(description="Context the log states (GPU model, engine version, ...).")] = field(
        default_factory=dict)
    family_role: str = field(default=Role.ROOT, metadata=INTERNAL)  # the ledger's role for the family
    stream: Stream | None = field(default=None, metadata=INTERNAL)
    block: list[str] = field(default_factory=list, metadata=INTERNAL)  # the normalised failure block
    notes: list[str] = field(default_factory=list, metadata=INTERNAL)  # e.g. a condition met by a fact another worker printed
    timed: bool = field(default=True, metadata=INTERNAL)  # its time is its own stream's, not inherited from another worker's line

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


FINDING_KEYS = json_keys(Finding)


MAX_LINES_KEPT = 1000  # line numbers a folded finding keeps (its count goes on counting)
MAX_EVIDENCE_CHARS = 4096  # per evidence line, in a finding a writer keeps until the end


class Folder:
    """`fold`, one finding at a time, in memory bounded per fingerprint: a folded finding keeps its first
    MAX_LINES_KEPT line numbers. With copy=True (a writer's), the first of each kind is kept as a copy without
    its failure block and with evidence lines cut at MAX_EVIDENCE_CHARS, so that the scanner's own finding
    is left as it is; what changes on that finding after it was folded in (the source's verdict: role,
    status, root, caveats, facts; counted evidence: more lines) is read from it when the folded ones are
    asked for."""

    def __init__(self, *, copy: bool = False) -> None:
        # key -> (the folded finding, the first one as found, its count and number of lines when folded in)
        self.seen: dict[tuple[str, str, str], tuple[Finding, Finding, int, int]] = {}
        self.copy = copy

    def add(self, f: Finding) -> bool:
        """Fold `f` in; True when it is the first of its kind (source, family, fingerprint)."""
        key = (f.source, f.family, f.fingerprint)
        got = self.seen.get(key)
        if got is None:
            first = f
            if self.copy:
                import copy

                first = copy.copy(f)
                first.block = []
                first.evidence = [e[:MAX_EVIDENCE_CHARS] for e in f.evidence]
            first.lines = (list(f.lines) or [f.line])[:MAX_LINES_KEPT]
            first.workers = f.all_workers()
            self.seen[key] = (first, f, f.count, len(f.lines))
            return True
        first = got[0]
        first.count += f.count
        room = MAX_LINES_KEPT - len(first.lines)
        if room > 0:
            first.lines.extend((f.lines or [f.line])[:room])
        first.workers.extend(w for w in f.all_workers() if w not in first.workers)
        first.end_line = max(first.end_line, f.end_line)
        return False

    def findings(self) -> list[Finding]:
        for key, (first, original, count, nlines) in self.seen.items():
            if first is not original:
                first.role, first.status, first.root = original.role, original.status, original.root
                first.caveats, first.facts = list(original.caveats), dict(original.facts)
                first.count += original.count - count
                room = MAX_LINES_KEPT - len(first.lines)
                if room > 0:
                    first.lines.extend(original.lines[nlines:nlines + room])
                first.end_line = max(first.end_line, original.end_line)
                self.seen[key] = (first, original, original.count, len(original.lines))
        return [first for first, *_ in self.seen.values()]


def fold(findings: list[Finding]) -> list[Finding]:
    """Fold repeats of one fingerprint in one source into one finding with a count."""
    folder = Folder()
    for f in findings:
        folder.add(f)
    return folder.findings()


# --------------------------------------------------------------------------- one verdict per log

@dataclass(frozen=True, slots=True)
class Cause:
    """The fault a verdict names as the cause of a log's failures, or an independent second fault."""

    family: Annotated[str, J(description="Family id from the ledger, or 'unknown'.")]
    worker: Annotated[str | None, J(description="The rank, task or process it struck (None: the log does not say).")]
    line: Line
    fingerprint: str
    confidence: Annotated[float, J(minimum=0, maximum=1, description="How sure: a fault in the worker's own lines keeps "
                                                                      "its finding's; one inferred from an exit code less.")]
    time: str | None = None
    basis: CauseBasis = CauseBasis.OWN_LINES

    def to_dict(self) -> dict[str, Any]:
        return {k: plain(getattr(self, k)) for k in json_keys(Cause)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cause:
        return cls(d["family"], d["worker"], int(d["line"]), d["fingerprint"], float(d["confidence"]), d.get("time"),
                   CauseBasis(d.get("basis", CauseBasis.OWN_LINES)))


@dataclass(frozen=True, slots=True)
class Victim:
    """A failure the cause explains: the family it printed itself (None: it printed none), its worker, its line."""

    family: str | None
    worker: str | None
    line: Line

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in json_keys(Victim)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Victim:
        return cls(d["family"], d["worker"], int(d["line"]))


@dataclass(frozen=True, slots=True)
class Verdict:
    """One log's answer after its whole input: the cause (None: no failure), its victims, independent faults."""

    source: str
    cause: Cause | None
    victims: tuple[Victim, ...] = ()
    independent: tuple[Cause, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {k: plain(getattr(self, k)) for k in json_keys(Verdict)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        cause = d.get("cause")
        return cls(d["source"], Cause.from_dict(cause) if cause else None,
                   tuple(Victim.from_dict(v) for v in d.get("victims", ())),
                   tuple(Cause.from_dict(c) for c in d.get("independent", ())))


STATUSES = tuple(UnitStatus)

def shape(record: Any, keys: Sequence[str]) -> dict[str, Any]:
    """The record's JSON object: these keys, in this order."""
    return {k: plain(getattr(record, k)) for k in keys}


def systematic_dict(family: str, workers: int, fingerprint: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {"family": family, "workers": workers}
    if fingerprint is not None:
        d["fingerprint"] = fingerprint
    return d


ROLES = tuple(UnitRole)


NullStr = str | None
Optional = J(required=False)  # a key older outputs may lack: not in the object's `required` list


@dataclass(slots=True)
class Unit:
    """One unit of a run and what became of it."""

    unit: str
    worker: str | None
    status: UnitStatus
    family: Annotated[str | None, J(description="The family of the error the unit printed itself (null: none seen).")] = None
    role: Annotated[UnitRole | None, J(description="cascade: a victim of the root fault named in 'root'.")] = None
    root: Annotated[NullStr, J(required=False, description="For a cascade victim: the unit of its root fault.")] = None
    time: Annotated[NullStr, Optional] = None
    fingerprint: Annotated[NullStr, Optional] = None
    evidence: Annotated[list[str], Optional] = field(default_factory=list)
    source: Annotated[NullStr, Optional] = None
    line: Annotated[int | None, Optional] = None
    start: str | None = field(default=None, metadata=INTERNAL)  # start time (ordering within a worker)
    order: tuple = field(default=(), metadata=INTERNAL)
    distributed: bool = field(default=False, metadata=INTERNAL)  # a rank of a distributed job (its id is the rank / pid / task)
    finding: Finding | None = field(default=None, metadata=INTERNAL)  # the finding that names its family
    facts: dict[str, str] = field(default_factory=dict, metadata=INTERNAL)  # context facts: its own log's, then its node's and job's

    def to_dict(self) -> dict[str, Any]:
        return shape(self, UNIT_KEYS)


@dataclass(slots=True)
class RootFault:
    """A root fault and its blast radius."""

    unit: str
    worker: str | None
    family: str
    time: Annotated[NullStr, Optional]
    fingerprint: Annotated[NullStr, Optional]
    victims: Annotated[list[str], J(description="Units lost in this root fault's blast radius.")]
    evidence: Annotated[list[str], Optional]
    source: Annotated[NullStr, Optional]
    line: Annotated[int | None, Optional]
    mitigation: Annotated[str, Optional] = ""
    probes: Annotated[list[str], Optional] = field(default_factory=list)
    notes: Annotated[list[str], J(required=False, description="Red-herring and superseded-by notes from the ledger.")] = field(
        default_factory=list)
    caveats: Annotated[list[str], J(required=False, description="The ledger's caveats of the family, whole.")] = field(
        default_factory=list)
    superseded_by: Annotated[list[Supersede], J(required=False, description="Fixes to try first, with why.")] = field(
        default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return shape(self, ROOT_FAULT_KEYS)


@dataclass(slots=True)
class Systematic:
    """One family striking several workers separately."""

    family: str
    workers: Annotated[int, J(minimum=2)]
    units: list[str] = field(metadata=INTERNAL)
    # only for `unknown`, whose repeats group by fingerprint; left out of the JSON when None
    fingerprint: Annotated[NullStr, J(required=False, type="string",
                                      description="Only for 'unknown': repeats group by fingerprint.")] = None

    def to_dict(self) -> dict[str, Any]:
        return systematic_dict(self.family, self.workers, self.fingerprint)


@dataclass(slots=True)
class Run:
    """The post-mortem of one run directory."""

    run: Annotated[str, J(description="The run's name (its directory's base name).")]
    path: Annotated[str, J(required=False, description="The run directory.")]
    units: list[Unit]
    roots: list[RootFault]
    systematic: Annotated[list[Systematic], J(description="One family striking several workers separately.")]
    problems: Annotated[list[ProblemLine], J(description="Files that could not be read, and why.")]  # lines (str)
    summary: Annotated[str, J(description="One-line headline of the run.")]
    readable: bool = field(default=True, metadata=INTERNAL)  # False: nothing in the directory could be read at all
    noun: str = field(default="units", metadata=INTERNAL)
    workers: int = field(default=0, metadata=INTERNAL)
    launcher: list[str] = field(default_factory=list, metadata=INTERNAL)  # failures printed by the launcher, not by a unit

    @property
    def failed(self) -> bool:
        return any(u.status != UnitStatus.OK for u in self.units)

    def to_dict(self) -> dict[str, Any]:
        return {**shape(self, RUN_KEYS), "problems": to_dicts(self.problems)}


# The JSON shape of each run record, in output order: the internal records (here) and the API's frozen results
# (results.py, built from these classes) write exactly these keys.
UNIT_KEYS = json_keys(Unit)
ROOT_FAULT_KEYS = json_keys(RootFault)
RUN_KEYS = json_keys(Run)


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
