"""`sigclass report`: one self-contained HTML post-mortem page for one or more runs.

Input is the run object of `sigclass runs` (`Run.to_dict()`):
``{"run", "units": [{"unit", "worker", "status", "family", "role", "root",
"time", "fingerprint", ...}], "roots": [...], "systematic": [{"family",
"workers"}], "problems": [...], "summary"}``. Nothing here analyses logs.

Per run the page shows a timeline (one lane per worker, one bar per unit
coloured by status, root faults marked, each cascade tied to its root by a
colour band and connector arcs), then root-fault cards, systematic faults and
problems. No network assets: inline CSS, inline SVG, a few lines of inline
script for hover highlighting. Every piece of log text goes through
`html.escape`, every attribute is quoted.

Stable hooks for tests and tools: `section.run[data-run]`,
`.lane[data-worker]`, `.unit[data-unit][data-worker][data-status]`,
`.root-marker[data-unit]`, `.cascade-band[data-root]`,
`.cascade-link[data-root][data-victim]`, `.card.root-fault[data-family][data-unit]`,
`.systematic[data-family][data-workers]`, `.problem`.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import median
from typing import Any, Iterable, Mapping, Sequence

# --------------------------------------------------------------------------- geometry
LABEL_W = 132  # lane label column (HTML, sticky)
LANE_H = 30
BAR_H = 16
BAR_Y = 9  # bar top inside a lane
BAND_H = 3
AXIS_H = 30
MIN_BAR = 6  # px: a bar never gets thinner than this
GAP = 1  # px between packed bars
BASE_W = 1100  # px the time span is scaled to before packing (at least)
MAX_W = 8000  # px: a dense run scrolls sideways, up to this width
PER_UNIT_W = 40  # px per unit of the busiest lane that the time span is given, within BASE_W..MAX_W
LABEL_MIN_W = 14  # px: unit labels only on bars at least this wide (and wide enough for the text)
TICK_MIN_PX = 90
MAX_LINKS = 4000  # beyond this, cascades are drawn as bands only (the page stays light)

STATUS_CLASSES = ("ok", "failed", "incomplete")
# cascade colours: distinct from the status colours (green / red / amber)
PALETTE = ("#6f42c1", "#1f77b4", "#d63384", "#0f8b8d", "#8c564b", "#3d5afe", "#b8860b", "#7b1fa2",
           "#00838f", "#c2185b", "#5d4037", "#283593")

_ID_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def esc(value: Any) -> str:
    """Escape text for HTML element content or a double-quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def _slug(value: Any) -> str:
    s = _ID_BAD.sub("-", str(value)).strip("-")
    return s or "x"


def _anchor(run_idx: int, lay: "Layout", key: str) -> str:
    """A unique, readable element id for a unit (its order in the run keeps slug clashes apart)."""
    b = lay.by_key.get(key)
    return f"{run_idx}-{_slug(key)}-{b.order if b else 'x'}"


# --------------------------------------------------------------------------- time
def parse_time(value: Any) -> datetime | None:
    """ISO-8601 text (Z or offset; no zone means UTC), epoch seconds, or a datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    text = str(value).strip()
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _fmt_time(t: datetime | None, with_date: bool = True) -> str:
    if t is None:
        return ""
    t = t.astimezone(timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S") + " UTC" if with_date else t.strftime("%H:%M:%S")


# --------------------------------------------------------------------------- layout model
@dataclass
class Bar:
    key: str  # unique within the run: the unit id, or worker/unit if unit ids repeat
    unit: str
    worker: str
    status: str
    family: str | None
    role: str | None
    root: str | None  # key of the root fault this unit is a cascade victim of
    start: datetime | None
    end: datetime | None
    order: int
    lane: int = 0
    x: float = 0.0
    w: float = 0.0
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_root(self) -> bool:
        return self.role == "root"


@dataclass
class Cascade:
    root: str
    color: str
    victims: list[str]


@dataclass
class Layout:
    workers: list[str]
    bars: list[Bar]
    by_key: dict[str, Bar]
    cascades: dict[str, Cascade]
    mode: str  # "time" or "order"
    width: float
    t0: datetime | None
    scale: float  # px per second (time) or px per slot (order)
    ticks: list[tuple[float, str]]


def _unit_key(u: Mapping[str, Any], dup_units: set[str]) -> str:
    unit = str(u.get("unit"))
    return f"{u.get('worker')}/{unit}" if unit in dup_units else unit


def _root_ref(value: Any) -> tuple[str | None, str | None]:
    """A unit's `root` field: a unit id, or a pointer dict with `unit` (and `worker`)."""
    if value is None or value == "":
        return None, None
    if isinstance(value, Mapping):
        unit = value.get("unit")
        return (None if unit is None else str(unit)), (None if value.get("worker") is None else str(value.get("worker")))
    return str(value), None


