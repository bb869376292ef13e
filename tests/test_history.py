"""Failure history: appending units tables to a parquet dataset, and `sigclass stats` over it."""

from __future__ import annotations

import json
import shutil
from datetime import date, datetime, timezone
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from sigclass.outputs import history as hs
from sigclass.cli.app import app
from sigclass.outputs.tables import UNITS_SCHEMA

from conftest import FILES

runner = CliRunner()
COUNT = pl.UInt32
UTC = timezone.utc


def t(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=UTC)


def units(run: str, rows: list[tuple]) -> pl.DataFrame:
    """(unit, worker, status, family, role, root, time, fingerprint) rows as a units table."""
    cols = ["unit", "worker", "status", "family", "role", "root", "time", "fingerprint"]
    data = [dict(zip(cols, r)) | {"run": run, "source": f"{r[1]}.log", "line": 1, "evidence": None} for r in rows]
    return pl.DataFrame(data, schema=UNITS_SCHEMA)


R1 = units("r1", [
    ("1", "gpu0", "failed", "cuda-oom", "root", None, t("2026-03-01T10:00:00"), "fa"),
    ("2", "gpu0", "failed", "vllm-engine-dead", "cascade", "1", t("2026-03-01T10:01:00"), "fb"),
    ("3", "gpu1", "ok", None, None, None, t("2026-03-01T10:30:00"), None),
    ("4", "gpu0", "incomplete", None, "cascade", "1", t("2026-03-01T10:02:00"), None),
])
R2 = units("r2", [
    ("1", "rank0", "failed", "nccl-error", "root", None, t("2026-03-03T09:00:00"), "fc"),
    ("2", "rank1", "failed", "cuda-oom", "root", None, t("2026-03-03T12:00:00"), "fa"),
])
R3 = units("r3", [
    ("1", "gpu0", "failed", "cuda-oom", "root", None, t("2026-03-20T08:00:00"), "fa2"),
    ("2", "gpu1", "ok", None, None, None, None, None),  # no time in the log: seen when ingested
])


@pytest.fixture()
def history(tmp_path: Path) -> Path:
    """Three batches, on three days."""
    path = tmp_path / "history"
    assert hs.append_units(path, R1, now=t("2026-03-01T12:00:00"), batch="A").rows == 4
    assert hs.append_units(path, R2, now=t("2026-03-03T13:00:00"), batch="B").rows == 2
    assert hs.append_units(path, R3, now=t("2026-03-20T09:00:00"), batch="C").rows == 2
    return path


def expected_families() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "family": ["cuda-oom", "nccl-error", "vllm-engine-dead"],
            "units": [3, 1, 1], "roots": [3, 1, 0], "victims": [0, 0, 1], "runs": [3, 1, 1],
            "first_seen": [t("2026-03-01T10:00:00"), t("2026-03-03T09:00:00"), t("2026-03-01T10:01:00")],
            "last_seen": [t("2026-03-20T08:00:00"), t("2026-03-03T09:00:00"), t("2026-03-01T10:01:00")],
        },
        schema={"family": pl.String, "units": COUNT, "roots": COUNT, "victims": COUNT, "runs": COUNT,
                "first_seen": pl.Datetime("ms", "UTC"), "last_seen": pl.Datetime("ms", "UTC")},
    )


OVER_TIME_SCHEMA = {"period": pl.Date, "family": pl.String, "units": COUNT, "roots": COUNT, "victims": COUNT, "runs": COUNT}


