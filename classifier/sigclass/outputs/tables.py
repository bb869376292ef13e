"""The units table of `sigclass runs`: one row per unit of every run, under one explicit schema.

The table is declared once (`UNITS_SCHEMA`); rows go in as plain columns,
the query is built from small `LazyFrame -> LazyFrame` helpers, and the only
`collect()` is at the edge (`units_table`), right before writing csv or
parquet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, TYPE_CHECKING

import polars as pl

from sigclass.vocab import UnitRole, UnitStatus

if TYPE_CHECKING:  # pragma: no cover
    from sigclass.records import Run

STATUS = pl.Enum([s.value for s in UnitStatus])
ROLE = pl.Enum([r.value for r in UnitRole])
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%.3fZ"

UNITS_SCHEMA = pl.Schema({
    "run": pl.String,
    "unit": pl.String,
    "worker": pl.String,
    "status": STATUS,
    "family": pl.String,
    "role": ROLE,
    "root": pl.String,
    "time": pl.Datetime("ms", "UTC"),
    "fingerprint": pl.String,
    "source": pl.String,
    "line": pl.Int64,
    "evidence": pl.String,
})

# the same columns as they arrive from the runs (time still an ISO string)
_RAW_SCHEMA = pl.Schema({**UNITS_SCHEMA, "time": pl.String})


def raw_units(runs: Iterable["Run"]) -> pl.LazyFrame:
    """Every unit of every run as a lazy frame, time still text."""
    cols: dict[str, list] = {name: [] for name in _RAW_SCHEMA}
    for run in runs:
        for u in run.units:
            cols["run"].append(run.run)
            cols["unit"].append(u.unit)
            cols["worker"].append(u.worker)
            cols["status"].append(u.status)
            cols["family"].append(u.family)
            cols["role"].append(u.role)
            cols["root"].append(u.root)
            cols["time"].append(u.time)
            cols["fingerprint"].append(u.fingerprint)
            cols["source"].append(u.source)
            cols["line"].append(u.line)
            cols["evidence"].append(u.evidence[-1] if u.evidence else None)
    return pl.LazyFrame(cols, schema=_RAW_SCHEMA)


def with_times(lf: pl.LazyFrame) -> pl.LazyFrame:
    """ISO-8601 UTC text ('2026-03-01T12:34:56.789Z') to a UTC datetime."""
    return lf.with_columns(
        pl.col("time").str.to_datetime(TIME_FORMAT, time_unit="ms", time_zone="UTC", strict=False)
    )


def in_unit_order(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Runs in their order, units numerically (then by name), then by worker."""
    return (
        lf.with_row_index("_row")
        .with_columns(
            pl.col("_row").min().over("run").alias("_run"),
            pl.col("unit").cast(pl.Int64, strict=False).alias("_num"),
        )
        .sort(["_run", "_num", "unit", "worker"], nulls_last=True)
        .drop("_row", "_run", "_num")
    )


def family_counts(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Failed units per (family, role), most frequent first."""
    return (
        lf.filter(pl.col("status") == "failed")
        .group_by("family", "role")
        .agg(pl.len().alias("units"), pl.col("run").n_unique().alias("runs"))
        .sort(["units", "family"], descending=[True, False])
    )


def units_table(runs: Iterable["Run"]) -> pl.DataFrame:
    """The units table, collected (the one collect)."""
    return raw_units(runs).pipe(with_times).pipe(in_unit_order).select(UNITS_SCHEMA.names()).collect()


# a spreadsheet reads a cell that starts with one of these as a formula (or, for tab and CR, strips them)
FORMULA_START = r"^[=+\-@\t\r]"


def spreadsheet_safe(df: pl.DataFrame) -> pl.DataFrame:
    """Text cells that a spreadsheet would run as a formula, prefixed with `'` (as OWASP advises and
    spreadsheet-safe CSV writers do); the parquet table keeps the values as they are."""
    text = [name for name, dtype in df.schema.items() if dtype == pl.String]
    return df.with_columns(
        pl.when(pl.col(c).str.contains(FORMULA_START)).then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c)
        for c in text
    )


def write_units(runs: Iterable["Run"], out: Path | str, fmt: str) -> None:
    """Write the units table as csv or parquet."""
    df = units_table(runs)
    if fmt == "parquet":
        df.write_parquet(out)
    elif fmt == "csv":
        spreadsheet_safe(df).write_csv(out, datetime_format=TIME_FORMAT)
    else:
        raise ValueError(f"unknown table format {fmt!r}")


def units_csv(runs: Iterable["Run"]) -> str:
    return spreadsheet_safe(units_table(runs)).write_csv(datetime_format=TIME_FORMAT)
