"""`sigclass ledger list|lint|render|patterns`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional
import warnings

import typer

from sigclass.cli.common import err, ledger_app, LedgerOpt, load_ledger_or_exit


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
    from sigclass.ledger.pack import load_ledger
    from sigclass.authoring.lint import lint, path_issues
    from sigclass.scan.scanner import Scanner

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        lg = load_ledger(paths or [], shipped=not paths)
        scanner = None if no_examples else Scanner(lg, signatures="regex")
        issues = path_issues(paths or []) + lint(lg, shipped=not paths, scanner=scanner)
    for i in issues:
        typer.echo(i.line())
    high = sum(1 for i in issues if i.severity == "HIGH")
    typer.echo(f"{len(lg)} signatures, {len(issues)} issue(s), {high} HIGH")
    raise typer.Exit(1 if high else 0)


@ledger_app.command("render")
def ledger_render(
    ledger: LedgerOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", metavar="FILE", help="Write to this file instead of stdout.")] = None,
) -> None:
    """Write the ledger as a gotchas markdown document (for people and agent rule files)."""
    from sigclass.authoring.markdown import ledger_markdown

    lg, _ = load_ledger_or_exit(ledger)
    text = ledger_markdown(lg)
    if out:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            err(f"{out}: cannot write ({exc.strerror or exc}); name a file in a writable folder")
            raise typer.Exit(2) from None
    else:
        typer.echo(text)


@ledger_app.command("patterns")
def ledger_patterns(ledger: LedgerOpt = None) -> None:
    """Print every evidence pattern in prefilter form, one per line (for grep -E -f / rg -f)."""
    from sigclass.scan.prefilter import prefilter_form
    from sigclass.scan.triggers import G_KV, G_MARK, GENERIC

    lg, _ = load_ledger_or_exit(ledger)
    for sig in lg:
        if sig.active:
            for p in (*sig.any, *sig.facts):
                typer.echo(prefilter_form(p.source))
    for gid, src in GENERIC.items():
        if gid not in (G_MARK, G_KV):
            typer.echo(src)


@ledger_app.command("supersede")
def ledger_supersede(
    old: Annotated[str, typer.Argument(help="The family the evidence ruled out (the red herring).")],
    *,
    by: Annotated[str, typer.Option("--by", help="The family the evidence points to.")],
    note: Annotated[str, typer.Option("--note", help="What the evidence showed (probe, runs).")],
    ledger: LedgerOpt = None,
) -> None:
    """Write OLD superseded-by NEW (and NEW supersedes OLD) with a red-herring caveat into the ledger files."""
    from sigclass.authoring.supersede import supersede
    from sigclass.cli.common import err
    from sigclass.errors import SigclassError

    lg, _ = load_ledger_or_exit(ledger)
    try:
        changed = supersede(lg, old, by, note)
    except SigclassError as exc:
        err(exc)
        raise typer.Exit(2) from None
    for p in changed:
        typer.echo(f"wrote {p}")
    if not changed:
        typer.echo(f"{old} is already superseded by {by}; nothing to write")
