"""Probes as data, judged on the runs at hand, and a verdict per family.

For a family F with root faults in the runs, each declared probe is looked
for among the runs:

* a contrast probe (`vary`, `keep`, `expect`) is run by a pair of runs: a
  *reference* run holding F's root faults, whose facts do not take the
  probe's values, and a *probe* run whose facts all do, while every kept
  fact shares a value between the two (a kept fact both show with no value
  in common makes the pair not comparable; it is reported, never used).
  The probe run *fails* when it has a root fault of F or of the probe's
  `points_to` family, is *clean* when it has neither and some unit ended
  `ok`. As expected: `supports`; the opposite: `refutes`.
* an inspect probe with facts (`inspect: {xid: ...}`) is judged on the
  facts of F's root units: all shown values match: `supports`; none does:
  `refutes`.
* otherwise it is `not-run`.

Verdict per family: `refuted` when a probe refutes it (pointing to the
probe's `points_to`, else to the family the probe run failed with),
`confirmed` when a probe supports it, else `open` with the cheapest contrast
probe not yet run named as the next step. Runs whose kept facts differ give
no verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import regex

from sigclass.diagnosis.contrast import Row
from sigclass.ledger.context import as_number, CONTROL_GROUPS, expand
from sigclass.ledger.probes import Probe, value_test


@dataclass(slots=True)
class RunView:
    """One run as the probes see it."""

    name: str
    rows: list[Row]

    def roots(self, families: set[str]) -> list[Row]:
        return [r for r in self.rows if r.role == "root" and r.family in families]

    def values(self, name: str, rows: list[Row] | None = None) -> set[str]:
        return {r.facts[name] for r in (self.rows if rows is None else rows) if name in r.facts}


def views(rows: Sequence[Row]) -> list[RunView]:
    out: dict[str, RunView] = {}
    for r in rows:
        out.setdefault(r.run, RunView(r.run, [])).rows.append(r)
    return list(out.values())


def _varied(probe: Probe, ref: RunView, ref_rows: list[Row], other: RunView) -> bool:
    """Whether `other` takes the probe's values where the reference's failing units do not."""
    for name, spec in probe.vary:
        mine = ref.values(name, ref_rows)
        theirs = other.values(name)
        if not mine or not theirs:
            return False
        base = [x for x in (as_number(v) for v in mine) if x is not None]
        test = value_test(spec)
        if spec == "other":
            if theirs & mine:
                return False
            continue
        if any(test(v, base) for v in mine) or not all(test(v, base) for v in theirs):
            return False
    return True


def _unequal(names: Sequence[str], ref: RunView, other: RunView) -> list[dict[str, Any]]:
    """The kept facts both runs show with no value in common (a job whose workers differ in a setting shares a value
    with a run that has one of them; a run that does not print a fact gives no evidence either way)."""
    out = []
    for name in names:
        a, b = ref.values(name), other.values(name)
        if a and b and not a & b:
            out.append({"fact": name, "values": sorted(a | b), "runs": sorted([ref.name, other.name])})
    return out


def _outcome(run: RunView, families: set[str]) -> str | None:
    """'fails' / 'clean' / None (every unit failed of something else: it says nothing)."""
    if run.roots(families):
        return "fails"
    if any(not r.failed for r in run.rows):
        return "clean"
    return None


def judge(family: str, probe: Probe, runs: list[RunView], skew: list[dict[str, Any]], related: set[str]) -> dict[str, Any]:
    """The outcome of one probe of a family on the runs; kept facts that differ are added to `skew`. A probe run
    fails when it has a root fault of the family, of the probe's `points_to`, or of a `related` family."""
    entry: dict[str, Any] = {"family": family, "probe": probe.text, "status": "not-run", "runs": [],
                             "declared": probe.declared, "cost": probe.cost}
    if probe.points_to:
        entry["points_to"] = probe.points_to
    fam = {family}
    if probe.inspect:
        rows = [r for v in runs for r in v.roots(fam)]
        for name, spec in probe.inspect:
            shown = [r for r in rows if name in r.facts]
            if not shown:
                return entry
            hits = [r for r in shown if regex.search(spec, r.facts[name])]
            if len(hits) == len(shown):
                entry["status"] = "supports"
            elif not hits:
                entry["status"] = "refutes"
            else:
                return entry
            entry["runs"] = sorted({r.run for r in shown})
        return entry
    if not probe.contrast:
        return entry
    keep = [n for n in expand(list(probe.keep)) if n not in dict(probe.vary)]
    counted = fam | related | ({probe.points_to} if probe.points_to else set())
    verdicts: dict[str, list[str]] = {"supports": [], "refutes": []}
    for ref in runs:
        ref_rows = ref.roots(fam)
        if not ref_rows:
            continue
        for other in runs:
            if other is ref or not _varied(probe, ref, ref_rows, other):
                continue
            bad = _unequal(keep, ref, other)
            if bad:
                skew.extend(b for b in bad if b not in skew)
                continue
            got = _outcome(other, counted)
            if got is None:
                continue
            status = "supports" if got == probe.expect else "refutes"
            for name in (ref.name, other.name):
                if name not in verdicts[status]:
                    verdicts[status].append(name)
            if status == "refutes":
                failed_as = sorted({r.family for r in other.roots(counted)} - fam)
                entry.setdefault("evidence_family", failed_as[0] if failed_as else None)
    for status in ("refutes", "supports"):
        if verdicts[status]:
            entry["status"], entry["runs"] = status, verdicts[status]
            break
    return entry


def control_skew(runs: list[RunView], families: set[str]) -> list[dict[str, Any]]:
    """Facts a contrast must keep equal (engine arguments, model, code version) that differ between a run with
    failures and another run."""
    names = expand(list(CONTROL_GROUPS))
    out: list[dict[str, Any]] = []
    for ref in runs:
        if not ref.roots(families):
            continue
        for other in runs:
            if other is not ref:
                out.extend(b for b in _unequal(names, ref, other) if b not in out)
    return out


def verdict(family: str, probes: list[tuple[Probe, dict[str, Any]]]) -> dict[str, Any]:
    refutes = [(p, e) for p, e in probes if e["status"] == "refutes"]
    supports = [(p, e) for p, e in probes if e["status"] == "supports"]
    if refutes:
        p, e = refutes[0]
        to = p.points_to or e.get("evidence_family")
        return {"family": family, "status": "refuted", "points_to": to,
                "why": f"{_short(p.text)} (runs: {', '.join(e['runs'])})", "next": None}
    if supports:
        return {"family": family, "status": "confirmed", "points_to": family,
                "why": "; ".join(f"{_short(p.text)} (runs: {', '.join(e['runs'])})" for p, e in supports), "next": None}
    todo = sorted((i, p) for i, (p, e) in enumerate(probes) if p.contrast and e["status"] == "not-run")
    todo.sort(key=lambda t: (t[1].cost, t[0]))
    nxt = todo[0][1].text if todo else next((p.text for p, _ in probes), None)
    why = f"no probe run yet; next: {nxt}" if nxt else "the ledger declares no probe for this family"
    return {"family": family, "status": "open", "points_to": None, "why": why, "next": nxt}


def _short(text: str) -> str:
    return text.split(";")[0].strip()
