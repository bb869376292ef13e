"""`sigclass report`: one self-contained HTML post-mortem page for one or more runs.

Input is the run object of `sigclass runs` (`Run.to_dict()`):
``{"run", "units": [{"unit", "worker", "status", "family", "role", "root",
"time", "fingerprint", ...}], "roots": [...], "systematic": [{"family",
"workers"}], "problems": [...], "summary"}``. Nothing here analyses logs.

Per run the page shows a timeline (one lane per worker, one bar per unit
coloured by status, root faults marked, each cascade tied to its root by a
colour band and connector arcs), then root-fault cards, systematic faults and
problems. No network assets: inline CSS and a few lines of inline script for hover
highlighting, inline SVG. This module turns run objects into plain views
(`RunView`, `Card`, `timeline.TimelineView`); the page itself is the jinja2
templates in `templates/` (with report.css and report.js), rendered with
autoescaping (`markup.environment`): every piece of log text is escaped,
every attribute is quoted.

Stable hooks for tests and tools: `section.run[data-run]`,
`.lane[data-worker]`, `.unit[data-unit][data-worker][data-status]`,
`.root-marker[data-unit]`, `.cascade-band[data-root]`,
`.cascade-link[data-root][data-victim]`, `.card.root-fault[data-family][data-unit]`,
`.systematic[data-family][data-workers]`, `.problem`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from sigclass.outputs.report.comparison import comparison_view
from sigclass.outputs.report.geometry import fmt_time, Layout, layout, parse_time
from sigclass.outputs.report.markup import anchor, environment
from sigclass.outputs.report.timeline import timeline_view, TimelineView


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines()
    out: list[str] = []
    for v in value:
        out.extend(str(v).splitlines() or [""])
    return out


@dataclass
class Card:
    """One root fault as `templates/card.html.j2` shows it."""

    anchor: str
    family: str
    unit: str
    worker: Any
    color: str
    title: Any
    when: str | None
    source: Any
    line: Any
    victims: list[str]
    victim_names: str
    mitigation: Any
    first: str | None  # the unit of an earlier card of the same family (its advice is folded here)
    probes: list[Any]
    caveats: list[Any]
    evidence: str


@dataclass
class RunView:
    """One run as `templates/run.html.j2` shows it."""

    idx: int
    name: str
    total: int
    ok: int
    failed: int
    victims: int
    hit: int
    workers: int
    headline: str | None
    summary_text: str | None
    summary_items: list[tuple[Any, Any]] | None
    timeline: TimelineView | None
    systematic: list[dict[str, Any]] = field(default_factory=list)
    roots: list[Card] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _root_card(run_idx: int, lay: Layout, root: Mapping[str, Any], info: Mapping[str, Any], first: str | None) -> Card:
    unit = str(root.get("unit"))
    key = next((k for k in lay.cascades if lay.by_key[k].unit == unit
                and (root.get("worker") is None or lay.by_key[k].worker == str(root.get("worker")))), unit)
    bar = lay.by_key.get(key)
    cascade = lay.cascades.get(key)
    when = parse_time(root.get("time")) or (bar.start if bar else None)
    victims = [lay.by_key[v].unit for v in cascade.victims] if cascade else []
    names = ", ".join(victims[:40]) + (f", … ({len(victims) - 40} more)" if len(victims) > 40 else "")
    evidence = _lines(root.get("evidence") or (bar.raw.get("evidence") if bar else None))
    return Card(
        anchor=anchor(run_idx, lay, key),
        family=root.get("family") or (bar.family if bar else None) or "unknown",
        unit=unit,
        worker=root.get("worker") or (bar.worker if bar else None),
        color=cascade.color if cascade else "#999",
        title=root.get("title") or info.get("title") or "",
        when=fmt_time(when) if when else None,
        source=root.get("source") or (bar.raw.get("source") if bar else None),
        line=root.get("line") or (bar.raw.get("line") if bar else None),
        victims=victims,
        victim_names=names,
        mitigation=root.get("mitigation") or info.get("mitigation") or "",
        first=first,
        probes=list(root.get("probes") or info.get("probes") or []),
        caveats=list(root.get("caveats") or info.get("caveats") or []),
        evidence="\n".join(evidence[:40]),
    )


def _roots_of(run: Mapping[str, Any], lay: Layout) -> list[Mapping[str, Any]]:
    """The run's root list; falls back to the root-role units when `roots` is absent."""
    roots = [r for r in run.get("roots") or [] if isinstance(r, Mapping)]
    if roots:
        return roots
    return [dict(b.raw) | {"unit": b.unit, "worker": b.worker} for b in lay.bars if b.is_root]


