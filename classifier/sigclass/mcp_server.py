"""`sigclass mcp`: the Model Context Protocol server (stdio), on the official `mcp` SDK.

Four read-only tools, each with an input schema, an output schema (from
`sigclass.schemas`) and structured results:

* ``classify_log``   {"text": ...} or {"path": ...}  -> the findings of one log
* ``analyze_run``    {"path": run directory}         -> the run object of `sigclass runs --format json`
* ``explain_gotcha`` {"id": family}                  -> the whole ledger entry
* ``list_gotchas``   {}                              -> ids, titles, roles, statuses

Paths are confined to the roots given with ``--root``: symlinks are resolved
and anything outside the roots, or reached through a link out of them, is
refused. Files over ``--max-bytes`` and text over ``--max-text-bytes`` are
refused before they are read. Failures come back as tool errors carrying one
line of text. Only the protocol is written to stdout; logs go to stderr.

Tool functions (`Tools.call`) are plain synchronous code that raises
`SigclassError`, so they can be tested without the protocol.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sigclass import __version__, api
from sigclass.outputs import schemas
from sigclass.errors import InputError, SigclassError

log = logging.getLogger("sigclass.mcp")

DEFAULT_MAX_BYTES = 64 << 20  # a log file, and each log file of a run directory
DEFAULT_MAX_TEXT_BYTES = 16 << 20  # log text sent inline
MAX_RUN_ENTRIES = 200_000  # directory entries walked in one run directory

INSTRUCTIONS = (
    "sigclass classifies failures in ML/GPU run logs against a ledger of known gotchas. "
    "Call classify_log with a log's text or path to learn what failed and what to do (mitigation, probes); "
    "analyze_run with a run directory to separate root faults from cascade victims; "
    "explain_gotcha for a whole ledger entry; list_gotchas for every known family. "
    "Paths must lie under the server's roots: {roots}."
)


class PathRefused(InputError):
    """A path outside the allowed roots, or reached through a link out of them."""


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


_SIZE = re.compile(r"(?i)^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$")


def parse_size(text: str) -> int:
    """`67108864`, `64M`, `64MiB`, `1G`, `512k` -> bytes (binary units)."""
    m = _SIZE.match(str(text))
    if not m:
        raise InputError(f"{text!r} is not a size; write bytes or a number with K, M or G (e.g. 64M)")
    value = int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()])
    if value <= 0:
        raise InputError(f"{text!r}: a size must be positive")
    return value


@dataclass
class Config:
    roots: list[Path] = field(default_factory=list)
    max_bytes: int = DEFAULT_MAX_BYTES
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    ledger: tuple[str, ...] = ()
    signatures: str = "both"

    def __post_init__(self) -> None:
        resolved = []
        for r in self.roots or [Path.cwd()]:
            p = Path(r).expanduser()
            try:
                real = p.resolve(strict=True)
            except (OSError, RuntimeError):
                raise InputError(f"--root {r}: no such directory") from None
            if not real.is_dir():
                raise InputError(f"--root {r}: not a directory")
            if real not in resolved:
                resolved.append(real)
        self.roots = resolved


class Confinement:
    """Resolves paths given by a client and refuses any that leave the roots."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots

    def inside(self, real: str | Path) -> bool:
        p = Path(real)
        return any(p == r or r in p.parents for r in self.roots)

    def _lexically_inside(self, p: Path) -> bool:
        norm = Path(os.path.normpath(p))
        return any(norm == r or r in norm.parents for r in self.roots)

    def resolve(self, raw: Any, what: str = "path") -> Path:
        """The real path of `raw` (relative paths start at the first root), or PathRefused."""
        if not isinstance(raw, str) or not raw.strip():
            raise InputError(f"{what} must be a non-empty string")
        if "\0" in raw:
            raise InputError(f"{what} contains a NUL byte")
        p = Path(raw).expanduser()
        if not p.is_absolute():
            p = self.roots[0] / p
        real = Path(os.path.realpath(p))
        if not self.inside(real):
            if self._lexically_inside(p) or self._crosses_link(p):
                raise PathRefused(f"{raw}: refused, it is reached through a symbolic link out of the allowed roots "
                                  f"({self.describe()})")
            raise PathRefused(f"{raw}: refused, it is outside the allowed roots ({self.describe()})")
        return real

    def _crosses_link(self, p: Path) -> bool:
        """True when some prefix of p inside a root is a symlink (the path enters a root, then leaves it)."""
        cur = Path(p.anchor)
        for part in p.parts[1:]:
            cur = cur / part
            if self._lexically_inside(cur) and cur.is_symlink():
                return True
        return False

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)


