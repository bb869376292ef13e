"""`sigclass runs DIR...`: the post-mortem over run directories (registered on the shared app).

Thin: parse options and run the command's body (`cli/runsplain.run_runs`, which
a plain `sigclass runs` reaches without the Typer app): call `sigclass.runs`,
write the chosen format, pick the exit status (2: an input could not be read
at all; 1: failures found; 0: all units ok).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from sigclass.cli.common import app, ColorOpt, LedgerOpt, ModelOpt, Sigs, UnitPatternOpt, WorkerPatternOpt
from sigclass.cli.runsplain import _progress, PROGRESS_MIN_SOURCES, run_runs  # noqa: F401  (the body; its progress bar)
from sigclass.vocab import ColourMode


class RunsFmt(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


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
    fmt_v = fmt.value if isinstance(fmt, RunsFmt) else str(fmt)
    raise typer.Exit(run_runs(dirs, fmt_v, out, jobs, dask, unit_pattern, worker_pattern, ledger, str(signatures), model,
                              quiet, str(color), history))
