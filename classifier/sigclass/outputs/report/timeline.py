"""The timeline of one run as inline SVG: lanes, unit bars, root markers, cascade bands and connector arcs."""

from __future__ import annotations

from sigclass.outputs.report.geometry import (
    AXIS_H, BAND_H, Bar, BAR_H, BAR_Y, fmt_time, LABEL_MIN_W, LABEL_W, LANE_H, Layout, MAX_LINKS, MIN_BAR, PALETTE,
)
from sigclass.outputs.report.markup import anchor, attrs, esc


def svg_timeline(run_idx: int, lay: Layout) -> tuple[str, str]:
    """The axis SVG and the chart SVG of one run."""
    n = len(lay.workers)
    h = n * LANE_H
    w = lay.width
    axis = [f'<svg class="tl-axis-svg" width="{w:.0f}" height="{AXIS_H}" viewBox="0 0 {w:.0f} {AXIS_H}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="time axis">']
    for x, label in lay.ticks:
        axis.append(f'<line class="axis-tick" x1="{x:.1f}" x2="{x:.1f}" y1="{AXIS_H - 8}" y2="{AXIS_H}"/>')
        axis.append(f'<text class="axis-label" x="{x + 3:.1f}" y="{AXIS_H - 11}">{esc(label)}</text>')
    axis.append("</svg>")

    out = [f'<svg class="tl-chart" id="tl-{run_idx}" width="{w:.0f}" height="{h}" viewBox="0 0 {w:.0f} {h}" '
           f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="units by worker over time">']
    out.append("<defs>" + "".join(
        f'<marker id="arrow-{run_idx}-{i}" viewBox="0 0 6 6" refX="5" refY="3" markerWidth="5" markerHeight="5" '
        f'orient="auto-start-reverse"><path d="M0,0 L6,3 L0,6 Z" fill="{c}"/></marker>' for i, c in enumerate(PALETTE)) + "</defs>")
    out.append('<g class="grid">')
    for x, _ in lay.ticks:
        out.append(f'<line class="grid-line" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{h}"/>')
    out.append("</g>")
    by_lane: dict[int, list[Bar]] = {}
    for b in lay.bars:
        by_lane.setdefault(b.lane, []).append(b)
    # cascade bands sit under the bars of the root's own lane (root start .. last victim end on that lane)
    bands: dict[int, list[str]] = {}
    for key, c in lay.cascades.items():
        r = lay.by_key[key]
        same = [lay.by_key[v] for v in c.victims if lay.by_key[v].lane == r.lane]
        x2 = max([r.x + r.w] + [v.x + v.w for v in same])
        bands.setdefault(r.lane, []).append(
            f'<rect class="cascade-band" {attrs(data_root=r.unit, data_cascade=key)} x="{r.x:.1f}" '
            f'y="{r.lane * LANE_H + BAR_Y + BAR_H + 2}" width="{max(x2 - r.x, MIN_BAR):.1f}" height="{BAND_H}" '
            f'fill="{c.color}"><title>{esc(f"cascade of {r.unit}: {len(c.victims)} victim(s)")}</title></rect>')
    for li, worker in enumerate(lay.workers):
        y = li * LANE_H
        lane_bars = by_lane.get(li, [])
        failed = sum(1 for b in lane_bars if b.status != "ok")
        out.append(f'<g class="lane" {attrs(data_worker=worker, data_units=len(lane_bars), data_lost=failed)}>')
        out.append(f'<rect class="lane-bg{" even" if li % 2 else ""}" x="0" y="{y}" width="{w:.0f}" height="{LANE_H}"/>')
        out.extend(bands.get(li, []))
        for b in lane_bars:
            cls = ["unit", b.status]
            if b.is_root:
                cls.append("root")
            if b.root:
                cls.append("victim")
            cascade = b.key if b.key in lay.cascades else b.root
            tip = [f"unit {b.unit}", f"worker {b.worker}", b.status]
            if b.family:
                tip.append(str(b.family))
            if b.is_root:
                tip.append("root fault")
            elif b.root:
                tip.append(f"cascade victim of {lay.by_key[b.root].unit}")
            if lay.mode == "time" and b.start is not None:
                tip.append(fmt_time(b.start))
            out.append(
                f'<rect class="{" ".join(cls)}" '
                + attrs(id=f"u-{anchor(run_idx, lay, b.key)}", data_unit=b.unit, data_unit_key=b.key, data_worker=b.worker,
                         data_status=b.status, data_family=b.family or None, data_role=b.role,
                         data_root=None if not b.root else lay.by_key[b.root].unit, data_cascade=cascade)
                + f' x="{b.x:.1f}" y="{y + BAR_Y}" width="{b.w:.1f}" height="{BAR_H}" rx="2">'
                f"<title>{esc(' · '.join(tip))}</title></rect>")
            label = b.unit
            if b.w >= LABEL_MIN_W and len(label) * 6 + 5 <= b.w:
                out.append(f'<text class="unit-label" x="{b.x + 3:.1f}" y="{y + BAR_Y + BAR_H - 4}">{esc(label)}</text>')
        out.append("</g>")
    # connectors above everything: root bar top -> victim bar top
    out.append('<g class="cascade-links">')
    drawn = 0
    for key, c in lay.cascades.items():
        r = lay.by_key[key]
        for vkey in c.victims:
            if drawn >= MAX_LINKS:
                break
            v = lay.by_key[vkey]
            x1, y1 = fault_x(lay, r), r.lane * LANE_H + BAR_Y
            x2, y2 = v.x + v.w / 2, v.lane * LANE_H + BAR_Y
            if v.lane == r.lane:
                lift = min(BAR_Y + 3, 5 + abs(x2 - x1) / 4)
                d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 - lift:.1f} {x2:.1f},{y2 - lift:.1f} {x2:.1f},{y2:.1f}"
            else:
                ym = (y1 + y2) / 2
                d = f"M{x1:.1f},{y1 + BAR_H / 2:.1f} C{x1 + 30:.1f},{ym:.1f} {x2 - 30:.1f},{ym:.1f} {x2:.1f},{y2 + BAR_H / 2:.1f}"
            arrow = f"arrow-{run_idx}-{PALETTE.index(c.color)}"
            out.append(f'<path class="cascade-link" {attrs(data_root=r.unit, data_victim=v.unit, data_victim_key=v.key, data_cascade=key)} '
                       f'd="{d}" stroke="{c.color}" marker-end="url(#{arrow})"/>')
            drawn += 1
    out.append("</g>")
    # root markers last so they sit on top; each links to its card
    out.append('<g class="root-markers">')
    for key, c in lay.cascades.items():
        r = lay.by_key[key]
        cx = fault_x(lay, r)
        top = r.lane * LANE_H + BAR_Y
        out.append(f'<a href="#card-{anchor(run_idx, lay, key)}"><path class="root-marker" '
                   + attrs(data_unit=r.unit, data_worker=r.worker, data_family=r.family or None, data_cascade=key)
                   + f' d="M{cx - 6:.1f},{top - 8:.1f} L{cx + 6:.1f},{top - 8:.1f} L{cx:.1f},{top + 1:.1f} Z" fill="{c.color}">'
                   f"<title>{esc(marker_tip(r))}</title></path></a>")
    out.append("</g></svg>")
    return "".join(axis), "".join(out)


