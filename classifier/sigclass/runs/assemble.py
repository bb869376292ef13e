"""Assembling the scans of one run into a `Run` (the contract is runs.md).

A run is made of *units* (shards, or the ranks of one distributed job)
executed by *workers*. For every unit this works out its worker, its outcome
(`ok`, `failed`, `incomplete`) and its family; cascade attribution and the
headline are in `cascade` and `summary`. Pure and deterministic, so the answer
is the same for any number of workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from sigclass.records import Finding, Run, Unit
from sigclass.runs.borrow import lend, unit_facts
from sigclass.runs.cascade import attribute_cascades, name_root_workers, systematic_faults
from sigclass.runs.discover import RunPlan
from sigclass.runs.layouts import file_stem, Identity, norm_id
from sigclass.runs.sources import MAX_EVIDENCE, ROOT_CAUSE_WINDOW, SourceScan
from sigclass.runs.summary import headline, natural
from sigclass.scan.blocks import Marker
from sigclass.text import safe
from sigclass.text.lines import fingerprint as _fingerprint
from sigclass.vocab import MarkerKind, Role, Status, UnitStatus, UNKNOWN
from sigclass.text.prefixes import Stream


@dataclass(slots=True, eq=False)
class _Piece:
    """The findings and markers of one unit on one worker, as read from one or more sources."""

    unit: str
    worker: str | None
    source: str
    line: int
    start: str | None = None
    findings: list[Finding] = field(default_factory=list)
    ends: list[Marker] = field(default_factory=list)
    distributed: bool = False
    fallback: bool = False  # no unit named it (a whole file, a worker's own log): a unit only if the run has no other


def _event_worker(stream: Stream | None, worker: str | None, ident: Identity, file_worker: str | None) -> tuple[str | None, str]:
    """(worker, origin) of a finding or marker; origin is 'field' (JSON record), 'prefix' (rank line prefix) or 'file'."""
    if stream is not None and stream.in_record and worker:
        return norm_id(worker), "field"
    if ident.kind == "none" and worker and stream is not None and stream.prefix_kind():
        return norm_id(worker), "prefix"
    return file_worker, "file"


def _pieces_of(sc: SourceScan) -> tuple[list[_Piece], list[Finding]]:
    """The units one source holds, and the findings no unit owns (a launcher's own output)."""
    ident = sc.identity
    first_start = next((m for m in sc.markers if m.kind == "start"), None)
    if ident.kind in ("unit", "slurm"):
        worker = ident.worker
        if worker is None:
            worker = next((norm_id(x.worker) for x in [*sc.findings, *sc.markers]
                           if x.stream is not None and x.stream.in_record and x.worker), None) or sc.kv_worker
        piece = _Piece(ident.unit or "", worker, sc.rel, 0,
                       first_start.time if first_start else sc.first_time,
                       list(sc.findings), [m for m in sc.markers if m.kind != "start"],
                       distributed=False)
        return [piece], []

    file_worker = ident.worker or sc.kv_worker
    events: dict[str | None, list[tuple[int, int, Any]]] = {}
    origin_of: dict[str | None, str] = {}
    for m in sc.markers:
        w, origin = _event_worker(m.stream, m.worker, ident, file_worker)
        w = sc.aliases.get(w, w)
        events.setdefault(w, []).append((m.line, 0 if m.kind == "start" else 2, m))
        origin_of.setdefault(w, origin)
    for f in sc.findings:
        w, origin = _event_worker(f.stream, f.worker, ident, file_worker)
        w = sc.aliases.get(w, w)  # a Ray actor's pid-only lines: the rank it runs
        events.setdefault(w, []).append((f.line, 1, f))
        origin_of.setdefault(w, origin)

    # a combined log: some lines carry rank prefixes (the census adds the ranks that printed nothing we read)
    ranked = any(o == "prefix" for o in origin_of.values()) or (len(sc.ranks) >= 2 and not events)
    pieces: dict[tuple[str | None, str], _Piece] = {}
    orphans: list[Finding] = []

    def piece(w: str | None, unit: str, line: int, start: str | None, dist: bool = False) -> _Piece:
        key = (w, unit)
        p = pieces.get(key)
        if p is None:
            p = pieces[key] = _Piece(unit, w, sc.rel, line, start, distributed=dist)
        elif start and (p.start is None or start < p.start):
            p.start = start
        return p

    if ranked:
        for rank in sc.ranks:
            piece(rank, rank, 0, None, True)
    for w in sorted(events, key=lambda x: (x is None, str(x))):
        evs = sorted(events[w], key=lambda t: (t[0], t[1]))
        origin = origin_of[w]
        if origin == "prefix":
            for line, _, ev in evs:
                p = piece(w, w or "", line, ev.time, True)
                if isinstance(ev, Marker):
                    if ev.kind != "start":
                        p.ends.append(ev)
                else:
                    p.findings.append(ev)
            continue
        if ranked and origin == "file":
            # unprefixed lines of a combined log: the launcher's own; a shard marker names its rank,
            # and so does a failure summary (`Root Cause (first observed failure): ... rank : 2`)
            before, after = ROOT_CAUSE_WINDOW
            for _, _, ev in evs:
                if isinstance(ev, Marker):
                    if ev.kind != "start" and (ev.unit, ev.unit) in pieces:
                        pieces[(ev.unit, ev.unit)].ends.append(ev)
                    continue
                rank = next((r for ln, r in sc.root_causes if ln - before <= ev.line <= ln + after), None)
                if rank is not None and (rank, rank) in pieces:
                    pieces[(rank, rank)].findings.append(ev)
                elif ev.unit:
                    piece(w, norm_id(ev.unit), ev.line).findings.append(ev)
                else:
                    orphans.append(ev)
            continue
        current: str | None = None
        pending: list[Finding] = []
        mine: list[_Piece] = []
        for line, _, ev in evs:
            if isinstance(ev, Marker):
                if ev.kind == "start":
                    current = ev.unit
                    p = piece(w, current, line, ev.time)
                    if p not in mine:
                        mine.append(p)
                    p.findings.extend(pending)
                    pending = []
                else:
                    p = piece(w, ev.unit, line, ev.time)
                    if p not in mine:
                        mine.append(p)
                    p.ends.append(ev)
                continue
            unit = norm_id(ev.unit) if ev.unit else current
            if unit is None:
                pending.append(ev)
                continue
            p = piece(w, unit, line, ev.time)
            if p not in mine:
                mine.append(p)
            p.findings.append(ev)
        if pending:
            if mine:
                mine[-1].findings.extend(pending)
            else:
                # no unit markers at all: the worker is the unit (a rank of a JSON-lines job), else the file is
                loose = False
                if origin == "field" and w is not None:
                    unit, dist = w, True
                elif file_worker is not None and w == file_worker:
                    unit, dist, loose = file_worker, False, True
                else:
                    unit, dist, loose = file_stem(sc.rel.rsplit("/", 1)[-1]), False, True
                p = piece(w, unit, pending[0].line, pending[0].time, dist)
                p.findings.extend(pending)
                p.fallback = p.fallback or loose
    if not pieces and sc.readable:
        # a readable log with no unit marker, no rank and no finding: one unit, the file (or its worker),
        # unless the run has real units (then it is a side file: a monitor, a launcher, notes)
        unit = file_worker or file_stem(sc.rel.rsplit("/", 1)[-1])
        piece(file_worker, unit, 0, sc.first_time).fallback = True
    return list(pieces.values()), orphans


def _defining(findings: list[Finding]) -> Finding | None:
    """The finding that names a unit's family: a known root family first, then unknown, then secondary.

    A family that another finding of the unit supersedes (ledger `supersedes` /
    `superseded_by`) gives way to it; a red-herring entry gives way to an active one.
    """
    findings = [f for f in findings if f.status != Status.RECOVERED]  # the worker's progress went on after it
    if not findings:
        return None
    fams = {f.family for f in findings}
    superseded = set()
    for f in findings:
        for s in f.supersedes:
            superseded.add(s.get("id"))
        for s in f.superseded_by:
            if s.get("id") in fams:
                superseded.add(f.family)
    cands = [f for f in findings if f.family not in superseded] or findings

    def rank(f: Finding) -> tuple:
        cls = 0 if (f.family != UNKNOWN and f.family_role != Role.SECONDARY) else 1 if f.family == UNKNOWN else 2
        return (cls, f.status == Status.RED_HERRING, f.time is None, f.time or "", f.source, f.line)

    return min(cands, key=rank)


def _make_unit(p: _Piece) -> Unit:
    fails = [m for m in p.ends if m.kind == MarkerKind.FAILED]
    oks = [m for m in p.ends if m.kind == MarkerKind.OK]
    u = Unit(p.unit, p.worker, UnitStatus.INCOMPLETE, source=p.source, line=p.line or None, start=p.start,
             distributed=p.distributed)
    f = _defining(p.findings)
    if f is not None:
        u.status = UnitStatus.FAILED
        u.family, u.time, u.fingerprint = f.family, f.time, f.fingerprint
        u.evidence = list(f.evidence[-MAX_EVIDENCE:])
        u.source, u.line = f.source, f.line
        u.finding = f
    elif fails:
        m = fails[0]
        u.status = UnitStatus.FAILED
        u.family, u.time = UNKNOWN, m.time
        u.fingerprint = _fingerprint([UNKNOWN, m.text or f"failure marker of unit {p.unit}"])
        u.evidence = [m.text] if m.text else []
        u.line = m.line
    elif oks:
        u.status = UnitStatus.OK
        u.time = oks[-1].time
        u.line = oks[-1].line
    else:
        u.time = p.start
    u.order = _piece_key(p)
    return u


def _order_untimed(units: list[Unit]) -> None:
    """A unit inside a file whose lines carry no time keeps its place in the file: it sorts as if it started when
    the unit before it in the same file did (or, first in the file, when the one after it did), its line breaking
    the tie (runs.md: where no time is known, order within a source is the order of lines)."""
    by_source: dict[str, list[Unit]] = {}
    for u in units:
        if u.order[2][0] == 1:
            by_source.setdefault(u.order[2][2], []).append(u)
    for same in by_source.values():
        if all(u.start is not None for u in same) or all(u.start is None for u in same):
            continue
        same.sort(key=lambda u: u.order[2][3])
        last: str | None = None
        pending: list[Unit] = []
        for u in same:
            if u.start is None:
                if last is not None:
                    u.order = (False, last, u.order[2])
                else:
                    pending.append(u)
                continue
            last = u.start
            for x in pending:
                x.order = (False, last, x.order[2])
            pending = []


def _piece_key(p: _Piece) -> tuple:
    """The order of units on one worker: by start time; without one, a whole-file unit by its number,
    a unit inside a file by its place in the file."""
    where = (0, natural(p.unit), "", 0) if p.line == 0 else (1, (), p.source, p.line)
    return (p.start is None, p.start or "", where)


def assemble(plan: RunPlan, scans: Sequence[SourceScan]) -> Run:
    """The post-mortem of one run from the scans of its sources. Pure and deterministic."""
    problems = list(plan.problems)
    pieces: dict[tuple[str | None, str], _Piece] = {}
    launcher: list[Finding] = []
    lend(scans)
    for sc in sorted(scans, key=lambda s: s.rel):
        problems.extend(sc.problems)
        got, orphans = _pieces_of(sc)
        launcher.extend(orphans)
        for p in got:
            key = (p.worker, p.unit)
            have = pieces.get(key)
            if have is None:
                pieces[key] = p
                continue
            have.findings.extend(p.findings)
            have.ends.extend(p.ends)
            have.distributed = have.distributed or p.distributed
            have.fallback = have.fallback and p.fallback
            if p.start and (have.start is None or p.start < have.start):
                have.start = p.start
    readable = plan.listable and bool(plan.sources) and any(sc.readable for sc in scans)
    if any(not p.fallback for p in pieces.values()):
        launcher.extend(_fold_loose(pieces))
    units = [_make_unit(p) for p in pieces.values()]
    _order_untimed(units)
    unit_facts(scans, units)
    verdicts = [sc.verdict for sc in scans if sc.verdict is not None]
    # what a source's verdict calls a victim (an NCCL error on a rank another rank's fault took down) is never a
    # root fault of the run either; a root fault whose unit names no worker takes the one the verdict names
    roots = attribute_cascades(units, {(v.source, x.line) for v in verdicts for x in v.victims})
    name_root_workers(roots, verdicts)
    systematic = systematic_faults(roots)
    units.sort(key=lambda u: (natural(u.unit), str(u.worker)))
    noun = _noun(plan, scans, units)
    workers = len({u.worker for u in units if u.worker is not None})
    run = Run(plan.name, safe.name(plan.path), units, roots, systematic, problems, "", readable, noun, workers,
              [f"{f.family}: {f.evidence[-1] if f.evidence else ''} ({f.source}:{f.line})" for f in launcher
               if f.family_role != Role.SECONDARY])
    run.summary = headline(run)
    for u in units:
        u.finding = None  # only the cascade needed it; a run travels between processes without it
    return run


def _fold_loose(pieces: dict[tuple[str | None, str], _Piece]) -> list[Finding]:
    """With real units in the run: fold in what no unit named. Returns the findings nothing owns.

    A unit seen without a worker (a driver log's shard markers) joins the one
    unit of that id seen with a worker. A worker's own log (no unit markers)
    gives each finding to the unit that worker was running at the time (the
    first one for a failure before any unit started, the last one when the
    failure has no time). Side files with no finding are dropped.
    """
    real = [p for p in pieces.values() if not p.fallback]
    by_unit: dict[str, list[_Piece]] = {}
    for p in real:
        by_unit.setdefault(p.unit, []).append(p)
    for key, p in list(pieces.items()):
        if p.fallback or p.worker is not None:
            continue
        others = [q for q in by_unit.get(p.unit, []) if q is not p and q.worker is not None]
        if len(others) == 1:
            q = others[0]
            q.findings.extend(p.findings)
            q.ends.extend(p.ends)
            if p.start and (q.start is None or p.start < q.start):
                q.start = p.start
            del pieces[key]
    left: list[Finding] = []
    for key, p in sorted(pieces.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if not p.fallback:
            continue
        del pieces[key]
        mine = sorted((q for q in pieces.values() if not q.fallback and p.worker is not None and q.worker == p.worker),
                      key=_piece_key)
        for f in p.findings:
            if not mine:
                left.append(f)
            elif f.time is None:
                mine[-1].findings.append(f)  # no time to place it: the worker's last unit is the one it died in
            else:
                started = [q for q in mine if q.start is not None and q.start <= f.time]
                (started[-1] if started else mine[0]).findings.append(f)
    return left


def _noun(plan: RunPlan, scans: Sequence[SourceScan], units: list[Unit]) -> str:
    if not units:
        return "units"
    if all(sc.identity.kind == "slurm" for sc in scans if sc.readable) and scans:
        return "tasks"
    if all(u.distributed for u in units):
        return "ranks"
    if all(u.unit.isdigit() for u in units):
        return "shards"
    return "units"
