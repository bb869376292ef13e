"""The report's comparison section (several runs) as data for `templates/comparison.html.j2`.

Stable hooks: `section.comparison`, `tr.fact[data-fact]`, `tr.probe[data-family][data-status]`,
`li.verdict[data-family][data-status]`, `li.not-comparable[data-fact]`.
"""

from __future__ import annotations

from typing import Any, Mapping


def comparison_view(c: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison object (`sigclass compare --format json`) with the joined text each table cell shows."""
    return {
        "not_comparable": [{"fact": d["fact"], "value_list": ", ".join(d["values"]), "runs": " vs ".join(d.get("runs", []))}
                           for d in c.get("not_comparable") or []],
        "verdicts": [{"family": v["family"], "status": v["status"], "why": v["why"],
                      "points_to": v.get("points_to") if v["status"] == "refuted" else None}
                     for v in c.get("verdicts") or []],
        "discriminating": [{"fact": d["fact"], "p": f'{d["p"]:.2g}',
                            "per_value": "; ".join(f'{v["value"]}: {v["failed"]}/{v["total"]}' for v in d["values"]),
                            "same_split": ", ".join(d["same_split"]) if d.get("same_split") else None}
                           for d in c.get("discriminating", [])],
        "probes": [{"family": p["family"], "probe": p["probe"], "status": p["status"], "runs": ", ".join(p["runs"])}
                   for p in c.get("probes") or []],
    }