def test_stats_over_several_batches(history: Path) -> None:
    got = hs.collect_stats(history, by="day", quiet_days=7, top=10)
    assert_frame_equal(got["families"], expected_families())
    assert_frame_equal(got["over_time"], pl.DataFrame({
        "period": [date(2026, 3, 1), date(2026, 3, 1), date(2026, 3, 3), date(2026, 3, 3), date(2026, 3, 20)],
        "family": ["cuda-oom", "vllm-engine-dead", "cuda-oom", "nccl-error", "cuda-oom"],
        "units": [1, 1, 1, 1, 1], "roots": [1, 0, 1, 1, 1], "victims": [0, 1, 0, 0, 0], "runs": [1, 1, 1, 1, 1],
    }, schema=OVER_TIME_SCHEMA))
    assert_frame_equal(got["top_fingerprints"], pl.DataFrame({
        "fingerprint": ["fa", "fa2", "fc", "fb"],
        "family": ["cuda-oom", "cuda-oom", "nccl-error", "vllm-engine-dead"],
        "units": [2, 1, 1, 1], "roots": [2, 1, 1, 0], "victims": [0, 0, 0, 1], "runs": [2, 1, 1, 1],
        "first_seen": [t("2026-03-01T10:00:00"), t("2026-03-20T08:00:00"), t("2026-03-03T09:00:00"), t("2026-03-01T10:01:00")],
        "last_seen": [t("2026-03-03T12:00:00"), t("2026-03-20T08:00:00"), t("2026-03-03T09:00:00"), t("2026-03-01T10:01:00")],
    }, schema={"fingerprint": pl.String, "family": pl.String, "units": COUNT, "roots": COUNT, "victims": COUNT,
               "runs": COUNT, "first_seen": pl.Datetime("ms", "UTC"), "last_seen": pl.Datetime("ms", "UTC")}))
    assert got["overview"].to_dicts() == [{
        "runs": 3, "units": 8, "failed": 5, "incomplete": 1, "roots": 4, "batches": 3,
        "first_seen": t("2026-03-01T10:00:00"), "last_seen": t("2026-03-20T09:00:00")}]


def test_stats_per_week_start_on_monday(history: Path) -> None:
    got = hs.collect_stats(history, by="week")["over_time"]
    assert_frame_equal(got, pl.DataFrame({
        "period": [date(2026, 2, 23), date(2026, 2, 23), date(2026, 3, 2), date(2026, 3, 2), date(2026, 3, 16)],
        "family": ["cuda-oom", "vllm-engine-dead", "cuda-oom", "nccl-error", "cuda-oom"],
        "units": [1, 1, 1, 1, 1], "roots": [1, 0, 1, 1, 1], "victims": [0, 1, 0, 0, 0], "runs": [1, 1, 1, 1, 1],
    }, schema=OVER_TIME_SCHEMA))


def test_a_family_back_after_a_quiet_spell_is_flagged(history: Path) -> None:
    got = hs.collect_stats(history, quiet_days=7)["comebacks"]
    assert_frame_equal(got, pl.DataFrame({
        "family": ["cuda-oom"], "quiet_since": [t("2026-03-03T12:00:00")], "back_at": [t("2026-03-20T08:00:00")],
        "quiet_days": [16.8], "back_in_run": ["r3"],
    }, schema={"family": pl.String, "quiet_since": pl.Datetime("ms", "UTC"), "back_at": pl.Datetime("ms", "UTC"),
               "quiet_days": pl.Float64, "back_in_run": pl.String}))
    assert hs.collect_stats(history, quiet_days=17)["comebacks"].height == 0
    # two days apart is not quiet at one week, but is at one day
    one = hs.collect_stats(history, quiet_days=1)["comebacks"]
    assert one.select("family", "back_in_run").rows() == [("cuda-oom", "r2"), ("cuda-oom", "r3")]


def test_appending_the_same_run_twice_does_not_double_count(history: Path) -> None:
    before = hs.collect_stats(history)
    again = hs.append_units(history, R1, now=t("2026-03-21T00:00:00"), batch="D")
    assert (again.rows, again.skipped, again.file) == (0, 4, None)  # skipped on write: nothing new
    assert len(list(history.glob("*.parquet"))) == 3
    after = hs.collect_stats(history)
    for name in before:
        assert_frame_equal(after[name], before[name])