def _natural(s: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]


def layout(run: Mapping[str, Any]) -> Layout:
    """Place every unit of a run on a lane and an x position (pure; no HTML)."""
    units = list(run.get("units") or [])
    seen: dict[str, int] = {}
    for u in units:
        seen[str(u.get("unit"))] = seen.get(str(u.get("unit")), 0) + 1
    dup_units = {k for k, n in seen.items() if n > 1}
    root_units = {str(r.get("unit")) for r in run.get("roots") or [] if isinstance(r, Mapping) and r.get("unit") is not None}

    bars: list[Bar] = []
    for i, u in enumerate(units):
        status = str(u.get("status") or "incomplete")
        role = u.get("role")
        if role is None and str(u.get("unit")) in root_units and status == "failed":
            role = "root"
        if u.get("start") is not None:  # start known: `time` is when it ended or failed
            start = parse_time(u.get("start"))
            end = parse_time(u.get("end")) or parse_time(u.get("time"))
            if start is not None and end is not None and end < start:
                end = None
        else:  # one timestamp only: where the unit sits on its lane
            start, end = parse_time(u.get("time")), parse_time(u.get("end"))
        bars.append(Bar(key=_unit_key(u, dup_units), unit=str(u.get("unit")), worker=str(u.get("worker") or "?"),
                        status=status if status in STATUS_CLASSES else "incomplete", family=u.get("family"),
                        role=None if role is None else str(role), root=None, start=start, end=end, order=i, raw=u))
    by_key = {b.key: b for b in bars}
    for b in bars:
        unit, worker = _root_ref(b.raw.get("root"))
        if unit is None:
            continue
        key = f"{worker or b.worker}/{unit}" if unit in dup_units else unit
        if key not in by_key and unit in dup_units:  # a pointer without worker: same worker first
            key = f"{b.worker}/{unit}"
        if key in by_key and key != b.key:
            b.root = key
            if by_key[key].role is None:
                by_key[key].role = "root"

    workers = sorted({b.worker for b in bars}, key=_natural)
    lane_of = {w: i for i, w in enumerate(workers)}
    for b in bars:
        b.lane = lane_of[b.worker]
    lanes: dict[int, list[Bar]] = {}
    for b in bars:
        lanes.setdefault(b.lane, []).append(b)

    timed = [b for b in bars if b.start is not None]
    mode = "time" if timed else "order"
    t0: datetime | None = None
    ticks: list[tuple[float, str]] = []
    if mode == "time":
        anchor = min(b.start for b in timed)
        for lane in lanes.values():
            if all(b.start is not None for b in lane):
                lane.sort(key=lambda b: (b.start, b.order))
            # else: keep the log order, so untimed units stay where the log has them
            _fill_times(lane, anchor)
        starts = [b.start for b in bars if b.start is not None]
        t0 = min(starts)
        ends = [b.end for b in bars if b.end is not None] + starts
        span = max((max(ends) - t0).total_seconds(), 1.0)
        busiest = max(len(v) for v in lanes.values())
        scale = (min(MAX_W, max(BASE_W, busiest * PER_UNIT_W)) - 20) / span
        for lane in lanes.values():
            _pack(lane, lambda b: (b.start - t0).total_seconds() * scale,
                  lambda b: ((b.end or b.start) - b.start).total_seconds() * scale)
        width = max(BASE_W, max((b.x + b.w for b in bars), default=0) + 20)
        ticks = _time_ticks(t0, span, scale, width)
    else:
        longest = max((len(v) for v in lanes.values()), default=1)
        scale = max(MIN_BAR + GAP, min(48.0, (BASE_W - 20) / max(longest, 1)))
        for lane in lanes.values():
            for i, b in enumerate(lane):
                b.x, b.w = 10 + i * scale, max(MIN_BAR, scale - 3)
        width = max(BASE_W, 10 + longest * scale + 20)
        step = max(1, math.ceil(TICK_MIN_PX / scale))
        nice = next((n for n in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000) if n >= step), step)
        ticks = [(10 + i * scale, f"#{i + 1}") for i in range(0, longest, nice)]

    cascades: dict[str, Cascade] = {}
    roots_in_order = sorted((b for b in bars if b.is_root), key=lambda b: (b.x, b.lane))
    for i, r in enumerate(roots_in_order):
        cascades[r.key] = Cascade(root=r.key, color=PALETTE[i % len(PALETTE)], victims=[])
    for b in bars:
        if b.root in cascades:
            cascades[b.root].victims.append(b.key)
    return Layout(workers=workers, bars=bars, by_key=by_key, cascades=cascades, mode=mode, width=width,
                  t0=t0, scale=scale, ticks=ticks)


