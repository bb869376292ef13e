"""Failure history over time: the units table of many runs in a parquet dataset, and trend views.

`sigclass runs ... --history PATH` appends the units table of the batch
(`sigclass.outputs.tables`) to PATH, a directory of parquet files, one file per
append, all under `HISTORY_SCHEMA`. `sigclass stats PATH` reads it back
lazily and answers: families over time (per day or week), top fingerprints,
first and last seen per family, and families that came back after a quiet
spell.

Deduplication (appending the same run twice never double counts):

* **on write**, rows whose `key` is already in the dataset are skipped, so a
  repeated append writes nothing (and no file);
* **on read**, `dedupe` keeps one row per unit, `(run, worker, unit)`, the one
  from the latest ingest. That also covers two appends racing each other,
  and a run appended again after it changed (a unit that was `incomplete`
  and is now `ok` counts once, with its latest outcome).

`key` is a stable row key: a BLAKE2b hash of run, worker, unit, source,
status, family and fingerprint. It is computed with hashlib rather than
`Expr.hash`, whose values polars does not promise to keep across versions.

A run is identified by its name (the directory's name, the `run` column):
two different runs with the same directory name are one run to the history.

Times: `seen` is the unit's own time (when it failed or finished) and, where
the log had none, the ingest time. Everything below `scan_history` is a
`LazyFrame -> LazyFrame` helper in polars expressions; `collect_stats` is
the one collect.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
import hashlib
import os
from pathlib import Path
from typing import Iterable, Mapping
import uuid

import polars as pl
import polars.selectors as cs

from sigclass.errors import InputError
from sigclass.outputs.tables import UNITS_SCHEMA, units_table
from sigclass.vocab import UnitRole

HISTORY_SCHEMA = pl.Schema({
    **UNITS_SCHEMA,
    "batch": pl.String,  # one id per append
    "ingested_at": pl.Datetime("ms", "UTC"),
    "key": pl.String,  # stable row key, see the module docstring
})
KEY_COLUMNS = ("run", "worker", "unit", "source", "status", "family", "fingerprint")
UNIT_IDENTITY = ("run", "worker", "unit")
FILE_GLOB = "*.parquet"
PERIODS = {"day": "1d", "week": "1w"}  # weeks start on Monday

# --------------------------------------------------------------------------- writing
@dataclass(frozen=True)
class Appended:
    path: Path
    file: Path | None  # None: nothing new to write
    rows: int
    skipped: int
    batch: str
    problems: tuple[str, ...] = ()  # history files skipped as unreadable


def row_key(values: Iterable[object]) -> str:
    """The stable key of one row: BLAKE2b-96 over its key columns, unit-separator joined."""
    text = "\x1f".join("" if v is None else str(v) for v in values)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def with_keys(units: pl.DataFrame, *, batch: str, ingested_at: datetime) -> pl.DataFrame:
    """The units table with `batch`, `ingested_at` and `key` added, in `HISTORY_SCHEMA`."""
    keys = [row_key(r) for r in units.select(pl.col(c).cast(pl.String) for c in KEY_COLUMNS).iter_rows()]
    return units.with_columns(
        pl.lit(batch, pl.String).alias("batch"),
        pl.lit(ingested_at.astimezone(timezone.utc), pl.Datetime("ms", "UTC")).alias("ingested_at"),
        pl.Series("key", keys, pl.String),
    ).select(HISTORY_SCHEMA.names()).cast(dict(HISTORY_SCHEMA))


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.glob(FILE_GLOB) if p.is_file())


REQUIRED = ("run", "unit", "status", "batch", "ingested_at", "key")  # a file without these is not ours


def _file_problem(f: Path) -> str | None:
    """Why one parquet file of a history cannot be read as part of it (its footer only is read), or None."""
    try:
        schema = pl.read_parquet_schema(f)
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a broken file
        why = " ".join(str(exc).split())[:200] or type(exc).__name__
        return f"{f}: not a readable parquet file ({why}); skipped"
    missing = [c for c in REQUIRED if c not in schema]
    if missing:
        return f"{f}: not a sigclass history file (no {', '.join(missing)} column); skipped"
    wrong = [f"{c} is {schema[c]}, not {HISTORY_SCHEMA[c]}" for c in HISTORY_SCHEMA
             if c in schema and schema[c] != HISTORY_SCHEMA[c]]
    if wrong:
        return f"{f}: columns of the wrong type ({'; '.join(wrong)}); skipped"
    return None


def readable_files(path: Path) -> tuple[list[Path], list[str]]:
    """The history's parquet files that can be read, and one line for each that cannot."""
    good, problems = [], []
    for f in _files(path):
        why = _file_problem(f)
        if why is None:
            good.append(f)
        else:
            problems.append(why)
    return good, problems


