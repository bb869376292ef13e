"""The timeline of one run as data for `templates/timeline.html.j2`: lanes, unit bars, root markers, cascade bands and arcs.

Pixel geometry comes from `geometry.Layout`; here it becomes the shapes the
templates draw (no markup in this module).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sigclass.outputs.report.geometry import (
    AXIS_H, BAND_H, Bar, BAR_H, BAR_Y, fmt_time, LABEL_MIN_W, LABEL_W, LANE_H, Layout, MAX_LINKS, MIN_BAR, PALETTE,
)
from sigclass.outputs.report.markup import anchor


@dataclass
class Lane:
    worker: str
    y: int
    even: bool
    bars: list[dict[str, Any]] = field(default_factory=list)
    bands: list[dict[str, Any]] = field(default_factory=list)
    lost: int = 0
    roots: int = 0


@dataclass
class TimelineView:
    run_idx: int
    mode: str
    width: float
    height: int
    ticks: list[tuple[float, str]]
    lanes: list[Lane]
    links: list[dict[str, Any]]
    markers: list[dict[str, Any]]
    corner: str
    mode_note: str
    palette: tuple[str, ...] = PALETTE
    label_w: int = LABEL_W
    axis_h: int = AXIS_H
    lane_h: int = LANE_H
    bar_h: int = BAR_H
    band_h: int = BAND_H


def _bar(run_idx: int, lay: Layout, b: Bar, y: int) -> dict[str, Any]:
    cls = ["unit", b.status]
    if b.is_root:
        cls.append("root")
    if b.root:
        cls.append("victim")
    tip = [f"unit {b.unit}", f"worker {b.worker}", b.status]
    if b.family:
        tip.append(str(b.family))
    if b.is_root:
        tip.append("root fault")
    elif b.root:
        tip.append(f"cascade victim of {lay.by_key[b.root].unit}")
    if lay.mode == "time" and b.start is not None:
        tip.append(fmt_time(b.start))
    fits = b.w >= LABEL_MIN_W and len(b.unit) * 6 + 5 <= b.w
    return {"classes": " ".join(cls), "id": f"u-{anchor(run_idx, lay, b.key)}", "unit": b.unit, "key": b.key,
            "worker": b.worker, "status": b.status, "family": b.family or None, "role": b.role,
            "root": lay.by_key[b.root].unit if b.root else None,
            "cascade": b.key if b.key in lay.cascades else b.root,
            "x": b.x, "y": y + BAR_Y, "w": b.w, "tip": " · ".join(tip), "label": b.unit if fits else None}


def _link(run_idx: int, lay: Layout, r: Bar, v: Bar, key: str, color: str) -> dict[str, Any]:
    x1, y1 = fault_x(lay, r), r.lane * LANE_H + BAR_Y
    x2, y2 = v.x + v.w / 2, v.lane * LANE_H + BAR_Y
    if v.lane == r.lane:
        lift = min(BAR_Y + 3, 5 + abs(x2 - x1) / 4)
        d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 - lift:.1f} {x2:.1f},{y2 - lift:.1f} {x2:.1f},{y2:.1f}"
    else:
        ym = (y1 + y2) / 2
        d = f"M{x1:.1f},{y1 + BAR_H / 2:.1f} C{x1 + 30:.1f},{ym:.1f} {x2 - 30:.1f},{ym:.1f} {x2:.1f},{y2 + BAR_H / 2:.1f}"
    return {"root": r.unit, "victim": v.unit, "victim_key": v.key, "key": key, "d": d, "color": color,
            "arrow": PALETTE.index(color)}


def timeline_view(run_idx: int, lay: Layout) -> TimelineView:
    """Everything the timeline templates draw for one run."""
    lanes = [Lane(worker, li * LANE_H, bool(li % 2)) for li, worker in enumerate(lay.workers)]
    for b in lay.bars:
        lane = lanes[b.lane]
        lane.bars.append(_bar(run_idx, lay, b, lane.y))
        lane.lost += b.status != "ok"
        lane.roots += bool(b.is_root)
    links: list[dict[str, Any]] = []
    markers: list[dict[str, Any]] = []
    for key, c in lay.cascades.items():
        r = lay.by_key[key]
        # the band sits under the bars of the root's own lane (root start .. last victim end on that lane)
        same = [lay.by_key[v] for v in c.victims if lay.by_key[v].lane == r.lane]
        x2 = max([r.x + r.w] + [v.x + v.w for v in same])
        lanes[r.lane].bands.append({"root": r.unit, "key": key, "x": r.x, "y": r.lane * LANE_H + BAR_Y + BAR_H + 2,
                                    "w": max(x2 - r.x, MIN_BAR), "color": c.color, "victims": len(c.victims)})
        for vkey in c.victims:
            if len(links) >= MAX_LINKS:
                break
            links.append(_link(run_idx, lay, r, lay.by_key[vkey], key, c.color))
        cx, top = fault_x(lay, r), r.lane * LANE_H + BAR_Y
        markers.append({"anchor": anchor(run_idx, lay, key), "unit": r.unit, "worker": r.worker,
                        "family": r.family or None, "key": key, "color": c.color, "tip": marker_tip(r),
                        "d": f"M{cx - 6:.1f},{top - 8:.1f} L{cx + 6:.1f},{top - 8:.1f} L{cx:.1f},{top + 1:.1f} Z"})
    mode_note = ("Bars run from a unit's start to the next unit on the same worker; very short units are pushed "
                 "right so that each stays visible." if lay.mode == "time" else
                 "No timestamps in these logs: units are laid out in log order, one slot each.")
    return TimelineView(run_idx, lay.mode, lay.width, len(lay.workers) * LANE_H, list(lay.ticks), lanes, links, markers,
                        "time (UTC)" if lay.mode == "time" else "log order", mode_note)


def fault_x(lay: Layout, r: Bar) -> float:
    """Where a root fault happened on its bar: the end when the unit's start is known, else the start."""
    if lay.mode == "time" and r.raw.get("start"):
        return r.x + r.w - min(r.w / 2, 6)
    return r.x + min(r.w / 2, 8)


def marker_tip(r: Bar) -> str:
    return f"root fault {r.family or 'unknown'} on {r.worker}, unit {r.unit}"
