"""`sigclass runs` without the Typer app: the command's body, and its plain-arguments fast path.

Typer builds a pydantic validator for every option of a command it runs
(importing pydantic and scanning installed packages' entry points): about
0.1 s of CPU, a quarter of what the command spends before its first scan and
most of the parent's own share of `-j 2`. A `sigclass runs` whose arguments
are plain (run directories and `--opt value` options with valid values)
runs from here, like a plain `sigclass scan` (cli/plain.py); anything else
(help, a bad value, an unknown option, `--history`) goes to the Typer app,
which calls the same body and explains any mistake.
"""

from __future__ import annotations

from contextlib import nullcontext
import json
import os
from pathlib import Path
import re
import sys
from typing import Any, Callable

from sigclass.cli.plain import _terminal, COLOUR_MODES, err, load_ledger_or_exit, plain_options, SIGNATURE_MODES
from sigclass.errors import ModelError, SigclassError
from sigclass.text.safe import visible

RUNS_FORMATS = ("text", "json", "jsonl", "csv", "parquet")  # cli.runs.RunsFmt's values (a test checks)

PROGRESS_MIN_SOURCES = 200  # a bar only for batches at least this long, and only on a terminal

_ANSI_CSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what the Typer app's echo strips from output to a non-terminal


def runs_config(jobs: int, ledger: list[Path] | None, signatures: str, model: Path | None):
    """Check -j, load the ledger (reporting its problems) and build the runs' scan config: (ledger, whether the
    exit status must be 2 once done, config), or the exit status at once."""
    from sigclass.runs.sources import ScanConfig
    from sigclass.scan.factory import usable_model

    if jobs == 0:
        err("-j takes a number of processes (1, 2, ...) or -1 for every core")
        return 2
    lg, bad_ledger = load_ledger_or_exit(ledger)
    try:
        sig_v, usable = usable_model(lg, str(signatures), model, err)
    except ModelError as exc:
        err(exc)
        return 2
    bad_ledger = bad_ledger or usable != model  # a named model that could not be used: exit 2 once done
    return lg, bad_ledger, ScanConfig(tuple(str(p) for p in ledger or ()), sig_v, str(usable) if usable else None)


def history_append(path: Path, runs: list) -> bool:
    """`--history PATH`: append the batch's units table; one line on stderr says what happened. False: it failed."""
    from sigclass.outputs import history as hs

    try:
        got = hs.append_runs(path, runs)
    except SigclassError as exc:
        err(exc)
        return False
    for problem in got.problems:
        err(problem)
    err(f"history: {got.rows} new row(s) appended to {path} ({got.skipped} already there)")
    return True


def _progress(total: int):
    """A rich progress bar on stderr for long batches on a terminal; else nothing."""
    if total < PROGRESS_MIN_SOURCES or not sys.stderr.isatty():
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("scanning logs"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)


