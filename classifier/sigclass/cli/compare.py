"""`sigclass compare RUN...`: which facts separate failing units from clean ones, the ledger's probes judged on the runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from sigclass.cli.common import TextJson, app, err, LedgerOpt, ModelOpt, scan_config, Sigs, UnitPatternOpt, WorkerPatternOpt
from sigclass.errors import SigclassError



@app.command()
def compare(
    dirs: Annotated[list[str], typer.Argument(help="Run directories to compare (the failing run and its probes).", metavar="RUN...")],
    *,
    fmt: Annotated[TextJson, typer.Option("--format", "-f", help="Output format.")] = TextJson.text,
    jobs: Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Parallel processes; -1 (default) uses every core.")] = -1,
    unit_pattern: UnitPatternOpt = None,
    worker_pattern: WorkerPatternOpt = None,
    ledger: LedgerOpt = None,
    signatures: Annotated[Sigs, typer.Option(help="Which signatures classify failures.")] = Sigs.BOTH,
    model: ModelOpt = None,
    history: Annotated[Optional[Path], typer.Option("--history", metavar="DIR", help="Append confirmed and refuted verdicts to this history directory.")] = None,
) -> None:
    """Compare runs: discriminating facts with counts and p-values, probe outcomes, a verdict per family.

    Exit status: 2 if a run could not be read at all, else 1 if some unit failed or did not finish, else 0.
    """
    from sigclass.diagnosis.analysis import compare as compare_runs
    from sigclass.diagnosis.text import compare_text
    from sigclass.runs.discover import plan_run
    from sigclass.runs.layouts import Layout
    from sigclass.runs.parallel import analyse_plans

    lg, bad_ledger, cfg = scan_config(jobs, ledger, signatures, model)
    layout = Layout(unit_pattern, worker_pattern)
    plans = [plan_run(d) for d in dict.fromkeys(dirs)]
    try:
        layout.compiled()
        batch = analyse_plans(plans, cfg=cfg, layout=layout, n_jobs=jobs, small_in_process=jobs == -1)
        result = compare_runs(batch.runs, lg)
    except SigclassError as exc:
        err(exc)
        raise typer.Exit(2) from None
    for run in batch.runs:
        if not run.readable:
            for prob in run.problems:
                err(f"{run.run}: {prob}")
    if (fmt.value if isinstance(fmt, TextJson) else str(fmt)) == "json":
        from sigclass.problems import to_dicts

        typer.echo(json.dumps({**result, "problems": to_dicts(result.get("problems", []))}, indent=2, ensure_ascii=False))
    else:
        for line in compare_text(result):
            typer.echo(line)
    if history is not None:
        from sigclass.diagnosis.record import append_verdicts

        try:
            wrote, had = append_verdicts(history, result)
        except SigclassError as exc:
            err(exc)
            raise typer.Exit(2) from None
        err(f"history: {wrote} verdict(s) recorded in {history} ({had} already there)")
    raise typer.Exit(2 if bad_ledger or batch.unreadable else 1 if batch.failed else 0)