def _fill_times(lane: list[Bar], anchor: datetime) -> None:
    """Give untimed units of a lane a start between their timed neighbours (by order).

    A lane with no time at all is laid out by order from the run's first timestamp.
    """
    known = [i for i, b in enumerate(lane) if b.start is not None]
    if not known:
        lane[0].start = anchor
        known = [0]
    steps = [(lane[j].start - lane[i].start).total_seconds() for i, j in zip(known, known[1:]) if j == i + 1]
    step = timedelta(seconds=max(1.0, median(steps) if steps else 60.0))
    for i, b in enumerate(lane):
        if b.start is not None:
            continue
        prev = max((k for k in known if k < i), default=None)
        nxt = min((k for k in known if k > i), default=None)
        if prev is not None and nxt is not None:
            frac = (i - prev) / (nxt - prev)
            b.start = lane[prev].start + (lane[nxt].start - lane[prev].start) * frac
        elif prev is not None:
            b.start = lane[prev].start + step * (i - prev)
        else:
            b.start = lane[nxt].start - step * (nxt - i)
    # ends: a unit runs until the next unit of its worker starts, unless the log says otherwise
    durations: list[float] = []
    for a, nb in zip(lane, lane[1:]):
        if a.end is None or a.end < a.start:
            a.end = max(nb.start, a.start)
        durations.append((a.end - a.start).total_seconds())
    last = lane[-1]
    if last.end is None or last.end < last.start:
        last.end = last.start + timedelta(seconds=max(1.0, median(durations) if durations else 60.0))


def _pack(lane: list[Bar], x_of, w_of) -> None:
    """Time-scaled bars, pushed right where a minimum-width bar would overlap its predecessor."""
    cursor = -math.inf
    for b in lane:
        x = 10 + x_of(b)
        w = max(MIN_BAR, w_of(b) - GAP)
        if x < cursor:
            x = cursor
        b.x, b.w = x, w
        cursor = x + w + GAP


def _time_ticks(t0: datetime, span: float, scale: float, width: float) -> list[tuple[float, str]]:
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
             172800, 604800)
    min_s = TICK_MIN_PX / scale
    step = next((s for s in steps if s >= min_s), steps[-1])
    base = t0.astimezone(timezone.utc)
    first = math.ceil(base.timestamp() / step) * step
    out: list[tuple[float, str]] = []
    t = first
    last_day = None
    limit = base.timestamp() + (width - 10) / scale
    while t <= limit:
        dt = datetime.fromtimestamp(t, tz=timezone.utc)
        day = dt.date()
        fmt = "%H:%M:%S" if step < 60 else "%H:%M"
        label = dt.strftime(fmt) if day == last_day else dt.strftime("%m-%d " + fmt)
        last_day = day
        out.append((10 + (t - base.timestamp()) * scale, label))
        t += step
    return out


