"""`sigclass report`: one self-contained HTML post-mortem page for one or more runs.

Input is the run object of `sigclass runs` (`Run.to_dict()`):
``{"run", "units": [{"unit", "worker", "status", "family", "role", "root",
"time", "fingerprint", ...}], "roots": [...], "systematic": [{"family",
"workers"}], "problems": [...], "summary"}``. Nothing here analyses logs.

Per run the page shows a timeline (one lane per worker, one bar per unit
coloured by status, root faults marked, each cascade tied to its root by a
colour band and connector arcs), then root-fault cards, systematic faults and
problems. No network assets: inline CSS and a few lines of inline script for hover
highlighting (report.css and report.js beside this module), inline SVG. Every piece of log text goes through
`html.escape`, every attribute is quoted.

Stable hooks for tests and tools: `section.run[data-run]`,
`.lane[data-worker]`, `.unit[data-unit][data-worker][data-status]`,
`.root-marker[data-unit]`, `.cascade-band[data-root]`,
`.cascade-link[data-root][data-victim]`, `.card.root-fault[data-family][data-unit]`,
`.systematic[data-family][data-workers]`, `.problem`.
"""

from __future__ import annotations

from datetime import datetime, timezone
import importlib.resources
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from sigclass.outputs.report.comparison import comparison_section
from sigclass.outputs.report.geometry import fmt_time, Layout, layout, parse_time
from sigclass.outputs.report.markup import anchor, attrs, esc
from sigclass.outputs.report.timeline import timeline


def _asset(name: str) -> str:
    """A constant file shipped beside this module (the page's style sheet and its hover script: no data in them)."""
    return importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines()
    out: list[str] = []
    for v in value:
        out.extend(str(v).splitlines() or [""])
    return out


def _root_card(run_idx: int, lay: Layout, root: Mapping[str, Any], info: Mapping[str, Any], first: str | None) -> str:
    """One root fault. `first`: the unit of an earlier card of the same family (its advice is folded here)."""
    unit = str(root.get("unit"))
    key = next((k for k in lay.cascades if lay.by_key[k].unit == unit
                and (root.get("worker") is None or lay.by_key[k].worker == str(root.get("worker")))), unit)
    bar = lay.by_key.get(key)
    cascade = lay.cascades.get(key)
    family = root.get("family") or (bar.family if bar else None) or "unknown"
    worker = root.get("worker") or (bar.worker if bar else None)
    title = root.get("title") or info.get("title") or ""
    mitigation = root.get("mitigation") or info.get("mitigation") or ""
    probes = list(root.get("probes") or info.get("probes") or [])
    caveats = list(root.get("caveats") or info.get("caveats") or [])
    evidence = _lines(root.get("evidence") or (bar.raw.get("evidence") if bar else None))
    when = parse_time(root.get("time")) or (bar.start if bar else None)
    source = root.get("source") or (bar.raw.get("source") if bar else None)
    line = root.get("line") or (bar.raw.get("line") if bar else None)
    victims = [lay.by_key[v] for v in cascade.victims] if cascade else []
    color = cascade.color if cascade else "#999"
    parts = [f'<article class="card root-fault" id="card-{anchor(run_idx, lay, key)}" '
             + attrs(data_family=family, data_unit=unit, data_worker=worker, data_victims=len(victims))
             + f' style="--chip:{color}">']
    parts.append(f"<h4>{esc(family)}</h4>")
    if title:
        parts.append(f'<p class="title">{esc(title)}</p>')
    where = [f"unit <b>{esc(unit)}</b>"]
    if worker:
        where.append(f"worker <b>{esc(worker)}</b>")
    if when:
        where.append(esc(fmt_time(when)))
    if source:
        where.append(f"<code>{esc(source)}{':' + esc(line) if line else ''}</code>")
    parts.append(f'<div class="where">{" · ".join(where)}</div>')
    if victims:
        names = ", ".join(v.unit for v in victims[:40]) + (f", … ({len(victims) - 40} more)" if len(victims) > 40 else "")
        parts.append(f'<div class="victims"><b>{len(victims)}</b> cascade victim(s): {esc(names)}</div>')
    else:
        parts.append('<div class="victims">no cascade victims</div>')
    if mitigation and first is None:
        parts.append(f'<p class="mitigation"><b>Do:</b> {esc(mitigation)}</p>')
    elif mitigation:
        parts.append(f'<details class="mitigation"><summary>Do: same as for unit {esc(first)}</summary>'
                     f"<p>{esc(mitigation)}</p></details>")
    if probes:
        parts.append(f'<details class="probes"><summary>First checks ({len(probes)})</summary><ol>'
                     + "".join(f"<li>{esc(p)}</li>" for p in probes) + "</ol></details>")
    if caveats:
        parts.append(f'<details class="caveats"><summary>Caveats ({len(caveats)})</summary><ul>'
                     + "".join(f"<li>{esc(c)}</li>" for c in caveats) + "</ul></details>")
    if evidence:
        parts.append('<pre class="evidence">' + "\n".join(esc(x) for x in evidence[:40]) + "</pre>")
    parts.append("</article>")
    return "".join(parts)


