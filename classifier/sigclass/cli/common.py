"""What every command shares: the Typer app, option types, the error printer and ledger loading."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
import sys
from typing import Annotated, Optional
import warnings

import typer

from sigclass import __version__
from sigclass.vocab import SignatureMode

app = typer.Typer(
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_show_locals=False,
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=False,
    help="Classify failures in ML/GPU run logs against a ledger of known gotchas.",
)
ledger_app = typer.Typer(help="List, lint and render the signature ledger.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


class Fmt(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


Sigs = SignatureMode  # the --signatures choices


def err(msg: str) -> None:
    """One line on stderr, prefixed with the program name."""
    for line in str(msg).splitlines() or [""]:
        sys.stderr.write(f"sigclass: {line}\n")
    sys.stderr.flush()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sigclass {__version__}")
        raise typer.Exit()


LedgerOpt = Annotated[Optional[list[Path]], typer.Option("--ledger", help="Extra ledger file or folder (repeatable); overrides shipped ids.")]


def load_ledger_or_exit(extra: list[Path] | None):
    from sigclass.ledger.pack import load_ledger

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ledger = load_ledger(extra or [])
    for w in caught:
        err(str(w.message))
    for p in ledger.problems:
        err(f"{p} (this signature file is skipped)")
    return ledger, bool(ledger.problems or caught)
