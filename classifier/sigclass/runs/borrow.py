"""Facts of the run: what one worker prints about its node or its job holds for the workers that did not print it.

At scan time (`conditional`), each finding records the families that would
have named it had its own log shown a missing fact: the block matches the
family's text and every `require` condition the source's facts fail is a
fact the source never printed (a contrary value rules the family out). At
assembly (`lend`), a node fact (the GPU listing, the driver) is looked up in
the other sources of the same host, a job fact (engine arguments, model,
versions) in every source of the run; when every value found meets the
condition, the finding takes the family, with a note saying where the fact
came from. `unit_facts` gives every unit its facts the same way: its own
source's first, then the node's and the job's.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import regex

from sigclass.ledger.context import fact_info, normalise
from sigclass.records import Finding, Unit
from sigclass.runs.layouts import norm_id
from sigclass.scan.blocks import strip_ts
from sigclass.text.lines import fingerprint


@dataclass(slots=True)
class Conditional:
    """A family a finding would have had, given the facts its source did not show."""

    index: int  # the finding's place in its source's findings
    finding: Finding  # the finding under that family
    needs: dict[str, str]  # fact name -> the condition's regex
    priority: int


def own_facts(facts: Mapping[str, Mapping[str, str]], worker: str | None) -> dict[str, str]:
    """A source's facts for one worker: what any stream of the source printed, the worker's own lines last."""
    out: dict[str, str] = {}
    for key, d in facts.items():
        if key and (worker is None or norm_id(key) != norm_id(worker)):
            for k, v in d.items():
                out.setdefault(k, v)
    out.update(facts.get("", {}))
    for key, d in facts.items():
        if key and worker is not None and norm_id(key) == norm_id(worker):
            out.update(d)
    return out


def conditional(scanner: Any, findings: Sequence[Finding], facts: Mapping[str, Mapping[str, str]]) -> list[Conditional]:
    """For each regex finding: the higher-priority families it misses only for want of facts its source did not print."""
    out: list[Conditional] = []
    if not any(f.method == "regex" and f.block for f in findings):
        return out  # a clean source (most of them): no ledger walk
    ledger = scanner.ledger
    gated = [s for s in ledger if s.active and s.require and s.min_count == 1]
    if not gated:
        return out
    search = scanner.guard.search
    for i, f in enumerate(findings):
        if f.method != "regex" or not f.block or f.family not in ledger:
            continue
        mine = ledger[f.family].priority
        have = own_facts(facts, f.worker)
        lines = f.block
        for sig in gated:
            if sig.id == f.family or sig.priority <= mine:
                continue
            needs: dict[str, str] = {}
            for name, rx in sig.require:
                v = have.get(name)
                if v is None:
                    needs[name] = rx.pattern
                elif not rx.search(v):
                    needs = {}
                    break
            if not needs:
                continue
            if not any(search(p, ln) for p in sig.any for ln in lines):
                continue
            if any(not any(search(p, ln) for ln in lines) for p in sig.all):
                continue
            if any(search(p, ln) for p in sig.none for ln in lines):
                continue
            key = strip_ts(f.evidence[-1]) if f.evidence else ""
            alt = dataclasses.replace(
                f, family=sig.id, title=sig.title, status=sig.status, mitigation=sig.mitigation,
                probes=list(sig.probes), caveats=list(sig.caveats),
                supersedes=[{"id": s.id, "note": s.note} for s in sig.supersedes],
                superseded_by=[{"id": s.id, "note": s.note} for s in sig.superseded_by],
                family_role=sig.role, fingerprint=fingerprint([sig.id, key]), block=[], facts={}, notes=[],
            )
            out.append(Conditional(i, alt, needs, sig.priority))
    return out


@dataclass(slots=True)
class _Provider:
    """The facts one stream of one source printed, and the host it ran on."""

    rel: str
    host: str | None
    facts: dict[str, str]


def _providers(scans: Iterable[Any]) -> list[_Provider]:
    out = []
    for sc in scans:
        for key, d in sorted((sc.facts or {}).items()):
            if d:
                host = d.get("host") or (sc.facts.get("", {}).get("host") if key else None)
                out.append(_Provider(sc.rel, host, dict(d)))
    return out


def _lend(name: str, host: str | None, rel: str, providers: list[_Provider]) -> tuple[str, list[str], str] | None:
    """(value, the sources it came from, where) of a node or job fact, when the run's other sources agree on it."""
    scope = fact_info(name).scope
    if scope == "unit":
        return None
    cands = [p for p in providers if p.rel != rel and name in p.facts]
    where = "the same run"
    if scope == "node":
        hosts = {p.host for p in providers if p.host}
        if host is not None:
            same = [p for p in cands if p.host == host]
            if same or len(hosts) > 1:
                cands, where = same, f"the same node {host}"
        elif len(hosts) > 1:
            return None  # several nodes and no way to tell which one this worker ran on
    if not cands:
        return None
    values = Counter(normalise(name, p.facts[name]) for p in cands)
    if len(values) != 1:
        return None
    raw = Counter(p.facts[name] for p in cands).most_common(1)[0][0]
    return raw, sorted({p.rel for p in cands}), where


