"""`sigclass report` (HTML post-mortem) and `sigclass stats` (failure history), registered on the shared app."""

from __future__ import annotations

from enum import Enum
import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from sigclass.cli.common import TextJson, app, err, LedgerOpt, ModelOpt, scan_config, Sigs, UnitPatternOpt, WorkerPatternOpt
from sigclass.errors import ModelError, SigclassError


DEFAULT_REPORT = "report.html"


class Period(str, Enum):
    day = "day"
    week = "week"



@app.command()
def report(
    dirs: Annotated[list[str], typer.Argument(help="Run directories; each one is a run.", metavar="DIR...")],
    *,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", metavar="FILE", help="The HTML file to write (default: report.html here).")] = None,
    title: Annotated[Optional[str], typer.Option(metavar="TEXT", help="Page title (default: the run names).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Parallel processes; -1 (default) uses every core.")] = -1,
    unit_pattern: UnitPatternOpt = None,
    worker_pattern: WorkerPatternOpt = None,
    ledger: LedgerOpt = None,
    signatures: Annotated[Sigs, typer.Option(help="Which signatures classify failures.")] = Sigs.BOTH,
    model: ModelOpt = None,
) -> None:
    """Write one self-contained HTML post-mortem: a timeline per run, root-fault cards, systematic faults, problems.

    Exit status as for `runs`: 2 when an input could not be read at all, 1 when failures were found, else 0.
    """
    from sigclass.outputs.report.html import family_info, run_dict, write_report
    from sigclass.runs.layouts import Layout
    from sigclass.runs.parallel import analyse


    named = out is not None
    out = out if out is not None else Path(DEFAULT_REPORT)
    lg, bad_ledger, cfg = scan_config(jobs, ledger, signatures, model)
    try:
        batch = analyse(dirs, cfg=cfg, layout=Layout(unit_pattern, worker_pattern), n_jobs=jobs,
                           small_in_process=jobs == -1)
        comparison = None
        if len(batch.runs) > 1:
            from sigclass.diagnosis.analysis import compare

            comparison = compare(batch.runs, lg)
        write_report([run_dict(r) for r in batch.runs], out, families=family_info(lg), title=title,
                     comparison=comparison)
    except (SigclassError, ModelError) as exc:
        err(exc)
        raise typer.Exit(2) from None
    except OSError as exc:
        err(f"{out}: cannot write ({exc.strerror or exc})")
        raise typer.Exit(2) from None
    for run in batch.runs:
        if not run.readable:
            for p in run.problems:
                err(f"{run.run}: {p}")
    lost = sum(1 for r in batch.runs for u in r.units if u.status != "ok")
    roots = sum(len(r.roots) for r in batch.runs)
    where = out if named else out.resolve()  # the default lands in the working directory: say which one
    typer.echo(f"wrote {where}: {len(batch.runs)} run(s), {lost} unit(s) lost, {roots} root fault(s)")
    raise typer.Exit(2 if batch.unreadable or bad_ledger else 1 if batch.failed else 0)


@app.command()
def stats(
    path: Annotated[Path, typer.Argument(help="A history directory written by `sigclass runs ... --history PATH`.")],
    *,
    by: Annotated[Period, typer.Option("--by", help="Group families over time per day or per week (UTC).")] = Period.day,
    quiet_days: Annotated[int, typer.Option("--quiet-days", metavar="N", min=1, help="Flag a family seen again after this many days without it.")] = 7,
    top: Annotated[int, typer.Option("--top", metavar="N", min=1, help="How many fingerprints to list.")] = 10,
    fmt: Annotated[TextJson, typer.Option("--format", "-f", help="Output format.")] = TextJson.text,
) -> None:
    """Failure history: families over time, top fingerprints, first and last seen, families that came back."""
    from sigclass.diagnosis.record import root_causes
    from sigclass.outputs import history as hs

    by_v = by.value if isinstance(by, Period) else str(by)
    skipped: list[str] = []
    try:
        got = hs.collect_stats(path, skipped, by=by_v, quiet_days=quiet_days, top=top)
        got["root_causes"] = root_causes(path)
    except SigclassError as exc:
        err(exc)
        raise typer.Exit(2) from None
    for problem in skipped:
        err(problem)
    if (fmt.value if isinstance(fmt, TextJson) else str(fmt)) == "json":
        typer.echo(json.dumps(hs.stats_json(got, by=by_v, quiet_days=quiet_days), indent=2))
    else:
        for line in hs.stats_text(got, by=by_v, quiet_days=quiet_days):
            typer.echo(line)
