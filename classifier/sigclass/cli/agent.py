"""Commands of the `sigclass` CLI registered on the shared app (see cli/common.py): `mcp` and `schema`."""

from __future__ import annotations

import json
import logging
from pathlib import Path
import sys
from typing import Annotated, Optional

import typer

from sigclass.cli.common import app, err, Sigs
from sigclass.errors import SigclassError

_SCHEMA_NAMES = ("finding", "run", "gotcha", "classification", "gotcha-list", "comparison")
MIN_SDK = (2, 3)  # the low-level Server with on_* handlers and snake_case types


def _sdk_version() -> tuple[int, ...] | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        raw = version("mcp")
    except PackageNotFoundError:
        return None
    parts = []
    for piece in raw.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


@app.command()
def schema(
    name: Annotated[Optional[str], typer.Argument(help="finding, run, gotcha, classification, gotcha-list or comparison (default: all).")] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of a finding, a run, a gotcha, a comparison or an MCP tool result."""
    from sigclass.outputs import schemas

    try:
        doc = schemas.schema(name) if name else {n: schemas.schema(n) for n in _SCHEMA_NAMES}
    except SigclassError as exc:
        err(exc)
        raise typer.Exit(2) from None
    typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))


@app.command()
def mcp(
    *,
    root: Annotated[Optional[list[Path]], typer.Option("--root", metavar="DIR", help="A directory the tools may read (repeatable; default: the working directory).")] = None,
    max_bytes: Annotated[str, typer.Option("--max-bytes", metavar="SIZE", help="Largest log file read, also per file of a run directory (e.g. 64M).")] = "64M",
    max_text_bytes: Annotated[str, typer.Option("--max-text-bytes", metavar="SIZE", help="Largest log text accepted inline (e.g. 16M).")] = "16M",
    ledger: Annotated[Optional[list[Path]], typer.Option("--ledger", metavar="PATH", help="Extra ledger file or folder (repeatable); overrides shipped ids.")] = None,
    signatures: Annotated[Sigs, typer.Option(help="Which signatures classify failures.")] = Sigs.BOTH,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each refused call on stderr.")] = False,
) -> None:
    """Serve the Model Context Protocol over stdio: classify_log, analyze_run, compare_runs, explain_gotcha, list_gotchas."""
    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        err("the MCP server needs the official mcp SDK; install the extra: pip install 'sigclass[mcp]'")
        raise typer.Exit(2) from None
    found = _sdk_version()
    if found is not None and found < MIN_SDK:
        err(f"the MCP server needs mcp {'.'.join(map(str, MIN_SDK))} or later (found "
            f"{'.'.join(map(str, found))}); upgrade it: pip install -U 'sigclass[mcp]'")
        raise typer.Exit(2) from None
    from sigclass import mcp_server, mcp_tools

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="sigclass mcp: %(message)s")
    logging.getLogger("sigclass").setLevel(logging.INFO if verbose else logging.WARNING)
    try:
        config = mcp_tools.Config(
            roots=list(root or []),
            max_bytes=mcp_tools.parse_size(max_bytes),
            max_text_bytes=mcp_tools.parse_size(max_text_bytes),
            ledger=tuple(str(p.resolve()) for p in ledger or []),
            signatures=signatures.value if isinstance(signatures, Sigs) else str(signatures),
        )
        mcp_server.serve(config)
    except SigclassError as exc:
        err(exc)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