def lend(scans: Sequence[Any]) -> None:
    """Give findings the family their conditions name when the facts they lack are those of their node or job."""
    if not any(getattr(sc, "conditional", None) for sc in scans):
        return  # nothing to lend (most runs)
    providers = _providers(scans)
    for sc in scans:
        conds = getattr(sc, "conditional", None)
        if not conds:
            continue
        done: set[int] = set()
        for c in sorted(conds, key=lambda c: -c.priority):
            if c.index in done or c.index >= len(sc.findings):
                continue
            f = sc.findings[c.index]
            host = own_facts(sc.facts or {}, f.worker).get("host")
            notes = []
            for name, pat in c.needs.items():
                got = _lend(name, host, sc.rel, providers)
                if got is None or not regex.search(pat, got[0]):
                    break
                value, rels, where = got
                srcs = ", ".join(rels[:3]) + (f" and {len(rels) - 3} more" if len(rels) > 3 else "")
                notes.append(f"{name}={value} is a fact of {where} ({srcs}); this log does not print it")
            else:
                c.finding.notes = notes
                sc.findings[c.index] = c.finding
                done.add(c.index)


class _Lines:
    """A source's unit-scope fact sightings, and the line span of each unit's own lines in it."""

    def __init__(self, sc: Any) -> None:
        self.facts = sorted(sc.fact_lines)
        self.lines = [t[0] for t in self.facts]
        starts = sorted((m.line, m.unit, m.worker) for m in sc.markers if m.kind == "start")
        self.marked = bool(starts)
        self.span: dict[str, tuple[int, int | None, str | None]] = {}
        by_worker: dict[str | None, list[tuple[int, str]]] = {}
        for line, unit, worker in starts:
            by_worker.setdefault(worker, []).append((line, unit))
        for worker, seq in by_worker.items():
            for k, (line, unit) in enumerate(seq):
                if unit in self.span:
                    continue
                nxt = next((ln for ln, u in seq[k + 1:] if u != unit), None)
                self.span[unit] = (line, nxt, worker)

    def of(self, u: Unit) -> dict[str, str]:
        """What the unit's own lines print: a whole file's when the file marks no unit, else the facts between the
        unit's start marker and the next unit's start on the same worker."""
        out: dict[str, str] = {}
        if not self.marked:
            for _, w, name, value in self.facts:
                if not w or u.worker is None or norm_id(w) == norm_id(u.worker):
                    out[name] = value
            return out
        span = self.span.get(u.unit)
        if span is None:
            return out
        lo, hi, wk = span
        for k in range(bisect_left(self.lines, lo), bisect_left(self.lines, hi) if hi is not None else len(self.lines)):
            _, w, name, value = self.facts[k]
            if not w or wk is None or norm_id(w) == norm_id(wk):
                out[name] = value
        return out


def unit_facts(scans: Sequence[Any], units: Sequence[Unit]) -> None:
    """Every unit's facts: its node's and job's from its own source (or, where that is silent, from the sources that
    speak for its node or job), and the unit-scope facts of its own lines."""
    providers = _providers(scans)
    by_rel = {sc.rel: sc for sc in scans}
    names = sorted({n for p in providers for n in p.facts if fact_info(n).scope != "unit"})
    lent: dict[tuple[str, str | None, str], str | None] = {}
    spans: dict[str, _Lines] = {}
    for u in units:
        sc = by_rel.get(u.source or "")
        mine = own_facts(sc.facts or {}, u.worker) if sc is not None else {}
        host = mine.get("host")
        out = {k: v for k, v in mine.items() if fact_info(k).scope != "unit"}
        for name in names:
            if name not in out:
                key = (name, host, u.source or "")
                if key not in lent:
                    got = _lend(name, host, u.source or "", providers)
                    lent[key] = got[0] if got is not None else None
                value = lent[key]
                if value is not None:
                    out[name] = value
        if sc is not None:
            if sc.rel not in spans:
                spans[sc.rel] = _Lines(sc)
            out.update(spans[sc.rel].of(u))
        u.facts = out