def run_runs(dirs: list[str], fmt: str = "text", out: Path | None = None, jobs: int = -1, dask: str | None = None,
             unit_pattern: str | None = None, worker_pattern: str | None = None, ledger: list[Path] | None = None,
             signatures: str = "both", model: Path | None = None, quiet: bool = False, color: str = "auto",
             history: Path | None = None) -> int:
    """The body of `sigclass runs`; its exit status (2: an input could not be read at all; 1: failures found;
    0: all units ok)."""
    from sigclass.outputs.colour import Paint, wanted
    from sigclass.outputs.runs_text import RunsText
    from sigclass.records import Batch
    from sigclass.runs.discover import plan_run
    from sigclass.runs.layouts import Layout
    from sigclass.runs.parallel import dask_backend, iter_runs
    from sigclass.runs.rendered import Render

    if fmt == "parquet" and out is None:
        err("--format parquet writes a file; add --out FILE")
        return 2
    got = runs_config(jobs, ledger, signatures, model)
    if isinstance(got, int):
        return got
    _, bad_ledger, cfg = got
    layout = Layout(unit_pattern, worker_pattern)
    try:
        layout.compiled()
    except SigclassError as exc:
        err(exc)
        return 2

    plans = [plan_run(d) for d in dict.fromkeys(dirs)]
    total = sum(len(p.sources) for p in plans)
    # text and jsonl go out run by run as they are known: memory stays flat for a fleet's worth of runs
    streaming = fmt in ("text", "jsonl") and history is None
    kept: list = []
    unreadable = failed = False
    try:
        sink = open(out, "w", encoding="utf-8") if out is not None and fmt in ("text", "json", "jsonl") else None
    except OSError as exc:
        err(f"{out}: cannot write ({exc.strerror or exc})")
        return 2

    text = RunsText(Paint(fmt == "text" and sink is None and wanted(sys.stdout, color)))
    strip = not text.paint.on and not _terminal(sys.stdout)

    def write(line: str) -> None:
        if quiet:
            return
        if sink is None:
            sys.stdout.write((_ANSI_CSI.sub("", line) if strip else line) + "\n")
            sys.stdout.flush()
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
            render = Render(fmt, text.paint.on, text.cols) if streaming else None
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
                if fmt == "jsonl" and not run.readable:
                    for prob in run.problems:
                        err(f"{run.run}: {prob}")
        if not streaming:
            batch = Batch(kept)
            if fmt == "text":
                for run in batch.runs:
                    for line in text.run(run):
                        write(visible(line))
            elif fmt == "jsonl":
                for r in batch.runs:
                    write(json.dumps(r.to_dict(), ensure_ascii=False))
            elif fmt == "json":
                write(json.dumps(batch.to_dict(), indent=2, ensure_ascii=False))
            else:
                from sigclass.outputs import tables

                if out is None:
                    if not quiet:
                        sys.stdout.write(tables.units_csv(batch.runs))
                    sys.stdout.flush()
                else:
                    tables.write_units(batch.runs, out, fmt)
        if fmt == "text":
            for line in text.total():
                write(line)
        if not streaming:
            for run in batch.runs:
                if not run.readable or fmt in ("csv", "parquet"):
                    for prob in run.problems:
                        err(f"{run.run}: {prob}")
    except SigclassError as exc:
        err(exc)
        return 2
    except BrokenPipeError:
        raise  # the reader went away (`| head`): main() ends quietly
    except OSError as exc:
        err(f"{out or 'stdout'}: cannot write ({exc.strerror or exc})")
        return 2
    except Exception as exc:  # a worker or cluster failure: one line, never a traceback
        err(f"the batch stopped: {type(exc).__name__}: {exc}")
        return 2
    finally:
        if sink is not None:
            sink.close()

    if history is not None and not history_append(history, kept):
        return 2
    return 2 if unreadable or bad_ledger else 1 if failed else 0


_RUNS_OPTS = {"--format": "fmt", "-f": "fmt", "--out": "out", "-o": "out", "--jobs": "jobs", "-j": "jobs",
              "--dask": "dask", "--unit-pattern": "unit_pattern", "--worker-pattern": "worker_pattern",
              "--ledger": "ledger", "--signatures": "signatures", "--model": "model", "--color": "color",
              "--colour": "color"}
_RUNS_FLAGS = {"--quiet": "quiet", "-q": "quiet"}
_INT = re.compile(r"[+-]?[0-9]+\Z")


def plain_runs_args(argv: list[str]) -> dict[str, Any] | None:
    """The arguments of `sigclass runs ...` when they are plain, else None (the Typer app then parses them,
    and explains any mistake)."""
    if not argv or argv[0] != "runs" or any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None
    parsed = plain_options(argv[1:], _RUNS_OPTS, _RUNS_FLAGS, attached=("-j", "-f", "-o"))
    if parsed is None:
        return None  # help, an unknown option, `--`, `-f=json`: the full parser's business
    out: dict[str, Any] = {"dirs": parsed[0]}
    for key, value in parsed[1]:
        if key in out and key not in ("ledger", "quiet"):
            return None  # an option given twice: the full parser says which wins
        if key == "ledger":
            out.setdefault("ledger", []).append(Path(value))
        elif key in ("out", "model"):
            out[key] = Path(value)
        elif key == "jobs" and _INT.match(value):
            out["jobs"] = int(value)
        elif (key == "fmt" and value in RUNS_FORMATS or key == "signatures" and value in SIGNATURE_MODES
              or key == "color" and value in COLOUR_MODES or key in ("dask", "unit_pattern", "worker_pattern", "quiet")):
            out[key] = value
        else:
            return None
    return out if out["dirs"] else None