def run_view(run_idx: int, run: Mapping[str, Any], families: Mapping[str, Mapping[str, Any]]) -> RunView:
    """What the page shows of one run object (`Run.to_dict()`)."""
    lay = layout(run)
    roots = _roots_of(run, lay)
    summary = run.get("summary")
    headline = summary if isinstance(summary, str) and summary else None
    items = text = None
    if headline is None and summary is not None and summary != "":
        if isinstance(summary, Mapping):
            items = [(k, v) for k, v in summary.items() if not isinstance(v, (Mapping, list))]
        else:
            text = str(summary)
    view = RunView(
        idx=run_idx,
        name=str(run.get("run") or f"run {run_idx + 1}"),
        total=len(lay.bars),
        ok=sum(1 for b in lay.bars if b.status == "ok"),
        failed=sum(1 for b in lay.bars if b.status == "failed"),
        victims=sum(1 for b in lay.bars if b.root),
        hit=len({b.worker for b in lay.bars if b.status != "ok"}),
        workers=len(lay.workers),
        headline=headline,
        summary_text=text,
        summary_items=items,
        timeline=timeline_view(run_idx, lay) if lay.bars else None,
        problems=[_problem_text(p) for p in run.get("problems") or []],
    )
    for s in run.get("systematic") or []:
        if not isinstance(s, Mapping):
            continue
        fam = str(s.get("family"))
        workers = s.get("workers")
        n_workers = len(workers) if isinstance(workers, (list, tuple)) else workers
        n_roots = sum(1 for r in roots if r.get("family") == fam)
        fam_victims = sum(len(c.victims) for k, c in lay.cascades.items() if lay.by_key[k].family == fam)
        text = (f"{fam} struck {n_workers} worker(s) independently: {n_roots} separate root fault(s) of one family, "
                f"{fam_victims} cascade victim(s). Treat it as one cause to fix, not {n_roots} bad workers.")
        view.systematic.append({"family": fam, "workers": n_workers, "roots": n_roots, "text": text})
    seen: dict[str, str] = {}
    for r in sorted(roots, key=lambda r: _root_sort(r, lay)):
        fam = str(r.get("family") or "unknown")
        view.roots.append(_root_card(run_idx, lay, r, families.get(fam, {}), seen.get(fam)))
        seen.setdefault(fam, str(r.get("unit")))
    return view


def _problem_text(p: Any) -> str:
    if isinstance(p, Mapping):
        if "message" in p:  # a problem record: the line people read
            return f"{p['path']}: {p['message']}" if p.get("path") else str(p["message"])
        return " ".join(f"{k}={v}" for k, v in p.items())
    return str(p)


def _root_sort(r: Mapping[str, Any], lay: Layout) -> tuple:
    """Earliest fault first (its own time, else where its bar sits)."""
    b = next((b for b in lay.bars if b.unit == str(r.get("unit")) and b.is_root), None)
    t = parse_time(r.get("time"))
    return (t is None, t.timestamp() if t else 0.0, b.x if b else math.inf, b.lane if b else 0, str(r.get("unit")))


def render(runs: Sequence[Mapping[str, Any]], *, families: Mapping[str, Mapping[str, Any]] | None = None,
           title: str | None = None, generated: datetime | None = None,
           comparison: Mapping[str, Any] | None = None) -> str:
    """The whole HTML page for these run objects (`Run.to_dict()`), with the comparison of several runs if given."""
    families = families or {}
    title = title or ("sigclass report: " + ", ".join(str(r.get("run")) for r in runs[:3])
                      + (f" and {len(runs) - 3} more" if len(runs) > 3 else ""))
    gen = (generated or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    views = [run_view(i, r, families) for i, r in enumerate(runs)]
    return environment().get_template("page.html.j2").render(
        title=title, generated=gen, runs=views, comparison=comparison_view(comparison) if comparison else None)


def family_info(ledger: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Title, mitigation, probes and caveats per family id, from a loaded ledger."""
    return {s.id: {"title": s.title, "mitigation": s.mitigation, "probes": list(s.probes), "caveats": list(s.caveats)}
            for s in ledger}


def write_report(runs: Sequence[Mapping[str, Any]], out: Path, **kw: Any) -> Path:
    """Render and write atomically (a half-written report never replaces a good one)."""
    text = render(runs, **kw)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out


def run_dict(run: Any) -> dict[str, Any]:
    """A `sigclass.records.Run` as the report reads it: `to_dict()` plus each unit's start time and the notes."""
    d = run.to_dict()
    for ud, u in zip(d["units"], run.units):
        ud.setdefault("start", getattr(u, "start", None))
    return d