# --------------------------------------------------------------------------- html pieces
CSS = """
:root{--ok:#2e9e4f;--failed:#d93f3f;--incomplete:#e8a33d;--ink:#1d2330;--muted:#5f6b7a;--line:#d9dee5;
--bg:#f6f7f9;--card:#fff;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:var(--bg)}
header.page{padding:18px 28px 6px}
header.page h1{margin:0 0 4px;font-size:22px}
header.page p{margin:0;color:var(--muted)}
nav.runs{padding:4px 28px 0;display:flex;flex-wrap:wrap;gap:6px}
nav.runs a{font-size:12px;padding:2px 8px;border:1px solid var(--line);border-radius:10px;text-decoration:none;color:var(--ink);background:#fff}
section.run{margin:14px 20px 28px;padding:16px 18px;background:var(--card);border:1px solid var(--line);border-radius:10px}
section.run>h2{margin:0 0 4px;font-size:19px}
.headline{margin:2px 0 10px;font-size:15px}
.headline b.lost{color:var(--failed)}
.counts{display:flex;flex-wrap:wrap;gap:8px;margin:6px 0 12px}
.count{border:1px solid var(--line);border-radius:8px;padding:4px 10px;background:#fafbfc}
.count b{font-size:16px;margin-right:4px}
.legend{display:flex;flex-wrap:wrap;gap:14px;align-items:center;font-size:12px;color:var(--muted);margin:4px 0 6px}
.legend i{display:inline-block;width:14px;height:10px;border-radius:2px;vertical-align:-1px;margin-right:4px}
.legend .sw-ok{background:var(--ok)}.legend .sw-failed{background:var(--failed)}.legend .sw-incomplete{background:var(--incomplete)}
.legend .sw-root{background:none;width:0;height:0;border-left:6px solid transparent;border-right:6px solid transparent;border-top:9px solid var(--ink);border-radius:0}
.legend .sw-band{background:#6f42c1;height:4px}
.tl-scroll{overflow:auto;max-height:72vh;border:1px solid var(--line);border-radius:8px;background:#fff}
.tl-grid{display:grid;position:relative}
.tl-corner{position:sticky;top:0;left:0;z-index:3;background:#fff;border-bottom:1px solid var(--line);border-right:1px solid var(--line);
 font-size:11px;color:var(--muted);padding:8px 8px 0}
.tl-axis{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line)}
.tl-labels{position:sticky;left:0;z-index:1;background:#fff;border-right:1px solid var(--line)}
.lane-label{height:30px;display:flex;align-items:center;justify-content:space-between;padding:0 8px;font:12px var(--mono);white-space:nowrap;overflow:hidden}
.lane-label:nth-child(even),.lane-bg.even{background:#f7f8fa}
.lane-label .hit{font:11px system-ui,sans-serif;color:var(--failed)}
.lane-label .clean{font:11px system-ui,sans-serif;color:var(--ok)}
svg text{font:10px system-ui,sans-serif}
.axis-tick{stroke:#c9cfd7}.axis-label{fill:var(--muted)}
.grid-line{stroke:#eef0f3}
.lane-bg{fill:#fff}.lane-bg.even{fill:#f7f8fa}
.unit{stroke:#fff;stroke-width:.5}
.unit.ok{fill:var(--ok)}.unit.failed{fill:var(--failed)}.unit.incomplete{fill:var(--incomplete)}
.unit.victim{fill-opacity:.55}
.unit.root{stroke:var(--ink);stroke-width:1.5}
.unit-label{fill:#fff;pointer-events:none;font-weight:600}
.root-marker{stroke:#fff;stroke-width:.8}
.cascade-band{opacity:.9}
.cascade-link{fill:none;stroke-width:1.3;opacity:.75}
.tl-chart.focus .cascade-link,.tl-chart.focus .cascade-band,.tl-chart.focus .unit{opacity:.15}
.tl-chart.focus .on{opacity:1!important}
h3{margin:18px 0 8px;font-size:16px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(430px,1fr));gap:12px}
.card{border:1px solid var(--line);border-left:6px solid var(--chip,#999);border-radius:8px;padding:10px 12px;background:#fff;min-width:0}
.card h4{margin:0 0 2px;font-size:14px;font-family:var(--mono)}
.card .title{margin:0 0 6px;color:var(--muted)}
.card .where{font-size:12px;color:var(--muted);margin-bottom:6px}
.card .mitigation{margin:6px 0}
.card details{margin:4px 0}
.card summary{cursor:pointer;color:var(--muted);font-size:12px}
.card ol,.card ul{margin:4px 0 4px 18px;padding:0}
.card .victims{font-size:12px;color:var(--muted)}
pre.evidence{margin:6px 0 0;padding:6px 8px;background:#0f1720;color:#e6edf3;border-radius:6px;font:11.5px/1.4 var(--mono);
 white-space:pre-wrap;overflow-wrap:anywhere;max-height:220px;overflow:auto}
.systematic{border:1px solid #f0c36d;background:#fff8e6;border-radius:8px;padding:8px 12px;margin:6px 0}
.problem{font-family:var(--mono);font-size:12px}
.none{color:var(--muted)}
footer{padding:0 28px 24px;color:var(--muted);font-size:12px}
"""

