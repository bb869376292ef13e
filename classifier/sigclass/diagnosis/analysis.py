"""`sigclass compare RUN...`: the contrast of several runs, the ledger's probes judged on them, a verdict per family."""

from __future__ import annotations

from typing import Any, Sequence

from sigclass.diagnosis.contrast import discriminating, rows_of
from sigclass.diagnosis.diagnose import control_skew, judge, verdict, views
from sigclass.ledger.context import CONTEXT, expand
from sigclass.records import Run


def _related(ledger: Any, family: str) -> set[str]:
    """The families a probe links to this one, either way (the generic and the specific name of one error)."""
    out = {p.points_to for p in ledger[family].probe_decls if p.points_to} if family in ledger else set()
    for sig in ledger:
        if any(p.points_to == family for p in sig.probe_decls):
            out.add(sig.id)
    out.discard(None)
    return out  # type: ignore[return-value]


def compare(runs: Sequence[Run], ledger: Any) -> dict[str, Any]:
    """The comparison of runs, as plain JSON (see README, "Comparing runs")."""
    rows = rows_of(runs)
    families = sorted({r.family for r in rows if r.role == "root" and r.family and r.family in ledger})
    probe_facts: list[str] = []
    for fam in families:
        for p in ledger[fam].probe_decls:
            for n in expand([n for n, _ in p.vary] + [n for n, _ in p.inspect]):
                if n not in probe_facts:
                    probe_facts.append(n)
    names = [*CONTEXT, *[n for n in probe_facts if n not in CONTEXT]]
    rv = views(rows)
    skew = control_skew(rv, set(families))
    probes: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    for fam in families:
        judged = []
        related = _related(ledger, fam)
        for p in ledger[fam].probe_decls:
            e = judge(fam, p, rv, skew, related)
            judged.append((p, e))
            probes.append(e)
        verdicts.append(verdict(fam, judged))
    run_probes = [p for fam in families for p, e in zip(ledger[fam].probe_decls, [e for e in probes if e["family"] == fam])
                  if e["status"] != "not-run"]
    contrasted = [n for p in run_probes for n, _ in p.vary]
    disc = discriminating(rows, names, prefer=probe_facts, always=contrasted)
    for e in probes:
        e.pop("evidence_family", None)
    if skew:
        verdicts = []  # runs that differ in what a contrast must keep equal give no verdict
    return {
        "runs": [r.run for r in runs],
        "units": len(rows),
        "discriminating": disc,
        "probes": probes,
        "verdicts": verdicts,
        "not_comparable": skew,
        "problems": [p for r in runs for p in r.problems],
    }