def fault_x(lay: Layout, r: Bar) -> float:
    """Where a root fault happened on its bar: the end when the unit's start is known, else the start."""
    if lay.mode == "time" and r.raw.get("start"):
        return r.x + r.w - min(r.w / 2, 6)
    return r.x + min(r.w / 2, 8)


def marker_tip(r: Bar) -> str:
    return f"root fault {r.family or 'unknown'} on {r.worker}, unit {r.unit}"


def timeline(run_idx: int, lay: Layout) -> str:
    axis, chart = svg_timeline(run_idx, lay)
    labels = []
    for li, worker in enumerate(lay.workers):
        lane_bars = [b for b in lay.bars if b.lane == li]
        lost = sum(1 for b in lane_bars if b.status != "ok")
        roots = sum(1 for b in lane_bars if b.is_root)
        if lost:
            note = f'<span class="hit" title="{esc(f"{lost} of {len(lane_bars)} units not ok")}">{lost}/{len(lane_bars)} lost</span>'
        else:
            note = f'<span class="clean">{len(lane_bars)} ok</span>'
        labels.append(f'<div class="lane-label" {attrs(data_worker=worker, data_roots=roots)} title="{esc(worker)}">'
                      f"<span>{esc(worker)}</span>{note}</div>")
    corner = "time (UTC)" if lay.mode == "time" else "log order"
    mode_note = ("Bars run from a unit's start to the next unit on the same worker; very short units are pushed "
                 "right so that each stays visible." if lay.mode == "time" else
                 "No timestamps in these logs: units are laid out in log order, one slot each.")
    return (
        '<div class="legend">'
        '<span><i class="sw-ok"></i>ok</span><span><i class="sw-failed"></i>failed</span>'
        '<span><i class="sw-incomplete"></i>incomplete</span><span><i class="sw-root"></i>root fault</span>'
        '<span><i class="sw-band"></i>cascade: band + arcs from the root to its victims (paler bars)</span>'
        f"<span>{esc(mode_note)}</span></div>"
        f'<div class="tl-scroll"><div class="tl-grid timeline" {attrs(data_mode=lay.mode)} '
        f'style="grid-template-columns:{LABEL_W}px {lay.width:.0f}px;grid-template-rows:{AXIS_H}px auto">'
        f'<div class="tl-corner">{esc(corner)}</div><div class="tl-axis">{axis}</div>'
        f'<div class="tl-labels">{"".join(labels)}</div><div class="tl-body">{chart}</div></div></div>'
    )