def test_duplicate_files_are_deduplicated_on_read(history: Path) -> None:
    """Two appends racing each other can both write the same rows: reading counts them once."""
    before = hs.collect_stats(history)
    for f in sorted(history.glob("*.parquet")):
        shutil.copy(f, f.with_name("copy-" + f.name))
    assert hs.scan_history(history).select(pl.len()).collect().item() == 16
    after = hs.collect_stats(history)
    for name in before:
        assert_frame_equal(after[name], before[name])


def test_a_unit_that_changed_counts_once_with_its_latest_outcome(history: Path) -> None:
    changed = R1.with_columns(
        pl.when(pl.col("unit") == "4").then(pl.lit("failed")).otherwise(pl.col("status")).cast(UNITS_SCHEMA["status"]).alias("status"),
        pl.when(pl.col("unit") == "4").then(pl.lit("vllm-engine-dead")).otherwise(pl.col("family")).alias("family"),
    )
    got = hs.append_units(history, changed, now=t("2026-03-21T00:00:00"), batch="E")
    assert (got.rows, got.skipped) == (1, 3)
    stats = hs.collect_stats(history)
    assert stats["overview"].select("units", "failed", "incomplete").row(0) == (8, 6, 0)
    dead = stats["families"].filter(pl.col("family") == "vllm-engine-dead")
    assert dead.select("units", "victims").row(0) == (2, 2)


def test_keys_are_stable_and_hashlib_based() -> None:
    a = hs.with_keys(R1, batch="x", ingested_at=t("2026-01-01T00:00:00"))
    b = hs.with_keys(R1, batch="y", ingested_at=t("2027-01-01T00:00:00"))
    assert a["key"].to_list() == b["key"].to_list()
    assert a["key"].n_unique() == 4
    assert a["key"][0] == hs.row_key(["r1", "gpu0", "1", "gpu0.log", "failed", "cuda-oom", "fa"])
    assert a.schema == hs.HISTORY_SCHEMA


def test_stats_of_an_empty_or_missing_history(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    got = hs.collect_stats(tmp_path / "empty")
    assert all(df.height == 0 for name, df in got.items() if name != "overview")
    result = runner.invoke(app, ["stats", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert "no history here" in result.output


def test_runs_history_then_stats_through_the_cli(tmp_path: Path) -> None:
    hist = tmp_path / "hist"
    run_dir = str(FILES / "report" / "cascade")
    first = runner.invoke(app, ["runs", run_dir, "--history", str(hist), "-j", "1", "--format", "json"])
    assert first.exit_code == 1, first.output  # failures found; the history is written
    assert "9 new row(s)" in first.output
    second = runner.invoke(app, ["runs", run_dir, "--history", str(hist), "-j", "1"])
    assert second.exit_code == 1, second.output
    assert "0 new row(s)" in second.output and "9 already there" in second.output
    result = runner.invoke(app, ["stats", str(hist), "--format", "json", "--by", "week"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["overview"]["units"] == 9 and data["overview"]["runs"] == 1 and data["overview"]["batches"] == 1
    fams = {f["family"]: (f["units"], f["roots"], f["victims"]) for f in data["families"]}
    assert fams == {"cuda-oom": (2, 2, 0), "vllm-engine-dead": (1, 0, 1)}
    assert data["over_time"][0]["period"] == "2026-02-23"
    text = runner.invoke(app, ["stats", str(hist)])
    assert text.exit_code == 0, text.output
    assert "cuda-oom" in text.output and "came back after at least 7 quiet days" in text.output


def test_history_path_that_is_a_file_is_an_input_error(tmp_path: Path) -> None:
    f = tmp_path / "h.parquet"
    f.write_text("x")
    result = runner.invoke(app, ["runs", str(FILES / "report" / "cascade"), "--history", str(f), "-j", "1"])
    assert result.exit_code == 2
    assert "needs a directory" in result.output


def test_stats_queries_use_expressions_only(history: Path) -> None:
    frames = hs.stats_frames(hs.scan_history(history))
    for name, lf in frames.items():
        plan = lf.explain()
        assert "map_elements" not in plan and "python" not in plan.lower(), name