def _stat_or_refuse(path: Path, raw: str) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        raise InputError(f"{raw}: no such file or directory") from None
    except PermissionError:
        raise InputError(f"{raw}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{raw}: cannot read ({exc.strerror or exc})") from None


class Tools:
    """The four tools as plain functions: arguments in, a JSON-ready dict out, SigclassError on refusal."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.jail = Confinement(config.roots)
        self._table: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], dict[str, Any]]] = {
            "classify_log": (self.classify_log, schemas.CLASSIFICATION),
            "analyze_run": (self.analyze_run, schemas.RUN),
            "explain_gotcha": (self.explain_gotcha, schemas.GOTCHA),
            "list_gotchas": (self.list_gotchas, schemas.GOTCHA_LIST),
        }
        self._validators: dict[str, Any] = {}

    # ------------------------------------------------------------------ declarations
    def definitions(self) -> list[dict[str, Any]]:
        """Name, description, input schema and output schema of every tool (plain dicts)."""
        c = self.config
        return [
            {
                "name": "classify_log",
                "title": "Classify a failure log",
                "description": (
                    "Classify the failures in one log against the ledger of known ML/GPU gotchas. Give either "
                    "'text' (the log itself, at most " + _mib(c.max_text_bytes) + ") or 'path' (a log file "
                    "under the server's roots, plain, .gz or .zst, at most " + _mib(c.max_bytes) + "). "
                    "Returns one finding per distinct failure with its family, role (root or secondary), "
                    "confidence, evidence lines, fingerprint, mitigation, probes to run first and caveats. "
                    "No findings means no failure was seen; family 'unknown' means a failure no gotcha explains."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "The log text."},
                        "path": {"type": "string", "description": "A log file; relative paths start at the first root."},
                    },
                    "additionalProperties": False,
                },
                "output_schema": schemas.schema("classification"),
            },
            {
                "name": "analyze_run",
                "title": "Analyse a run directory",
                "description": (
                    "Post-mortem of one run directory (shards, ranks or array tasks and their logs): which units "
                    "failed, the root faults and the cascade victims in each one's blast radius, systematic "
                    "faults (one family on several workers), unreadable files, and a one-line summary."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "The run directory, under the roots."}},
                    "required": ["path"],
                    "additionalProperties": False,
                },
                "output_schema": schemas.schema("run"),
            },
            {
                "name": "explain_gotcha",
                "title": "Explain a gotcha",
                "description": (
                    "The whole ledger entry of a family id (e.g. 'cuda-oom'): title, role, status, what to do, "
                    "probes, caveats, supersedes links, evidence patterns and references."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {"id": {"type": "string", "description": "A family id from list_gotchas."}},
                    "required": ["id"],
                    "additionalProperties": False,
                },
                "output_schema": schemas.schema("gotcha"),
            },
            {
                "name": "list_gotchas",
                "title": "List known gotchas",
                "description": "Every family in the ledger: id, title, role (root or secondary) and status.",
                "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
                "output_schema": schemas.schema("gotcha-list"),
            },
        ]

    def names(self) -> list[str]:
        return list(self._table)

    def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        entry = self._table.get(name)
        if entry is None:
            raise InputError(f"no tool {name!r}; the tools are {', '.join(self._table)}")
        args = dict(arguments or {})
        return entry[0](args)

    def check_output(self, name: str, data: dict[str, Any]) -> str | None:
        """Why `data` does not fit the tool's declared output schema, or None (needs jsonschema)."""
        validator = self._validators.get(name)
        if validator is None:
            from jsonschema import Draft202012Validator

            validator = self._validators[name] = Draft202012Validator(self._table[name][1])
        error = next(iter(validator.iter_errors(data)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        return f"at {where}: {error.message}"

    # ------------------------------------------------------------------ helpers
    def _only(self, args: dict[str, Any], allowed: tuple[str, ...], tool: str) -> None:
        extra = sorted(set(args) - set(allowed))
        if extra:
            raise InputError(f"{tool}: unknown argument(s) {', '.join(extra)}; it takes {', '.join(allowed) or 'none'}")

    # ------------------------------------------------------------------ tools
    def classify_log(self, args: dict[str, Any]) -> dict[str, Any]:
        self._only(args, ("text", "path"), "classify_log")
        has_text, has_path = args.get("text") is not None, args.get("path") is not None
        if has_text == has_path:
            raise InputError("classify_log takes exactly one of 'text' (the log) or 'path' (a log file)")
        c = self.config
        if has_text:
            text = args["text"]
            if not isinstance(text, str):
                raise InputError("text must be a string")
            size = len(text) if len(text) * 4 <= c.max_text_bytes else len(text.encode("utf-8", "surrogatepass"))
            if size > c.max_text_bytes:
                raise InputError(f"text is {_mib(size)}, over the limit of {_mib(c.max_text_bytes)} "
                                 "(--max-text-bytes); send the tail of the log, or a path to it")
            result = api.classify(text, ledger=c.ledger, signatures=c.signatures)
            return result.to_dict()
        raw = args["path"]
        real = self.jail.resolve(raw)
        st = _stat_or_refuse(real, raw)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{raw}: is a directory; use analyze_run for a run directory")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{raw}: not a regular file (a pipe or a device is never opened)")
        if st.st_size > c.max_bytes:
            raise InputError(f"{raw}: the file is {_mib(st.st_size)}, over the limit of {_mib(c.max_bytes)} "
                             "(--max-bytes); classify its tail as text, or raise the limit")
        return api.classify(real, ledger=c.ledger, signatures=c.signatures).to_dict()

    def analyze_run(self, args: dict[str, Any]) -> dict[str, Any]:
        self._only(args, ("path",), "analyze_run")
        if "path" not in args:
            raise InputError("analyze_run needs 'path', a run directory")
        raw = args["path"]
        real = self.jail.resolve(raw)
        st = _stat_or_refuse(real, raw)
        if not stat.S_ISDIR(st.st_mode):
            raise InputError(f"{raw}: not a directory; use classify_log for one log file")
        self._check_run_tree(real, raw)
        c = self.config
        return api.analyze_run(real, ledger=c.ledger, signatures=c.signatures).to_dict()

    def _check_run_tree(self, top: Path, raw: str) -> None:
        """Refuse a run directory that links out of the roots or holds a log file over the size limit.

        Done before the analysis lists or opens anything, so a link to `/` is
        never walked and a huge file is never read.
        """
        from sigclass.scan.reader import is_log_name

        seen: set[tuple[int, int]] = set()
        stack = [top]
        entries = 0
        while stack:
            d = stack.pop()
            try:
                st = d.stat()
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            try:
                with os.scandir(d) as it:
                    items = list(it)
            except OSError:
                continue  # the analysis reports an unlistable folder as a problem
            for e in items:
                entries += 1
                if entries > MAX_RUN_ENTRIES:
                    raise InputError(f"{raw}: more than {MAX_RUN_ENTRIES} files and folders; "
                                     "name a single run directory")
                rel = os.path.relpath(e.path, top)
                if e.is_symlink():
                    if not self.jail.inside(os.path.realpath(e.path)):
                        raise PathRefused(f"{raw}: refused, {rel} is a symbolic link out of the allowed roots "
                                          f"({self.jail.describe()})")
                try:
                    est = os.stat(e.path)
                except OSError:
                    continue  # dangling link or vanished: reported by the analysis
                if stat.S_ISDIR(est.st_mode):
                    stack.append(Path(e.path))
                elif stat.S_ISREG(est.st_mode) and is_log_name(e.name) and est.st_size > self.config.max_bytes:
                    raise InputError(f"{raw}: {rel} is {_mib(est.st_size)}, over the limit of "
                                     f"{_mib(self.config.max_bytes)} per file (--max-bytes)")

    def explain_gotcha(self, args: dict[str, Any]) -> dict[str, Any]:
        self._only(args, ("id",), "explain_gotcha")
        fid = args.get("id")
        if not isinstance(fid, str) or not fid:
            raise InputError("explain_gotcha needs 'id', a family id such as 'cuda-oom' (list_gotchas shows all)")
        return api.explain(fid, ledger=self.config.ledger).to_dict()

    def list_gotchas(self, args: dict[str, Any]) -> dict[str, Any]:
        self._only(args, (), "list_gotchas")
        return {"gotchas": [g.to_dict() for g in api.list_gotchas(ledger=self.config.ledger)]}


def one_line(text: str, limit: int = 2000) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


# --------------------------------------------------------------------------- protocol

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
