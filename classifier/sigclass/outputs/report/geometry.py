"""The report's layout model: times, lanes of unit bars per worker, cascades, and their pixel geometry (no HTML here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
import math
import re
from statistics import median
from typing import Any, Mapping

from sigclass.vocab import UnitRole, UnitStatus
from sigclass.text.workers import number_key


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

STATUS_CLASSES = tuple(UnitStatus)

# cascade colours: distinct from the status colours (green / red / amber)
PALETTE = ("#6f42c1", "#1f77b4", "#d63384", "#0f8b8d", "#8c564b", "#3d5afe", "#b8860b", "#7b1fa2",
           "#00838f", "#c2185b", "#5d4037", "#283593")


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


def fmt_time(t: datetime | None, with_date: bool = True) -> str:
    if t is None:
        return ""
    t = t.astimezone(timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S") + " UTC" if with_date else t.strftime("%H:%M:%S")


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
        return self.role == UnitRole.ROOT


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


def unit_key(u: Mapping[str, Any], dup_units: set[str]) -> str:
    unit = str(u.get("unit"))
    return f"{u.get('worker')}/{unit}" if unit in dup_units else unit


def root_ref(value: Any) -> tuple[str | None, str | None]:
    """A unit's `root` field: a unit id, or a pointer dict with `unit` (and `worker`)."""
    if value is None or value == "":
        return None, None
    if isinstance(value, Mapping):
        unit = value.get("unit")
        return (None if unit is None else str(unit)), (None if value.get("worker") is None else str(value.get("worker")))
    return str(value), None


def natural(s: str) -> list[Any]:
    return [number_key(p) if i % 2 else p for i, p in enumerate(re.split(r"([0-9]+)", s))]


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
        status = str(u.get("status") or UnitStatus.INCOMPLETE)
        role = u.get("role")
        if role is None and str(u.get("unit")) in root_units and status == UnitStatus.FAILED:
            role = UnitRole.ROOT
        if u.get("start") is not None:  # start known: `time` is when it ended or failed
            start = parse_time(u.get("start"))
            end = parse_time(u.get("end")) or parse_time(u.get("time"))
            if start is not None and end is not None and end < start:
                end = None
        else:  # one timestamp only: where the unit sits on its lane
            start, end = parse_time(u.get("time")), parse_time(u.get("end"))
        bars.append(Bar(key=unit_key(u, dup_units), unit=str(u.get("unit")), worker=str(u.get("worker") or "?"),
                        status=status if status in STATUS_CLASSES else UnitStatus.INCOMPLETE, family=u.get("family"),
                        role=None if role is None else str(role), root=None, start=start, end=end, order=i, raw=u))
    by_key = {b.key: b for b in bars}
    for b in bars:
        unit, worker = root_ref(b.raw.get("root"))
        if unit is None:
            continue
        key = f"{worker or b.worker}/{unit}" if unit in dup_units else unit
        if key not in by_key and unit in dup_units:  # a pointer without worker: same worker first
            key = f"{b.worker}/{unit}"
        if key in by_key and key != b.key:
            b.root = key
            if by_key[key].role is None:
                by_key[key].role = UnitRole.ROOT

    workers = sorted({b.worker for b in bars}, key=natural)
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
            fill_times(lane, anchor)
        starts = [b.start for b in bars if b.start is not None]
        t0 = min(starts)
        ends = [b.end for b in bars if b.end is not None] + starts
        span = max((max(ends) - t0).total_seconds(), 1.0)
        busiest = max(len(v) for v in lanes.values())
        scale = (min(MAX_W, max(BASE_W, busiest * PER_UNIT_W)) - 20) / span
        for lane in lanes.values():
            pack(lane, lambda b: (b.start - t0).total_seconds() * scale,
                  lambda b: ((b.end or b.start) - b.start).total_seconds() * scale)
        width = max(BASE_W, max((b.x + b.w for b in bars), default=0) + 20)
        ticks = time_ticks(t0, span, scale, width)
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


def fill_times(lane: list[Bar], anchor: datetime) -> None:
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


def pack(lane: list[Bar], x_of, w_of) -> None:
    """Time-scaled bars, pushed right where a minimum-width bar would overlap its predecessor."""
    cursor = -math.inf
    for b in lane:
        x = 10 + x_of(b)
        w = max(MIN_BAR, w_of(b) - GAP)
        if x < cursor:
            x = cursor
        b.x, b.w = x, w
        cursor = x + w + GAP


def time_ticks(t0: datetime, span: float, scale: float, width: float) -> list[tuple[float, str]]:
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