def scan_history(path: Path | str, problems: list[str] | None = None) -> pl.LazyFrame:
    """Every row ever appended (no dedupe), lazily, under the explicit schema. Files that are not readable
    history files are left out, each named in `problems`."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: no history here (a directory written by `sigclass runs ... --history {path}`)")
    good, bad = readable_files(path)
    if problems is not None:
        problems.extend(bad)
    if not good:
        return pl.LazyFrame(schema=HISTORY_SCHEMA)
    return pl.scan_parquet([str(f) for f in good], schema=HISTORY_SCHEMA, missing_columns="insert",
                           extra_columns="ignore")


def append_units(path: Path | str, units: pl.DataFrame, *, now: datetime | None = None,
                 batch: str | None = None) -> Appended:
    """Append a units table (`tables.UNITS_SCHEMA`) to the dataset at `path`; skip keys it already holds."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: --history needs a directory (parquet files are added to it), not a file")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path}: cannot make the history folder ({exc.strerror or exc}); name a writable folder") from None
    now = now or datetime.now(timezone.utc)
    batch = batch or f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    rows = with_keys(units, batch=batch, ingested_at=now)
    new = rows.lazy().unique(subset="key", keep="first", maintain_order=True)
    problems: list[str] = []
    if _files(path):
        new = new.join(scan_history(path, problems).select("key").unique(), on="key", how="anti")
    try:
        fresh = new.collect()
    except (OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(f"{path}: cannot read the history to append to it ({exc})") from None
    skipped = rows.height - fresh.height
    if fresh.height == 0:
        return Appended(path, None, 0, skipped, batch, tuple(problems))
    out = path / f"part-{batch}.parquet"
    tmp = path / f".{out.name}.tmp"  # not matched by FILE_GLOB: readers never see a half-written file
    try:
        fresh.write_parquet(tmp, compression="zstd", statistics=True)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write the history ({exc.strerror or exc})") from None
    return Appended(path, out, fresh.height, skipped, batch, tuple(problems))


def append_runs(path: Path | str, runs: Iterable[object], *, now: datetime | None = None,
                batch: str | None = None) -> Appended:
    """Append the units table of these runs (`sigclass.records.Run`) to the history at `path`."""
    return append_units(path, units_table(runs), now=now, batch=batch)


# --------------------------------------------------------------------------- reading
def dedupe(lf: pl.LazyFrame) -> pl.LazyFrame:
    """One row per unit (run, worker, unit): the latest ingest wins (equal keys are equal rows)."""
    return (
        lf.sort(["ingested_at", "batch", "key"], nulls_last=False)
        .unique(subset=list(UNIT_IDENTITY), keep="last", maintain_order=True)
    )


def with_seen(lf: pl.LazyFrame) -> pl.LazyFrame:
    """`seen`: the unit's own time, else when it was ingested."""
    return lf.with_columns(pl.coalesce("time", "ingested_at").alias("seen"))


def failures(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Failed units that carry a family."""
    return lf.filter((pl.col("status") == "failed") & pl.col("family").is_not_null())


def _counts() -> list[pl.Expr]:
    return [
        pl.len().alias("units"),
        (pl.col("role") == UnitRole.ROOT.value).sum().alias("roots"),
        (pl.col("role") == "cascade").sum().alias("victims"),
        pl.col("run").n_unique().alias("runs"),
    ]


def families_over_time(lf: pl.LazyFrame, by: str = "day") -> pl.LazyFrame:
    """Failed units per period and family (period: the day, or the Monday of the week, in UTC)."""
    return (
        lf.pipe(failures)
        .with_columns(pl.col("seen").dt.truncate(PERIODS[by]).dt.date().alias("period"))
        .group_by("period", "family")
        .agg(_counts())
        .sort(["period", "roots", "units", "family"], descending=[False, True, True, False])
    )


def family_summary(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Per family: counts, first and last seen; root faults rank first (a cascade family is only a symptom)."""
    return (
        lf.pipe(failures)
        .group_by("family")
        .agg(*_counts(), pl.col("seen").min().alias("first_seen"), pl.col("seen").max().alias("last_seen"))
        .sort(["roots", "units", "family"], descending=[True, True, False])
    )


def top_fingerprints(lf: pl.LazyFrame, n: int = 10) -> pl.LazyFrame:
    """The most frequent failure fingerprints, with their family, first and last seen."""
    return (
        lf.pipe(failures)
        .filter(pl.col("fingerprint").is_not_null())
        .group_by("fingerprint", "family")
        .agg(*_counts(), pl.col("seen").min().alias("first_seen"), pl.col("seen").max().alias("last_seen"))
        .sort(["roots", "units", "last_seen", "fingerprint"], descending=[True, True, True, False])
        .head(n)
    )


def comebacks(lf: pl.LazyFrame, quiet_days: int = 7) -> pl.LazyFrame:
    """A family seen again after at least `quiet_days` days without it: one row per return."""
    gap = pl.col("seen") - pl.col("quiet_since")
    return (
        lf.pipe(failures)
        .select("family", "seen", "run")
        .sort(["family", "seen"])
        .with_columns(pl.col("seen").shift(1).over("family").alias("quiet_since"))
        .filter(gap >= pl.duration(days=quiet_days))
        .select(
            "family",
            "quiet_since",
            pl.col("seen").alias("back_at"),
            (gap.dt.total_seconds() / 86400.0).round(1).alias("quiet_days"),
            pl.col("run").alias("back_in_run"),
        )
        .sort(["back_at", "family"])
    )


def overview(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.select(
        pl.col("run").n_unique().alias("runs"),
        pl.len().alias("units"),
        (pl.col("status") == "failed").sum().alias("failed"),
        (pl.col("status") == "incomplete").sum().alias("incomplete"),
        (pl.col("role") == UnitRole.ROOT.value).sum().alias("roots"),
        pl.col("batch").n_unique().alias("batches"),
        pl.col("seen").min().alias("first_seen"),
        pl.col("seen").max().alias("last_seen"),
    )


def stats_frames(lf: pl.LazyFrame, *, by: str = "day", quiet_days: int = 7, top: int = 10) -> dict[str, pl.LazyFrame]:
    """Every view of `sigclass stats` over raw history rows, still lazy."""
    if by not in PERIODS:
        raise ValueError(f"by must be one of {', '.join(PERIODS)}")
    base = lf.pipe(dedupe).pipe(with_seen)
    return {
        "overview": overview(base),
        "families": family_summary(base),
        "over_time": families_over_time(base, by),
        "top_fingerprints": top_fingerprints(base, top),
        "comebacks": comebacks(base, quiet_days),
    }


def collect_stats(path: Path | str, problems: list[str] | None = None, **kw: object) -> dict[str, pl.DataFrame]:
    """The one collect: every view at once (polars shares the common scan). Unreadable files are skipped
    and named in `problems`."""
    frames = stats_frames(scan_history(path, problems), **kw)  # type: ignore[arg-type]
    try:
        got = pl.collect_all(list(frames.values()))
    except (OSError, pl.exceptions.ComputeError) as exc:
        raise InputError(f"{path}: cannot read the history ({exc})") from None
    return dict(zip(frames, got))


# --------------------------------------------------------------------------- output
def _plain(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        cs.datetime().dt.to_string("%Y-%m-%dT%H:%M:%SZ"),
        cs.date().dt.to_string("%Y-%m-%d"),
    )


def stats_json(stats: Mapping[str, pl.DataFrame], **meta: object) -> dict[str, object]:
    out: dict[str, object] = dict(meta)
    for name, df in stats.items():
        rows = _plain(df).to_dicts()
        out[name] = rows[0] if name == "overview" and rows else rows
    return out


def _table(df: pl.DataFrame, indent: str = "  ") -> list[str]:
    df = _plain(df)
    if df.height == 0:
        return [f"{indent}(none)"]
    cols = df.columns
    cells = [["" if v is None else str(v) for v in row] for row in df.iter_rows()]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(cols)]
    numeric = [df.schema[c].is_numeric() for c in cols]

    def line(vals: list[str]) -> str:
        return indent + "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    return [line(cols)] + [line(r) for r in cells]


def stats_text(stats: Mapping[str, pl.DataFrame], *, by: str, quiet_days: int) -> list[str]:
    ov = _plain(stats["overview"]).to_dicts()
    o = ov[0] if ov else {}
    out = [f"history: {o.get('runs', 0)} run(s), {o.get('units', 0)} unit(s) ({o.get('failed', 0)} failed, "
           f"{o.get('incomplete', 0)} incomplete, {o.get('roots', 0)} root faults) from {o.get('batches', 0)} append(s), "
           f"{o.get('first_seen') or '-'} .. {o.get('last_seen') or '-'}"]
    out += ["", "families, by root faults (then failed units; first and last seen):"] + _table(stats["families"])
    out += ["", f"families per {by}:"] + _table(stats["over_time"])
    out += ["", "top fingerprints:"] + _table(stats["top_fingerprints"])
    out += ["", f"came back after at least {quiet_days} quiet days:"] + _table(stats["comebacks"])
    if "root_causes" in stats and stats["root_causes"].height:
        out += ["", "root causes confirmed or refuted by `sigclass compare`:"] + _table(stats["root_causes"])
    return out
