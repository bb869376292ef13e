"""`sigclass mcp`: the Model Context Protocol server (stdio), on the official `mcp` SDK.

Four read-only tools, each with an input schema, an output schema (from
`sigclass.outputs.schemas`) and structured results:

* ``classify_log``   {"text": ...} or {"path": ...}  -> the findings of one log
* ``analyze_run``    {"path": run directory}         -> the run object of `sigclass runs --format json`
* ``explain_gotcha`` {"id": family}                  -> the whole ledger entry
* ``list_gotchas``   {}                              -> ids, titles, roles, statuses

Paths are confined to the roots given with ``--root``: symlinks are resolved
and anything outside the roots, or reached through a link out of them, is
refused. Files over ``--max-bytes`` and text over ``--max-text-bytes`` are
refused before they are read. Failures come back as tool errors carrying one
line of text. Only the protocol is written to stdout; logs go to stderr.

Tool functions (`Tools.call`, in `mcp_tools`) are plain synchronous code that
raises `SigclassError`, so they can be tested without the protocol.
"""

from __future__ import annotations

import json
import logging
import os

from sigclass import __version__, api
from sigclass.errors import SigclassError
from sigclass.mcp_tools import Config, one_line, Tools


log = logging.getLogger("sigclass.mcp")

INSTRUCTIONS = (
    "sigclass classifies failures in ML/GPU run logs against a ledger of known gotchas. "
    "Call classify_log with a log's text or path to learn what failed and what to do (mitigation, probes); "
    "analyze_run with a run directory to separate root faults from cascade victims; "
    "explain_gotcha for a whole ledger entry; list_gotchas for every known family. "
    "Paths must lie under the server's roots: {roots}."
)


def build_server(tools: Tools):
    """The low-level SDK server wired to `tools` (the SDK is imported here, not at module import)."""
    import anyio.to_thread
    import mcp.types as types
    from mcp.server.lowlevel import Server

    annotations = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                        open_world_hint=False)
    listed = [
        types.Tool(name=d["name"], title=d["title"], description=d["description"], input_schema=d["input_schema"],
                   output_schema=d["output_schema"], annotations=annotations)
        for d in tools.definitions()
    ]

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    def failure(message: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=one_line(message))], is_error=True)

    async def on_call_tool(ctx, params) -> types.CallToolResult:
        name = params.name
        try:
            data = await anyio.to_thread.run_sync(tools.call, name, params.arguments)
        except SigclassError as exc:
            log.info("%s refused: %s", name, one_line(str(exc)))
            return failure(str(exc))
        except MemoryError:
            log.error("%s: out of memory", name)
            return failure(f"{name}: out of memory; send a smaller input")
        except Exception as exc:  # a bug: one line for the client, the traceback only on request
            if os.environ.get("SIGCLASS_DEBUG"):
                log.exception("%s failed", name)
            else:
                log.error("%s: internal error: %s: %s (set SIGCLASS_DEBUG=1 for the traceback)",
                          name, type(exc).__name__, one_line(str(exc)))
            return failure(f"{name}: internal error ({type(exc).__name__}: {exc}); please report it")
        mismatch = tools.check_output(name, data)
        if mismatch is not None:  # a bug: say so rather than send what the client would reject
            log.error("%s: output does not fit its schema %s", name, mismatch)
            return failure(f"{name}: internal error (the result does not fit the declared output schema "
                           f"{mismatch}); please report it")
        text = json.dumps(data, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data)

    return Server(
        "sigclass",
        version=__version__,
        title="sigclass",
        instructions=INSTRUCTIONS.format(roots=tools.jail.describe()),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def serve(config: Config) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    tools = Tools(config)
    # build the ledger and the scanner now: a broken ledger fails at start, and the first call is fast
    api.list_gotchas(ledger=config.ledger)
    api.classify("", ledger=config.ledger, signatures=config.signatures)
    server = build_server(tools)
    log.info("serving %d tools over stdio; roots: %s", len(tools.names()), tools.jail.describe())

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
