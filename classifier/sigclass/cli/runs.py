"""`sigclass runs DIR...`: the post-mortem over run directories (registered on the shared app).

Thin: parse options, call `sigclass.runs`, write the chosen format, pick the
exit status (2: an input could not be read at all; 1: failures found; 0: all
units ok).
"""

from __future__ import annotations

from contextlib import nullcontext
from enum import Enum
import json
from pathlib import Path
import sys
from typing import Annotated, Callable, Optional

import typer

from sigclass.cli.common import (app, append_history, ColorOpt, err, LedgerOpt, ModelOpt, scan_config, Sigs,
                                  UnitPatternOpt, WorkerPatternOpt)
from sigclass.errors import SigclassError
from sigclass.text.safe import visible
from sigclass.vocab import ColourMode

PROGRESS_MIN_SOURCES = 200  # a bar only for batches at least this long, and only on a terminal


class RunsFmt(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


def _progress(total: int):
    """A rich progress bar on stderr for long batches on a terminal; else nothing."""
    if total < PROGRESS_MIN_SOURCES or not sys.stderr.isatty():
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("scanning logs"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)


@app.command()
def runs(
    dirs: Annotated[list[str], typer.Argument(help="Run directories; each one is a run.", metavar="DIR...")],
    *,
    fmt: Annotated[RunsFmt, typer.Option("--format", "-f", help="Output format (csv/parquet: the units table).")] = RunsFmt.text,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", metavar="FILE", help="Write to this file instead of stdout (parquet needs it).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Parallel processes; -1 (default) uses every core.")] = -1,
    dask: Annotated[Optional[str], typer.Option("--dask", metavar="URL", help="Run the scans on this dask.distributed scheduler (tcp://HOST:PORT).")] = None,
    unit_pattern: UnitPatternOpt = None,
    worker_pattern: WorkerPatternOpt = None,
    ledger: LedgerOpt = None,
    signatures: Annotated[Sigs, typer.Option(help="Which signatures classify failures.")] = Sigs.BOTH,
    model: ModelOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on stdout; the exit status says whether a unit was lost.")] = False,
    color: ColorOpt = ColourMode.AUTO,
    history: Annotated[Optional[Path], typer.Option("--history", metavar="DIR", help="Also append the units table to this parquet history directory (see `sigclass stats`).")] = None,
) -> None:
    """Post-mortem of run directories: root faults, what each took down, and systematic faults.

    Exit status: 2 if an input could not be read at all, else 1 if some unit failed or did not finish, else 0.
    """
    from sigclass.records import Batch
    from sigclass.runs.discover import plan_run
    from sigclass.runs.layouts import Layout
    from sigclass.runs.parallel import dask_backend, iter_runs
    from sigclass.runs.rendered import Render
    from sigclass.outputs.colour import Paint, wanted
    from sigclass.outputs.runs_text import RunsText

    fmt_v = fmt.value if isinstance(fmt, RunsFmt) else str(fmt)
    if fmt_v == "parquet" and out is None:
        err("--format parquet writes a file; add --out FILE")
        raise typer.Exit(2)
    _, bad_ledger, cfg = scan_config(jobs, ledger, signatures, model)
    layout = Layout(unit_pattern, worker_pattern)
    try:
        layout.compiled()
    except SigclassError as exc:
        err(exc)
        raise typer.Exit(2) from None

    plans = [plan_run(d) for d in dict.fromkeys(dirs)]
    total = sum(len(p.sources) for p in plans)
    # text and jsonl go out run by run as they are known: memory stays flat for a fleet's worth of runs
    streaming = fmt_v in ("text", "jsonl") and history is None
    kept: list = []
    unreadable = failed = False
    try:
        sink = open(out, "w", encoding="utf-8") if out is not None and fmt_v in ("text", "json", "jsonl") else None
    except OSError as exc:
        err(f"{out}: cannot write ({exc.strerror or exc})")
        raise typer.Exit(2) from None

    text = RunsText(Paint(fmt_v == "text" and sink is None and wanted(sys.stdout, color)))

    def write(line: str) -> None:
        if quiet:
            return
        if sink is None:
            typer.echo(line, color=text.paint.on or None)
        else:
            sink.write(line + "\n")

    try:
        backend = dask_backend(dask) if dask else nullcontext()
        with backend, _progress(total) as bar:
            tick: Callable[[int], None] | None = None
            if bar is not None:
                task = bar.add_task("scan", total=total)
                tick = lambda n: bar.advance(task, n)  # noqa: E731
            # streaming: each run arrives rendered (runs.rendered), by the worker that assembled it
            render = Render(fmt_v, text.paint.on, text.cols) if streaming else None
            for run in iter_runs(plans, cfg=cfg, layout=layout, n_jobs=jobs, on_progress=tick,
                                 small_in_process=jobs == -1 and not dask, render=render):
                unreadable = unreadable or not run.readable
                failed = failed or run.failed
                if not streaming:
                    kept.append(run)
                    continue
                text.totals.add_counts(run.counts)
                if run.lines:
                    write("\n".join(run.lines))
                if fmt_v == "jsonl" and not run.readable:
                    for prob in run.problems:
                        err(f"{run.run}: {prob}")
        if not streaming:
            batch = Batch(kept)
            if fmt_v == "text":
                for run in batch.runs:
                    for line in text.run(run):
                        write(visible(line))
            elif fmt_v == "jsonl":
                for r in batch.runs:
                    write(json.dumps(r.to_dict(), ensure_ascii=False))
            elif fmt_v == "json":
                write(json.dumps(batch.to_dict(), indent=2, ensure_ascii=False))
            else:
                from sigclass.outputs import tables

                if out is None:
                    if not quiet:
                        sys.stdout.write(tables.units_csv(batch.runs))
                    sys.stdout.flush()
                else:
                    tables.write_units(batch.runs, out, fmt_v)
        if fmt_v == "text":
            for line in text.total():
                write(line)
        if not streaming:
            for run in batch.runs:
                if not run.readable or fmt_v in ("csv", "parquet"):
                    for prob in run.problems:
                        err(f"{run.run}: {prob}")
    except SigclassError as exc:
        err(exc)
        raise typer.Exit(2) from None
    except BrokenPipeError:
        raise  # the reader went away (`| head`): main() ends quietly
    except OSError as exc:
        err(f"{out or 'stdout'}: cannot write ({exc.strerror or exc})")
        raise typer.Exit(2) from None
    except Exception as exc:  # a worker or cluster failure: one line, never a traceback
        err(f"the batch stopped: {type(exc).__name__}: {exc}")
        raise typer.Exit(2) from None
    finally:
        if sink is not None:
            sink.close()

    if history is not None:
        append_history(history, kept)
    raise typer.Exit(2 if unreadable or bad_ledger else 1 if failed else 0)