# Hover a root (its marker or bar) or a victim: highlight its cascade. Constant text; no data in here.
SCRIPT = """
(function(){
  document.documentElement.setAttribute('data-js','ready');
  document.querySelectorAll('svg.tl-chart').forEach(function(svg){
    function on(key){
      svg.classList.add('focus');
      svg.querySelectorAll('[data-cascade="'+CSS.escape(key)+'"]').forEach(function(e){e.classList.add('on');});
    }
    function off(){svg.classList.remove('focus');svg.querySelectorAll('.on').forEach(function(e){e.classList.remove('on');});}
    svg.addEventListener('mouseover',function(ev){
      var t=ev.target.closest('[data-cascade]'); if(t){on(t.getAttribute('data-cascade'));}
    });
    svg.addEventListener('mouseout',function(ev){ if(ev.target.closest('[data-cascade]')) off(); });
  });
})();
"""


def _attrs(**kw: Any) -> str:
    """Quoted, escaped attributes; `data_x` becomes `data-x`; None values are left out."""
    out = []
    for k, v in kw.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        out.append(f'{name}="{esc(v)}"')
    return " ".join(out)


def _svg_timeline(run_idx: int, lay: Layout) -> tuple[str, str]:
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
            f'<rect class="cascade-band" {_attrs(data_root=r.unit, data_cascade=key)} x="{r.x:.1f}" '
            f'y="{r.lane * LANE_H + BAR_Y + BAR_H + 2}" width="{max(x2 - r.x, MIN_BAR):.1f}" height="{BAND_H}" '
            f'fill="{c.color}"><title>{esc(f"cascade of {r.unit}: {len(c.victims)} victim(s)")}</title></rect>')
    for li, worker in enumerate(lay.workers):
        y = li * LANE_H
        lane_bars = by_lane.get(li, [])
        failed = sum(1 for b in lane_bars if b.status != "ok")
        out.append(f'<g class="lane" {_attrs(data_worker=worker, data_units=len(lane_bars), data_lost=failed)}>')
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
                tip.append(_fmt_time(b.start))
            out.append(
                f'<rect class="{" ".join(cls)}" '
                + _attrs(id=f"u-{_anchor(run_idx, lay, b.key)}", data_unit=b.unit, data_unit_key=b.key, data_worker=b.worker,
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
            x1, y1 = _fault_x(lay, r), r.lane * LANE_H + BAR_Y
            x2, y2 = v.x + v.w / 2, v.lane * LANE_H + BAR_Y
            if v.lane == r.lane:
                lift = min(BAR_Y + 3, 5 + abs(x2 - x1) / 4)
                d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 - lift:.1f} {x2:.1f},{y2 - lift:.1f} {x2:.1f},{y2:.1f}"
            else:
                ym = (y1 + y2) / 2
                d = f"M{x1:.1f},{y1 + BAR_H / 2:.1f} C{x1 + 30:.1f},{ym:.1f} {x2 - 30:.1f},{ym:.1f} {x2:.1f},{y2 + BAR_H / 2:.1f}"
            arrow = f"arrow-{run_idx}-{PALETTE.index(c.color)}"
            out.append(f'<path class="cascade-link" {_attrs(data_root=r.unit, data_victim=v.unit, data_victim_key=v.key, data_cascade=key)} '
                       f'd="{d}" stroke="{c.color}" marker-end="url(#{arrow})"/>')
            drawn += 1
    out.append("</g>")
    # root markers last so they sit on top; each links to its card
    out.append('<g class="root-markers">')
    for key, c in lay.cascades.items():
        r = lay.by_key[key]
        cx = _fault_x(lay, r)
        top = r.lane * LANE_H + BAR_Y
        out.append(f'<a href="#card-{_anchor(run_idx, lay, key)}"><path class="root-marker" '
                   + _attrs(data_unit=r.unit, data_worker=r.worker, data_family=r.family or None, data_cascade=key)
                   + f' d="M{cx - 6:.1f},{top - 8:.1f} L{cx + 6:.1f},{top - 8:.1f} L{cx:.1f},{top + 1:.1f} Z" fill="{c.color}">'
                   f"<title>{esc(_marker_tip(r))}</title></path></a>")
    out.append("</g></svg>")
    return "".join(axis), "".join(out)


def _fault_x(lay: Layout, r: Bar) -> float:
    """Where a root fault happened on its bar: the end when the unit's start is known, else the start."""
    if lay.mode == "time" and r.raw.get("start"):
        return r.x + r.w - min(r.w / 2, 6)
    return r.x + min(r.w / 2, 8)


def _marker_tip(r: Bar) -> str:
    return f"root fault {r.family or 'unknown'} on {r.worker}, unit {r.unit}"


def _timeline(run_idx: int, lay: Layout) -> str:
    axis, chart = _svg_timeline(run_idx, lay)
    labels = []
    for li, worker in enumerate(lay.workers):
        lane_bars = [b for b in lay.bars if b.lane == li]
        lost = sum(1 for b in lane_bars if b.status != "ok")
        roots = sum(1 for b in lane_bars if b.is_root)
        if lost:
            note = f'<span class="hit" title="{esc(f"{lost} of {len(lane_bars)} units not ok")}">{lost}/{len(lane_bars)} lost</span>'
        else:
            note = f'<span class="clean">{len(lane_bars)} ok</span>'
        labels.append(f'<div class="lane-label" {_attrs(data_worker=worker, data_roots=roots)} title="{esc(worker)}">'
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
        f'<div class="tl-scroll"><div class="tl-grid timeline" {_attrs(data_mode=lay.mode)} '
        f'style="grid-template-columns:{LABEL_W}px {lay.width:.0f}px;grid-template-rows:{AXIS_H}px auto">'
        f'<div class="tl-corner">{esc(corner)}</div><div class="tl-axis">{axis}</div>'
        f'<div class="tl-labels">{"".join(labels)}</div><div class="tl-body">{chart}</div></div></div>'
    )


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
    parts = [f'<article class="card root-fault" id="card-{_anchor(run_idx, lay, key)}" '
             + _attrs(data_family=family, data_unit=unit, data_worker=worker, data_victims=len(victims))
             + f' style="--chip:{color}">']
    parts.append(f"<h4>{esc(family)}</h4>")
    if title:
        parts.append(f'<p class="title">{esc(title)}</p>')
    where = [f"unit <b>{esc(unit)}</b>"]
    if worker:
        where.append(f"worker <b>{esc(worker)}</b>")
    if when:
        where.append(esc(_fmt_time(when)))
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
    out = [f'<section class="run" id="run-{run_idx}" {_attrs(data_run=name, data_units=total)}>']
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
        out.append(_timeline(run_idx, lay))
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
            out.append(f'<div class="systematic" {_attrs(data_family=fam, data_workers=n_workers, data_roots=n_roots)}>'
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
        return " ".join(f"{k}={v}" for k, v in p.items())
    return str(p)


def _root_sort(r: Mapping[str, Any], lay: Layout) -> tuple:
    """Earliest fault first (its own time, else where its bar sits)."""
    b = next((b for b in lay.bars if b.unit == str(r.get("unit")) and b.is_root), None)
    t = parse_time(r.get("time"))
    return (t is None, t.timestamp() if t else 0.0, b.x if b else math.inf, b.lane if b else 0, str(r.get("unit")))


def render(runs: Sequence[Mapping[str, Any]], *, families: Mapping[str, Mapping[str, Any]] | None = None,
           title: str | None = None, generated: datetime | None = None) -> str:
    """The whole HTML page for these run objects (`Run.to_dict()`)."""
    families = families or {}
    title = title or ("sigclass report: " + ", ".join(str(r.get("run")) for r in runs[:3])
                      + (f" and {len(runs) - 3} more" if len(runs) > 3 else ""))
    gen = (generated or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [f'<header class="page"><h1>{esc(title)}</h1><p>{len(runs)} run(s) · generated {esc(gen)} by sigclass</p></header>']
    if len(runs) > 1:
        body.append('<nav class="runs">' + "".join(
            f'<a href="#run-{i}">{esc(r.get("run"))}</a>' for i, r in enumerate(runs)) + "</nav>")
    body.extend(render_run(i, r, families) for i, r in enumerate(runs))
    body.append("<footer>Log text is shown as text. Hover a root marker, a band or a bar to highlight its cascade; "
                "click a root marker to jump to its card.</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            + "".join(body) + f"<script>{SCRIPT}</script></body></html>\n")


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
    """A `sigclass.runs.Run` as the report reads it: `to_dict()` plus each unit's start time and the notes."""
    d = run.to_dict()
    for ud, u in zip(d["units"], run.units):
        ud.setdefault("start", getattr(u, "start", None))
    return d
