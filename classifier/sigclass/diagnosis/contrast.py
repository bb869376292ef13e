"""Which context facts separate failing units from clean ones, with counts and Fisher's exact test.

Every unit of every run is a row: failed (any outcome but `ok`) or clean, and
its facts in comparable form (`ledger.context.normalise`). For each fact that
takes two or more values, the units are grouped by value (a numeric fact
with many values by clusters of nearby values, so that 30,024 and 31,800 are
one group and 412 another), and the group whose failure rate stands out is
tested against the rest with Fisher's exact test (two-sided; with k > 2
groups the smallest p is multiplied by k). Facts that split the units the
same way (the host and the GPU model of a two-node contrast) are one entry,
the others listed as `same_split`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from sigclass.ledger.context import as_number, CONTEXT, fact_info, normalise
from sigclass.records import Run

ALPHA = 0.05  # a fact is discriminating when its p is at most this
CLUSTER_RATIO = 1.5  # numeric values further apart than this factor are different groups
FEW_VALUES = 6  # a numeric fact with at most this many distinct values is compared value by value


@dataclass(slots=True)
class Row:
    run: str
    unit: str
    worker: str | None
    failed: bool
    status: str
    family: str | None
    role: str | None
    root: str | None
    facts: dict[str, str] = field(default_factory=dict)


def rows_of(runs: Sequence[Run]) -> list[Row]:
    out = []
    for r in runs:
        for u in r.units:
            facts = {k: normalise(k, v) for k, v in (u.facts or {}).items()}
            out.append(Row(r.run, u.unit, u.worker, u.status != "ok", u.status, u.family, u.role, u.root, facts))
    return out


def fisher(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p of Fisher's exact test on [[a, b], [c, d]]."""
    from scipy.stats import fisher_exact

    return float(fisher_exact([[a, b], [c, d]])[1])


def _groups(name: str, values: list[str]) -> dict[str, str]:
    """value -> its group label."""
    distinct = sorted(set(values))
    nums = {v: as_number(v) for v in distinct}
    if fact_info(name).kind != "number" or len(distinct) <= FEW_VALUES or any(x is None for x in nums.values()):
        return {v: v for v in distinct}
    ordered = sorted(distinct, key=lambda v: nums[v])  # type: ignore[arg-type,return-value]
    clusters: list[list[str]] = [[ordered[0]]]
    for v in ordered[1:]:
        prev = nums[clusters[-1][-1]] or 0.0
        x = nums[v] or 0.0
        if prev > 0 and x / prev >= CLUSTER_RATIO or prev <= 0 < x:
            clusters.append([v])
        else:
            clusters[-1].append(v)
    out = {}
    for c in clusters:
        label = c[0] if len(c) == 1 else f"{c[0]}-{c[-1]}"
        for v in c:
            out[v] = label
    return out


def discriminating(rows: Sequence[Row], names: Sequence[str], prefer: Sequence[str] = (),
                   always: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The facts whose values separate failing units from clean ones, most certain first; the facts in `always`
    (those a probe that was run varies) are listed with their p even above `ALPHA`."""
    found = []
    for name in names:
        known = [r for r in rows if name in r.facts]
        if not known:
            continue
        label = _groups(name, [r.facts[name] for r in known])
        counts: dict[str, list[int]] = {}
        for r in known:
            c = counts.setdefault(label[r.facts[name]], [0, 0])
            c[0] += r.failed
            c[1] += 1
        if len(counts) < 2:
            continue
        fail = sum(c[0] for c in counts.values())
        total = len(known)
        best = 1.0
        for f, t in counts.values():
            best = min(best, fisher(f, t - f, fail - f, (total - t) - (fail - f)))
        p = min(1.0, best * (len(counts) if len(counts) > 2 else 1))
        if p > ALPHA and name not in always:
            continue
        values = [{"value": v, "failed": c[0], "total": c[1]}
                  for v, c in sorted(counts.items(), key=lambda kv: (-kv[1][0] / kv[1][1], -kv[1][1], kv[0]))]
        split = frozenset(frozenset((r.run, r.unit, r.worker) for r in known if label[r.facts[name]] == g) for g in counts)
        found.append({"fact": name, "values": values, "p": p, "_split": split})
    rank = {n: i for i, n in enumerate([*prefer, *CONTEXT])}
    found.sort(key=lambda d: (d["p"], rank.get(d["fact"], len(rank)), d["fact"]))
    out: list[dict[str, Any]] = []
    for d in found:
        twin = next((o for o in out if o["_split"] == d["_split"]), None)
        if twin is not None:
            twin["same_split"].append(d["fact"])
            continue
        d["same_split"] = []
        out.append(d)
    for d in out:
        del d["_split"]
    return out


def line(d: dict[str, Any]) -> str:
    """`gpu_model=H100: 35/42 failed; A100: 0/42  (p=2.1e-14)`."""
    parts = [f"{v['value']}: {v['failed']}/{v['total']}" for v in d["values"]]
    parts[0] = f"{d['fact']}={parts[0]} failed"
    same = f"  (same split: {', '.join(d['same_split'])})" if d.get("same_split") else ""
    return "; ".join(parts) + f"  (p={d['p']:.2g}){same}"
