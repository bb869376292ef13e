"""Durable verdicts: a confirmed or refuted root cause appended to the failure history.

The history directory (`sigclass runs ... --history PATH`) holds the units
table as parquet files; verdicts go beside it, in `PATH/verdicts/`, one file
per append, one row per verdict: `record` (`root-cause-confirmed` or
`root-cause-refuted`), family, points_to, why, the evidence runs, when it was
recorded and a stable key (the same verdict on the same runs is written once).
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from sigclass.errors import InputError
from sigclass.outputs.history import row_key

VERDICTS_DIR = "verdicts"
VERDICT_SCHEMA = pl.Schema({
    "record": pl.String,
    "family": pl.String,
    "points_to": pl.String,
    "why": pl.String,
    "runs": pl.List(pl.String),
    "recorded_at": pl.Datetime("ms", "UTC"),
    "key": pl.String,
})
RECORDS = {"confirmed": "root-cause-confirmed", "refuted": "root-cause-refuted"}


def verdict_rows(comparison: Mapping[str, Any], now: datetime) -> list[dict[str, Any]]:
    out = []
    for v in comparison.get("verdicts", []):
        rec = RECORDS.get(v["status"])
        if rec is None:
            continue
        runs = [p for e in comparison.get("probes", []) if e["family"] == v["family"] and e["status"] != "not-run"
                for p in e["runs"]]
        runs = list(dict.fromkeys(runs)) or list(comparison.get("runs", []))
        out.append({"record": rec, "family": v["family"], "points_to": v.get("points_to"), "why": v.get("why", ""),
                    "runs": runs, "recorded_at": now, "key": row_key([rec, v["family"], v.get("points_to"), *sorted(runs)])})
    return out


def read_verdicts(path: Path | str) -> pl.DataFrame:
    folder = Path(path) / VERDICTS_DIR
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        return pl.DataFrame(schema=VERDICT_SCHEMA)
    try:
        return pl.read_parquet([str(f) for f in files], schema=VERDICT_SCHEMA)
    except (OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(f"{folder}: cannot read the recorded verdicts ({exc}); move the broken file away") from None


def append_verdicts(path: Path | str, comparison: Mapping[str, Any], *, now: datetime | None = None) -> tuple[int, int]:
    """Append the comparison's confirmed and refuted verdicts; returns (written, already there)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: --history needs a directory (parquet files are added to it), not a file")
    now = now or datetime.now(timezone.utc)
    rows = verdict_rows(comparison, now)
    have = set(read_verdicts(path)["key"].to_list()) if rows else set()
    fresh = [r for r in rows if r["key"] not in have]
    if not fresh:
        return 0, len(rows)
    folder = path / VERDICTS_DIR
    name = f"part-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = folder / f".{name}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(fresh, schema=VERDICT_SCHEMA).write_parquet(tmp)
        os.replace(tmp, folder / name)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write the verdicts ({exc.strerror or exc})") from None
    return len(fresh), len(rows) - len(fresh)


def root_causes(path: Path | str) -> pl.DataFrame:
    """The recorded verdicts for `sigclass stats`: one row per verdict, its evidence runs as one string."""
    df = read_verdicts(path)
    return df.select("recorded_at", "record", "family", "points_to", pl.col("runs").list.join(", ")).sort("recorded_at")