def _roots_of(run: Mapping[str, Any], lay: Layout) -> list[Mapping[str, Any]]:
    """The run's root list; falls back to the root-role units when `roots` is absent."""
    roots = [r for r in run.get("roots") or [] if isinstance(r, Mapping)]
    if roots:
        return roots
    return [dict(b.raw) | {"unit": b.unit, "worker": b.worker} for b in lay.bars if b.is_root]


def _summary(summary: Any) -> str:
    if summary is None or summary == "":
        return ""
    if isinstance(summary, Mapping):
        return ('<div class="summary">' + " · ".join(f"{esc(k)}: <b>{esc(v)}</b>" for k, v in summary.items()
                                                    if not isinstance(v, (Mapping, list))) + "</div>")
    return f'<p class="summary">{esc(summary)}</p>'


def render_run(run_idx: int, run: Mapping[str, Any], families: Mapping[str, Mapping[str, Any]]) -> str:
    lay = layout(run)
    name = str(run.get("run") or f"run {run_idx + 1}")
    total = len(lay.bars)
    ok = sum(1 for b in lay.bars if b.status == "ok")
    failed = sum(1 for b in lay.bars if b.status == "failed")
    incomplete = total - ok - failed
    victims = sum(1 for b in lay.bars if b.root)
    roots = _roots_of(run, lay)
    hit = len({b.worker for b in lay.bars if b.status != "ok"})
    out = [f'<section class="run" id="run-{run_idx}" {attrs(data_run=name, data_units=total)}>']
    out.append(f"<h2>{esc(name)}</h2>")
    lost = total - ok
    summary = run.get("summary")
    if isinstance(summary, str) and summary:
        out.append(f'<p class="headline">{esc(summary)}</p>')
        summary = None
    else:
        out.append(f'<p class="headline"><b class="lost">{lost} of {total}</b> units lost: <b>{len(roots)}</b> root fault(s), '
                   f"<b>{victims}</b> cascade victim(s).</p>")
    out.append('<div class="counts">'
               f'<span class="count" data-count="ok"><b>{ok}</b>ok</span>'
               f'<span class="count" data-count="failed"><b>{failed}</b>failed</span>'
               f'<span class="count" data-count="incomplete"><b>{incomplete}</b>incomplete</span>'
               f'<span class="count" data-count="roots"><b>{len(roots)}</b>root faults</span>'
               f'<span class="count" data-count="victims"><b>{victims}</b>cascade victims</span>'
               f'<span class="count" data-count="workers-hit"><b>{hit}/{len(lay.workers)}</b>workers hit</span></div>')
    out.append(_summary(summary))
    if total:
        out.append(timeline(run_idx, lay))
    else:
        out.append('<p class="none">No units found in this run.</p>')

    systematic = [s for s in run.get("systematic") or [] if isinstance(s, Mapping)]
    out.append('<h3>Systematic faults</h3>')
    if systematic:
        for s in systematic:
            fam = str(s.get("family"))
            workers = s.get("workers")
            n_workers = len(workers) if isinstance(workers, (list, tuple)) else workers
            n_roots = sum(1 for r in roots if r.get("family") == fam)
            fam_roots = {k for k, c in lay.cascades.items() if lay.by_key[k].family == fam}
            fam_victims = sum(len(lay.cascades[k].victims) for k in fam_roots)
            text = (f"{fam} struck {n_workers} worker(s) independently: {n_roots} separate root fault(s) of one family, "
                    f"{fam_victims} cascade victim(s). Treat it as one cause to fix, not {n_roots} bad workers.")
            out.append(f'<div class="systematic" {attrs(data_family=fam, data_workers=n_workers, data_roots=n_roots)}>'
                       f"<b>Systematic:</b> {esc(text)}</div>")
    else:
        out.append('<p class="none">None: no family struck more than one worker independently.</p>')

    out.append(f"<h3>Root faults ({len(roots)})</h3>")
    if roots:
        out.append('<div class="cards">')
        seen: dict[str, str] = {}
        for r in sorted(roots, key=lambda r: _root_sort(r, lay)):
            fam = str(r.get("family") or "unknown")
            out.append(_root_card(run_idx, lay, r, families.get(fam, {}), seen.get(fam)))
            seen.setdefault(fam, str(r.get("unit")))
        out.append("</div>")
    else:
        out.append('<p class="none">No root faults.</p>')

    problems = list(run.get("problems") or [])
    out.append(f"<h3>Problems ({len(problems)})</h3>")
    if problems:
        out.append('<ul class="problems">' + "".join(f'<li class="problem">{esc(_problem_text(p))}</li>' for p in problems) + "</ul>")
    else:
        out.append('<p class="none">Every log source was read.</p>')
    out.append("</section>")
    return "".join(out)


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
    body = [f'<header class="page"><h1>{esc(title)}</h1><p>{len(runs)} run(s) · generated {esc(gen)} by sigclass</p></header>']
    if len(runs) > 1:
        body.append('<nav class="runs">' + "".join(
            f'<a href="#run-{i}">{esc(r.get("run"))}</a>' for i, r in enumerate(runs)) + "</nav>")
    if comparison:
        body.append(comparison_section(comparison))
    body.extend(render_run(i, r, families) for i, r in enumerate(runs))
    body.append("<footer>Log text is shown as text. Hover a root marker, a band or a bar to highlight its cascade; "
                "click a root marker to jump to its card.</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{_asset('report.css')}</style></head><body>"
            + "".join(body) + f"<script>{_asset('report.js')}</script></body></html>\n")


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
