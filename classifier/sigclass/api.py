"""The Python API: classify a log, analyse a run, explain a gotcha.

    >>> import sigclass
    >>> result = sigclass.classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    >>> result.findings[0].family
    'cuda-oom'

Every function returns a frozen dataclass with ``to_dict()`` (plain JSON
types, the shapes of ``sigclass schema``) and ``from_dict()``. Errors are
``SigclassError`` subclasses. The ledger and the compiled scanner are built
once per process and per ledger; ``clear_cache()`` drops them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
import threading
from typing import Any, Iterable, Mapping, Union
import warnings

from sigclass.errors import InputError, ModelError, SignatureError
from sigclass.records import Finding, FINDING_KEYS, fold

LedgerArg = Union[None, str, os.PathLike, Iterable[Union[str, os.PathLike]]]
SIGNATURE_MODES = ("regex", "learned", "both")
_MAX_PATH_CHARS = 4096


# --------------------------------------------------------------------------- records

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
            "facts": dict(self.facts),
        }


@dataclass(frozen=True)
class Classification:
    """The findings of one log, repeats folded, in the order they occur."""

    source: str
    findings: tuple[FindingRecord, ...]
    problems: tuple[str, ...] = ()

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
        return cls(d["source"], tuple(FindingRecord.from_dict(f) for f in d["findings"]), tuple(d.get("problems", ())))

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "findings": [f.to_dict() for f in self.findings], "problems": list(self.problems)}


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
        return {"unit": self.unit, "worker": self.worker, "status": self.status, "family": self.family,
                "role": self.role, "root": self.root, "time": self.time, "fingerprint": self.fingerprint,
                "evidence": list(self.evidence), "source": self.source, "line": self.line}


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

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RootFault:
        return cls(d["unit"], d["worker"], d["family"], d["time"], d["fingerprint"], tuple(d["victims"]),
                   tuple(d["evidence"]), d["source"], d["line"], d["mitigation"], tuple(d["probes"]),
                   tuple(d["notes"]))

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "worker": self.worker, "family": self.family, "time": self.time,
                "fingerprint": self.fingerprint, "victims": list(self.victims), "evidence": list(self.evidence),
                "source": self.source, "line": self.line, "mitigation": self.mitigation,
                "probes": list(self.probes), "notes": list(self.notes)}


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
        d: dict[str, Any] = {"family": self.family, "workers": self.workers}
        if self.fingerprint is not None:
            d["fingerprint"] = self.fingerprint
        return d


@dataclass(frozen=True)
class RunAnalysis:
    """The post-mortem of one run directory: the run object of ``sigclass runs --format json``."""

    run: str
    path: str
    units: tuple[RunUnit, ...]
    roots: tuple[RootFault, ...]
    systematic: tuple[SystematicFault, ...]
    problems: tuple[str, ...]
    summary: str

    @property
    def failed(self) -> bool:
        return any(u.status != "ok" for u in self.units)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunAnalysis:
        return cls(
            run=d["run"], path=d.get("path", d["run"]), units=tuple(RunUnit.from_dict(u) for u in d["units"]),
            roots=tuple(RootFault.from_dict(r) for r in d["roots"]),
            systematic=tuple(SystematicFault.from_dict(s) for s in d["systematic"]),
            problems=tuple(d["problems"]), summary=d["summary"],
        )

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "path": self.path, "units": [u.to_dict() for u in self.units],
                "roots": [r.to_dict() for r in self.roots], "systematic": [s.to_dict() for s in self.systematic],
                "problems": list(self.problems), "summary": self.summary}


# --------------------------------------------------------------------------- cache

class _Engine:
    """A ledger with its compiled scanner."""

    def __init__(self, ledger, scanner, notes: tuple[str, ...]) -> None:
        self.ledger = ledger
        self.scanner = scanner
        self.notes = notes  # ledger problems and model fallbacks, reported with every result


_cache_lock = threading.Lock()
# One scan at a time per process: a scanner keeps per-scan state and its Hyperscan scratch space must not
# be shared between threads (run analysis uses the cached scanners of sigclass.runs the same way).
_scan_lock = threading.RLock()
_ledgers: dict[tuple[str, ...], Any] = {}
_engines: dict[tuple[tuple[str, ...], str], _Engine] = {}


def clear_cache() -> None:
    """Forget the loaded ledgers and scanners (after editing a signature file in a long-lived process)."""
    with _cache_lock:
        _ledgers.clear()
        _engines.clear()


def _ledger_key(ledger: LedgerArg) -> tuple[str, ...]:
    if ledger is None:
        return ()
    items = [ledger] if isinstance(ledger, (str, os.PathLike)) else list(ledger)
    key = []
    for item in items:
        p = Path(item)
        if not p.exists():
            raise SignatureError(f"{p}: ledger path does not exist; name a .yaml file or a folder of them")
        key.append(str(p.resolve()))
    return tuple(key)


def _load_ledger(key: tuple[str, ...]):
    from sigclass.ledger.pack import load_ledger

    with _cache_lock:
        lg = _ledgers.get(key)
        if lg is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lg = load_ledger(list(key))
            _ledgers[key] = lg
        return lg


def get_ledger(ledger: LedgerArg = None):
    """The shipped pack plus any extra files or folders (later ones override by id), cached."""
    return _load_ledger(_ledger_key(ledger))


def _engine(ledger: LedgerArg, signatures: str) -> _Engine:
    if signatures not in SIGNATURE_MODES:
        raise InputError(f"signatures must be one of {', '.join(SIGNATURE_MODES)}, not {signatures!r}")
    key = _ledger_key(ledger)
    lg = _load_ledger(key)
    with _cache_lock:
        eng = _engines.get((key, signatures))
        if eng is not None:
            return eng
        from sigclass.scan.scanner import Scanner

        notes = [f"{p} (this signature file is skipped)" for p in lg.problems]
        learned = None
        if signatures != "regex":
            from sigclass.learn.lazy import load_predictor

            try:
                learned = load_predictor(None, lg, on_error=notes.append)
            except ModelError as exc:
                if signatures == "learned":
                    raise
                notes.append(f"{exc} (continuing with regex signatures only)")
            if learned is None and signatures == "learned":
                raise ModelError("no learned model is installed; train one with `sigclass train` or use signatures='regex'")
        eng = _Engine(lg, Scanner(lg, signatures=signatures, learned=learned), tuple(notes))
        _engines[(key, signatures)] = eng
        return eng


# --------------------------------------------------------------------------- functions

def _as_path(text_or_path: str | os.PathLike) -> str | None:
    """The path to read, or None when the argument is log text."""
    if isinstance(text_or_path, os.PathLike):
        p = os.fspath(text_or_path)
        return p if p != "-" else os.path.join(".", "-")  # never stdin
    s = text_or_path
    if not s or "\n" in s or "\0" in s or len(s) > _MAX_PATH_CHARS:
        return None
    try:
        return s if os.path.exists(s) else None
    except (OSError, ValueError):
        return None


def classify(text_or_path: str | bytes | os.PathLike, *, ledger: LedgerArg = None,
             signatures: str = "both") -> Classification:
    """Classify the failures in a log.

    A ``pathlib.Path`` is always read as a file; a ``str`` naming an existing
    file is read as that file; any other ``str`` (or ``bytes``) is log text.
    ``ledger`` adds signature files or folders to the shipped pack;
    ``signatures`` is ``regex``, ``learned`` or ``both``.
    Raises InputError when the file cannot be read.
    """
    if isinstance(text_or_path, (bytes, bytearray)):
        text_or_path = bytes(text_or_path).decode("utf-8", "replace")
    if not isinstance(text_or_path, (str, os.PathLike)):
        raise InputError(f"classify() takes log text or a path, not {type(text_or_path).__name__}")
    eng = _engine(ledger, signatures)
    path = _as_path(text_or_path)
    with _scan_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what a warning says is in the result's problems too
        if path is None:
            res = eng.scanner.scan_text(str(text_or_path))
        else:
            res = eng.scanner.scan(path, live=False)
    findings = tuple(FindingRecord.from_finding(f) for f in fold(res.findings))
    problems = tuple(dict.fromkeys((*eng.notes, *res.problems)))
    return Classification(res.source, findings, problems)


def explain(family_id: str, *, ledger: LedgerArg = None) -> Gotcha:
    """The whole ledger entry of a family. Raises InputError for an id the ledger does not know."""
    lg = get_ledger(ledger)
    if family_id not in lg:
        import difflib

        close = difflib.get_close_matches(str(family_id), list(lg.signatures), n=3, cutoff=0.0)
        raise InputError(f"no family {family_id!r}; did you mean {', '.join(close)}? (list_gotchas shows every id)")
    return Gotcha.from_dict(lg[family_id].to_dict())


def list_gotchas(*, ledger: LedgerArg = None) -> list[GotchaSummary]:
    """Every family of the ledger, by id."""
    return [GotchaSummary(s.id, s.title, s.role, s.status) for s in get_ledger(ledger)]


def analyze_run(path: str | os.PathLike, *, ledger: LedgerArg = None, signatures: str = "both",
                n_jobs: int = -1) -> RunAnalysis:
    """The post-mortem of one run directory (units, root faults, cascades, systematic faults).

    Raises InputError when the path is not a directory that can be listed;
    files inside it that cannot be read are reported in ``problems``.
    """
    from sigclass.runs.discover import plan_run
    from sigclass.runs.parallel import analyse_plans
    from sigclass.runs.sources import ScanConfig

    if signatures not in SIGNATURE_MODES:
        raise InputError(f"signatures must be one of {', '.join(SIGNATURE_MODES)}, not {signatures!r}")
    cfg = ScanConfig(ledger=_ledger_key(ledger), signatures=signatures)
    plan = plan_run(os.fspath(path))
    if not plan.listable:
        raise InputError("; ".join(plan.problems) or f"{path}: cannot read this run directory")
    with _scan_lock:
        # a small run is scanned in this process: starting worker processes would cost more than it saves
        batch = analyse_plans([plan], cfg=cfg, n_jobs=n_jobs, small_in_process=n_jobs == -1)
    return RunAnalysis.from_dict(batch.runs[0].to_dict())
