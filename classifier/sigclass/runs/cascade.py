"""Cascade attribution: root faults with their blast radius, and systematic faults (one family striking several workers)."""

from __future__ import annotations

from typing import Any

from sigclass.records import RootFault, Systematic, Unit, Verdict
from sigclass.runs.summary import first_sentence, natural
from sigclass.vocab import Role, Status, UnitRole, UnitStatus, UNKNOWN


def attribute_cascades(units: list[Unit], victims: set[tuple[str, int]] | frozenset = frozenset()) -> list[RootFault]:
    """Give each failed or incomplete unit its role; return the root faults with their victims. `victims`:
    (source, line) of the failures a source's verdict explains by another worker's fault (never roots)."""
    by_worker: dict[Any, list[Unit]] = {}
    for u in units:
        key = ("w", u.worker) if u.worker is not None else ("u", u.unit)
        by_worker.setdefault(key, []).append(u)
    root_of: dict[int, Unit] = {}  # id(victim) -> its root (for now)
    roots: list[Unit] = []
    orphans: list[Unit] = []  # secondaries with no root before them on their worker
    for key in sorted(by_worker, key=lambda k: (k[0], str(k[1]))):
        current: Unit | None = None
        for u in sorted(by_worker[key], key=lambda x: x.order):
            if u.status == UnitStatus.OK:
                current = None
                continue
            if current is not None:
                root_of[id(u)] = current
                continue
            if u.status == UnitStatus.FAILED:
                if u.finding is not None and (u.finding.family_role == Role.SECONDARY
                                              or (u.source, u.line) in victims):
                    orphans.append(u)
                else:
                    roots.append(u)
                current = u
    distributed = any(u.distributed for u in units)
    final_roots = list(roots)
    if distributed and not roots and orphans:
        # every rank printed a secondary error and none a root: the earliest is the best root there is
        first = min(orphans, key=lambda x: (x.time is None, x.time or "", natural(x.unit)))
        orphans.remove(first)
        roots.append(first)
        final_roots.append(first)
    proper = sorted(roots, key=lambda r: (r.time is None, r.time or "", natural(r.unit)))
    for o in sorted(orphans, key=lambda x: (x.time is None, x.time or "", natural(x.unit))):
        fam = o.family or ""
        cause = None
        if proper and (distributed or fam == "nccl-watchdog-timeout"):
            before = [r for r in proper if r.worker != o.worker and (r.time is None or o.time is None or r.time <= o.time)]
            cause = before[0] if before else next((r for r in proper if r.worker != o.worker), None)
        if cause is not None:
            root_of[id(o)] = cause
        else:
            final_roots.append(o)  # nothing explains it: the best available root
    if distributed and proper:
        # a rank that printed nothing after a root fault elsewhere hung behind it
        first = proper[0]
        for u in units:
            if u.status == UnitStatus.INCOMPLETE and id(u) not in root_of and u.distributed:
                root_of[id(u)] = first
    # chains (victim of an orphan that is itself a victim) resolve to the root at the end
    victims: dict[int, list[Unit]] = {id(r): [] for r in final_roots}
    for u in units:
        r = root_of.get(id(u))
        seen = 0
        while r is not None and id(r) in root_of and seen < len(units):
            r = root_of[id(r)]
            seen += 1
        if r is None:
            continue
        u.role, u.root = UnitRole.CASCADE, r.unit
        victims.setdefault(id(r), []).append(u)
    out: list[RootFault] = []
    for r in sorted(final_roots, key=lambda x: (x.time is None, x.time or "", natural(x.unit), str(x.worker))):
        r.role, r.root = UnitRole.ROOT, None
        f = r.finding
        notes: list[str] = []
        if f is not None:
            if f.status == Status.RED_HERRING:
                notes.append(f"the ledger marks {f.family} as a red herring; look for the real cause")
            notes.extend(f.notes)
            for s in f.superseded_by:
                notes.append(f"superseded by {s.get('id')}: {first_sentence(s.get('note', ''))}")
            for c in f.caveats:
                if "red herring" in c.lower() or "red-herring" in c.lower():
                    notes.append(first_sentence(c))
        vs = sorted(victims.get(id(r), []), key=lambda u: natural(u.unit))
        out.append(RootFault(
            r.unit, r.worker, r.family or UNKNOWN, r.time, r.fingerprint, [v.unit for v in vs], list(r.evidence),
            r.source, r.line, f.mitigation if f else "", list(f.probes) if f else [], notes,
            list(f.caveats) if f else [], [dict(x) for x in f.superseded_by] if f else [],
        ))
    return out


def name_root_workers(roots: list[RootFault], verdicts: list[Verdict]) -> None:
    """A root fault whose unit names no worker (a combined log without line prefixes) takes the worker its
    source's verdict names for the same fault: the rank a launcher's summary or the failure's own text named."""
    for r in roots:
        if r.worker is not None:
            continue
        for v in verdicts:
            c = v.cause
            if c is not None and c.worker is not None and v.source == r.source and c.family == r.family:
                r.worker = c.worker
                break


def systematic_faults(roots: list[RootFault]) -> list[Systematic]:
    groups: dict[tuple[str, str | None], list[RootFault]] = {}
    for r in roots:
        key = (r.family, r.fingerprint if r.family == UNKNOWN else None)
        groups.setdefault(key, []).append(r)
    out = []
    for (fam, fp), rs in groups.items():
        workers = {r.worker for r in rs if r.worker is not None}
        if len(workers) >= 2:
            out.append(Systematic(fam, len(workers), sorted((r.unit for r in rs), key=natural), fp))
    out.sort(key=lambda s: (-s.workers, s.family, s.fingerprint or ""))
    return out
