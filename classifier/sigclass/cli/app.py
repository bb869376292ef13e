"""The `sigclass` command. Thin: parse arguments, call the library, print, exit.

The only module that prints errors or chooses exit codes (0: no failure found,
1: failures found, 2: usage or input errors; findings on readable inputs are
still printed).
"""

from __future__ import annotations

import os
import sys
import warnings
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from sigclass import __version__
from sigclass.errors import InputError, ModelError, SigclassError, SignatureError

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


class Sigs(str, Enum):
    regex = "regex"
    learned = "learned"
    both = "both"


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
    from sigclass.ledger import load_ledger

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ledger = load_ledger(extra or [])
    for w in caught:
        err(str(w.message))
    for p in ledger.problems:
        err(f"{p} (this signature file is skipped)")
    return ledger, bool(ledger.problems or caught)


def build_scanner(ledger, signatures: str = "both", model: Path | None = None, engine: str | None = None):
    from sigclass.scan import Scanner

    learned = None
    if signatures != "regex":
        from sigclass.learned import load_predictor

        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                learned = load_predictor(model, ledger, on_error=err)
            for w in caught:
                err(str(w.message))
        except ModelError as exc:
            if signatures == "learned" or model is not None:
                raise
            err(f"{exc} (continuing with regex signatures only)")
    return Scanner(ledger, engine=engine, signatures=signatures, learned=learned)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """With no command, scan standard input: `... | sigclass`."""
    if ctx.invoked_subcommand is None:
        if sys.stdin is None or sys.stdin.isatty():
            typer.echo(ctx.get_help())
            raise typer.Exit(2)
        scan(paths=None)


@app.command()
def scan(
    paths: Annotated[Optional[list[str]], typer.Argument(help="Log files (plain, .gz, .zst); '-' or nothing for stdin.")] = None,
    *,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.text,
    ledger: LedgerOpt = None,
    signatures: Annotated[Sigs, typer.Option(help="Which signatures classify failures.")] = Sigs.both,
    model: Annotated[Optional[Path], typer.Option(help="A model file trained by `sigclass train` on this machine.")] = None,
    engine: Annotated[Optional[str], typer.Option(help="Prefilter engine: hyperscan, re2 or regex (default: fastest available).")] = None,
) -> None:
    """Scan logs and print one finding per failure, as soon as each failure ends."""
    from sigclass.output import Writer

    fmt_v = fmt.value if isinstance(fmt, Fmt) else str(fmt)
    lg, bad = load_ledger_or_exit(ledger)
    try:
        scanner = build_scanner(lg, signatures.value if isinstance(signatures, Sigs) else signatures, model, engine)
    except (ModelError, SigclassError) as exc:
        err(exc)
        raise typer.Exit(2) from None
    except KeyError:
        err(f"unknown engine {engine!r}; use hyperscan, re2 or regex")
        raise typer.Exit(2) from None
    writer = Writer(fmt_v)
    problems: list[str] = []
    input_error = bad
    found = False
    for path in paths or ["-"]:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = scanner.scan(path, on_finding=writer.finding)
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
        found = found or bool(res.findings)
    writer.close(problems)
    raise typer.Exit(2 if input_error else 1 if found else 0)


@app.command()
def explain(
    family: Annotated[str, typer.Argument(help="A family id, e.g. cuda-oom.")],
    *,
    ledger: LedgerOpt = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="text or json.")] = Fmt.text,
) -> None:
    """Show the whole ledger entry of a family."""
    import json

    from sigclass.render import entry_markdown

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


@ledger_app.command("list")
def ledger_list(ledger: LedgerOpt = None) -> None:
    """One line per family: id, role, status, title."""
    lg, _ = load_ledger_or_exit(ledger)
    for sig in lg:
        typer.echo(f"{sig.id:32} {sig.role:9} {sig.status:11} {sig.title}")


@ledger_app.command("lint")
def ledger_lint(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Ledger files or folders to lint (default: the shipped pack).")] = None,
    *,
    no_examples: Annotated[bool, typer.Option("--no-examples", help="Skip running the examples.")] = False,
) -> None:
    """Check ids, schema, regexes, examples and supersedes targets; exit 1 on a HIGH issue."""
    from sigclass.ledger import load_ledger
    from sigclass.lint import lint
    from sigclass.scan import Scanner

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        lg = load_ledger(paths or [], shipped=not paths)
        scanner = None if no_examples else Scanner(lg, signatures="regex")
        issues = lint(lg, shipped=not paths, scanner=scanner)
    for i in issues:
        typer.echo(i.line())
    high = sum(1 for i in issues if i.severity == "HIGH")
    typer.echo(f"{len(lg)} signatures, {len(issues)} issue(s), {high} HIGH")
    raise typer.Exit(1 if high else 0)


@ledger_app.command("render")
def ledger_render(
    ledger: LedgerOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write to this file instead of stdout.")] = None,
) -> None:
    """Write the ledger as a gotchas markdown document (for people and agent rule files)."""
    from sigclass.render import ledger_markdown

    lg, _ = load_ledger_or_exit(ledger)
    text = ledger_markdown(lg)
    if out:
        out.write_text(text, encoding="utf-8")
    else:
        typer.echo(text)


@ledger_app.command("patterns")
def ledger_patterns(ledger: LedgerOpt = None) -> None:
    """Print every evidence pattern in prefilter form, one per line (for grep -E -f / rg -f)."""
    from sigclass.prefilter import prefilter_form
    from sigclass.scan import GENERIC, G_KV, G_MARK

    lg, _ = load_ledger_or_exit(ledger)
    for sig in lg:
        if sig.active:
            for p in (*sig.any, *sig.facts):
                typer.echo(prefilter_form(p.source))
    for gid, src in GENERIC.items():
        if gid not in (G_MARK, G_KV):
            typer.echo(src)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        sys.exit(0)
    except KeyboardInterrupt:
        err("interrupted")
        sys.exit(130)
    except SignatureError as exc:
        err(exc)
        sys.exit(2)
    except SigclassError as exc:
        err(exc)
        sys.exit(2)
    except Exception as exc:  # a bug: one line for the user, the traceback only on request
        if os.environ.get("SIGCLASS_DEBUG"):
            raise
        err(f"internal error: {type(exc).__name__}: {exc} (set SIGCLASS_DEBUG=1 for the traceback and report it)")
        sys.exit(2)


# Commands that live in their own modules register themselves on `app`.
from sigclass import cli_agent, cli_learn, cli_report, cli_runs  # noqa: E402,F401
