"""`sigclass` with no command, `sigclass scan` and `sigclass explain`."""

from __future__ import annotations

import os
from pathlib import Path
import stat
import sys
from typing import Annotated, Optional
import warnings

import typer

from sigclass.cli.common import app, ColorOpt, err, Fmt, LedgerOpt, load_ledger_or_exit, Sigs, version_option
from sigclass.errors import InputError, ModelError, SigclassError
from sigclass.scan.factory import build_scanner
from sigclass.vocab import ColourMode, Status


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
    from sigclass.outputs.findings import Writer

    fmt_v = fmt.value if isinstance(fmt, Fmt) else str(fmt)
    lg, bad = load_ledger_or_exit(ledger)
    try:
        scanner = build_scanner(lg, signatures.value if isinstance(signatures, Sigs) else signatures, model, engine=engine,
                                on_note=err, warnings_as_notes=True)
    except (ModelError, SigclassError) as exc:
        err(exc)
        raise typer.Exit(2) from None
    except KeyError:
        err(f"unknown engine {engine!r}; use hyperscan, re2 or regex")
        raise typer.Exit(2) from None
    from sigclass.scan.stall import stall_setting

    try:
        scanner.live_stall = stall_setting(stall)
    except ValueError as exc:
        err(str(exc))
        raise typer.Exit(2) from None
    writer = Writer(fmt_v, stream=NullStream() if quiet else None, colour=color)
    lines = 0
    problems: list[str] = []
    input_error = bad
    found = False
    for path in paths or ["-"]:
        try:
            writer.start(live=_is_live(path))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = scanner.scan(path, on_finding=writer.finding)
            writer.verdict(res.verdict)
            for w in caught:
                err(str(w.message))
        except InputError as exc:
            err(exc)
            problems.append(str(exc))
            input_error = True
            continue
        except MemoryError:
            err(f"{path}: out of memory while scanning; report this input")
            input_error = True
            continue
        except BrokenPipeError:
            raise
        except Exception as exc:  # a bug on one input must not lose the others' findings
            if os.environ.get("SIGCLASS_DEBUG"):
                raise
            err(f"{path}: internal error while scanning ({type(exc).__name__}: {exc}); other inputs carry on")
            input_error = True
            continue
        for p in res.problems:
            if p not in problems:
                err(p)
                problems.append(p)
        if any(("binary" in p or "truncated" in p or "read failed" in p or "decompress" in p) for p in res.problems):
            input_error = True
        found = (found or any(f.status != Status.RECOVERED for f in res.findings)  # recovered: progress went on
                 or (res.verdict is not None and res.verdict.cause is not None))
        lines += res.lines
    writer.close(problems)
    if not found and not quiet and fmt_v == "text" and not input_error and _terminal(sys.stderr):
        err(f"no failures found in {lines} line{'s' if lines != 1 else ''}")
    raise typer.Exit(2 if input_error else 1 if found else 0)


class NullStream:
    """Where `-q` sends the findings."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def family_ids(incomplete: str) -> list[str]:
    """Shell completion for a family id: the shipped ledger's ids that start with what was typed."""
    from sigclass.ledger.pack import load_ledger

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [s for s in load_ledger([]).signatures if s.startswith(incomplete)]


def _is_live(path: str) -> bool:
    """Standard input that is not a regular file (a pipe, a terminal) may still be being written."""
    if path != "-":
        return False
    try:
        return not stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError):
        return True


@app.command()
def explain(
    family: Annotated[str, typer.Argument(metavar="FAMILY", help="A family id, e.g. cuda-oom.", autocompletion=family_ids)],
    *,
    ledger: LedgerOpt = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="text or json.")] = Fmt.text,
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
        typer.echo(json.dumps(sig.to_dict(), indent=2))


def _distance(a: str, b: str) -> int:
    import difflib

    return -int(difflib.SequenceMatcher(None, a, b).ratio() * 100)
