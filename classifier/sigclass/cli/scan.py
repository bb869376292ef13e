"""`sigclass` with no command, `sigclass scan` and `sigclass explain`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional
import warnings

import typer

from sigclass.cli.common import app, ColorOpt, err, Fmt, LedgerOpt, load_ledger_or_exit, Sigs, version_option
from sigclass.cli.plain import run_scan
from sigclass.vocab import ColourMode


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", "-V", callback=version_option, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """With no command, scan the files given or standard input: `... | sigclass`."""
    if ctx.invoked_subcommand is None:  # only on a terminal with nothing to read: say how to use it
        typer.echo(ctx.get_help())
        raise typer.Exit(2)


@app.command()
def scan(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="FILE", help="Log files (plain, .gz, .zst); '-' or nothing for stdin.")] = None,
    *,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.text,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on stdout; the exit status says whether a failure was found.")] = False,
    color: ColorOpt = ColourMode.AUTO,
    ledger: LedgerOpt = None,
    signatures: Annotated[Sigs, typer.Option(help="Which signatures classify failures.")] = Sigs.BOTH,
    model: Annotated[Optional[Path], typer.Option(metavar="FILE", help="A model file trained by `sigclass train` on this machine.")] = None,
    engine: Annotated[Optional[str], typer.Option(metavar="ENGINE", help="Prefilter engine: hyperscan, re2 or regex (default: fastest available).")] = None,
    stall: Annotated[str, typer.Option(metavar="WHEN", help="Live pipe: report a provisional stall when a worker's progress stops (auto, off, or seconds).")] = "auto",
) -> None:
    """Scan logs and print one finding per failure, as soon as each failure ends, and each log's verdict."""
    raise typer.Exit(run_scan(paths, fmt.value if isinstance(fmt, Fmt) else str(fmt), ledger,
                              signatures.value if isinstance(signatures, Sigs) else str(signatures), model, engine,
                              quiet=quiet, color=color, stall=stall))


def family_ids(incomplete: str) -> list[str]:
    """Shell completion for a family id: the shipped ledger's ids that start with what was typed."""
    from sigclass.ledger.pack import load_ledger

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [s for s in load_ledger([]).signatures if s.startswith(incomplete)]


@app.command()
def explain(
    family: Annotated[str, typer.Argument(metavar="FAMILY", help="A family id, e.g. cuda-oom.", autocompletion=family_ids)],
    *,
    ledger: LedgerOpt = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="text (markdown), json, or jsonl (the JSON on one line).")] = Fmt.text,
) -> None:
    """Show the whole ledger entry of a family."""
    import json

    from sigclass.authoring.markdown import entry_markdown

    lg, _ = load_ledger_or_exit(ledger)
    if family not in lg:
        close = sorted(lg.signatures, key=lambda s: _distance(s, family))[:3]
        err(f"no family {family!r}; did you mean {', '.join(close)}? (`sigclass ledger list` shows all)")
        raise typer.Exit(2)
    sig = lg[family]
    if fmt == Fmt.text:
        typer.echo(entry_markdown(sig))
    else:
        typer.echo(json.dumps(sig.to_dict(), indent=2 if fmt == Fmt.json else None))


def _distance(a: str, b: str) -> int:
    import difflib

    return -int(difflib.SequenceMatcher(None, a, b).ratio() * 100)
