"""The MCP server's five tools as plain synchronous code (testable without the protocol): limits, path confinement, calls and output checks.

Paths are confined to the roots given with ``--root``: symlinks are resolved
and anything outside the roots, or reached through a link out of them, is
refused. Files over ``--max-bytes`` and text over ``--max-text-bytes`` are
refused before they are read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
import re
import stat
from typing import Any, Callable

from sigclass import api
from sigclass.errors import InputError
from sigclass.outputs import schemas
from sigclass.scan.reader import decompressed_over


DEFAULT_MAX_BYTES = 64 << 20  # a log file, and each log file of a run directory

DEFAULT_MAX_TEXT_BYTES = 16 << 20  # log text sent inline

MAX_RUN_ENTRIES = 200_000  # directory entries walked in one run directory


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
    """The five tools as plain functions: arguments in, a JSON-ready dict out, SigclassError on refusal."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.jail = Confinement(config.roots)
        self._table: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], dict[str, Any]]] = {
            "classify_log": (self.classify_log, schemas.CLASSIFICATION),
            "analyze_run": (self.analyze_run, schemas.RUN),
            "explain_gotcha": (self.explain_gotcha, schemas.GOTCHA),
            "list_gotchas": (self.list_gotchas, schemas.GOTCHA_LIST),
            "compare_runs": (self.compare_runs, schemas.COMPARISON),
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
            {
                "name": "compare_runs",
                "title": "Compare runs",
                "description": (
                    "Differential diagnosis across run directories (a failing run and the runs that probe it, e.g. "
                    "the same job on another GPU model or with short prompts): which context facts separate "
                    "failing units from clean ones (counts and a Fisher p-value), each ledger probe as supports, "
                    "refutes or not-run with its evidence runs, a verdict per family (confirmed, refuted with the "
                    "family the evidence points to, or open with the next probe), and facts that make the runs "
                    "not comparable."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {"paths": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                                             "description": "Run directories, under the roots."}},
                    "required": ["paths"],
                    "additionalProperties": False,
                },
                "output_schema": schemas.schema("comparison"),
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
            result = api.classify(text, ledger=c.ledger, signatures=c.signatures, as_text=True)
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
        if decompressed_over(str(real), c.max_bytes):
            raise InputError(f"{raw}: decompressed, the file is over the limit of {_mib(c.max_bytes)} "
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
        from sigclass.runs.layouts import is_source
        from sigclass.text.safe import name

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
                        raise PathRefused(f"{raw}: refused, {name(rel)} is a symbolic link out of the allowed roots "
                                          f"({self.jail.describe()})")
                try:
                    est = os.stat(e.path)
                except OSError:
                    continue  # dangling link or vanished: reported by the analysis
                if stat.S_ISDIR(est.st_mode):
                    stack.append(Path(e.path))
                elif stat.S_ISREG(est.st_mode) and is_source(e.name):
                    limit = self.config.max_bytes
                    if est.st_size > limit:
                        raise InputError(f"{raw}: {name(rel)} is {_mib(est.st_size)}, over the limit of "
                                         f"{_mib(limit)} per file (--max-bytes)")
                    if decompressed_over(e.path, limit):
                        raise InputError(f"{raw}: {name(rel)} is over the limit of {_mib(limit)} per file once "
                                         "decompressed (--max-bytes)")

    def compare_runs(self, args: dict[str, Any]) -> dict[str, Any]:
        self._only(args, ("paths",), "compare_runs")
        raw = args.get("paths")
        if not isinstance(raw, list) or not raw or not all(isinstance(p, str) for p in raw):
            raise InputError("compare_runs needs 'paths', a list of run directories")
        real = []
        for p in raw:
            path = self.jail.resolve(p)
            if not stat.S_ISDIR(_stat_or_refuse(path, p).st_mode):
                raise InputError(f"{p}: not a directory; compare_runs takes run directories")
            self._check_run_tree(path, p)
            real.append(path)
        c = self.config
        return api.compare(real, ledger=c.ledger, signatures=c.signatures).to_dict()

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
