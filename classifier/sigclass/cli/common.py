"""What every command shares: the Typer app, option types, the error printer and ledger loading."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from sigclass import __version__
from sigclass.cli.group import App, DEFAULT_COMMAND
from sigclass.cli.plain import err, load_ledger_or_exit  # noqa: F401  (the commands' shared helpers)
from sigclass.vocab import ColourMode, SignatureMode

app = App(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=False,
    default_command=DEFAULT_COMMAND,
    subcommand_metavar="[FILE]... | COMMAND [ARGS]...",
    help="Classify failures in ML/GPU run logs against a ledger of known gotchas.\n\n"
         "With no command, sigclass scans the FILEs given, or standard input, with the options of "
         "`sigclass scan`: `make 2>&1 | sigclass`, `sigclass -f json < x.log`, `sigclass train.log`.",
)
ledger_app = App(help="List, lint and render the signature ledger.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


class Fmt(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class TextJson(str, Enum):
    """The output choice of commands that print one document: text for people, json for tools."""

    text = "text"
    json = "json"


Sigs = SignatureMode  # the --signatures choices


def version_option(value: bool) -> None:
    if value:
        typer.echo(f"sigclass {__version__}")
        raise typer.Exit()


ColorOpt = Annotated[ColourMode, typer.Option("--color", "--colour", help="Colour the text output: auto (on a terminal, unless NO_COLOR or TERM=dumb), always or never.")]
LedgerOpt = Annotated[Optional[list[Path]], typer.Option("--ledger", metavar="PATH", help="Extra ledger file or folder (repeatable); overrides shipped ids.")]
ModelOpt = Annotated[Optional[Path], typer.Option("--model", metavar="FILE", help="A model file trained by `sigclass train` on this machine.")]
UnitPatternOpt = Annotated[Optional[str], typer.Option("--unit-pattern", metavar="REGEX", help="Regex on a log's path inside its run; its group names the unit.")]
WorkerPatternOpt = Annotated[Optional[str], typer.Option("--worker-pattern", metavar="REGEX", help="Regex on a log's path inside its run; its group names the worker.")]


def scan_config(jobs: int, ledger: list[Path] | None, signatures, model: Path | None):
    """Check -j, load the ledger (reporting its problems) and build the runs' scan config; shared by runs and report."""
    from sigclass.cli.runsplain import runs_config

    got = runs_config(jobs, ledger, signatures.value if isinstance(signatures, Sigs) else str(signatures), model)
    if isinstance(got, int):
        raise typer.Exit(got)
    return got


def append_history(path: Path, runs: list) -> None:
    """`sigclass runs ... --history PATH`: append the batch's units table; one line on stderr says what happened."""
    from sigclass.cli.runsplain import history_append

    if not history_append(path, runs):
        raise typer.Exit(2)
