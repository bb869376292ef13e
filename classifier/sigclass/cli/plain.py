"""What the commands do without the Typer app: the error printer, ledger loading, the body of
`sigclass scan`, the entry point's error handling, and the plain-arguments fast path of `sigclass scan`.

Importing Typer (and the parsing machinery it brings) costs more than scanning a small log, so a
`sigclass scan` whose arguments are plain (paths and `--opt value` options with valid values) runs from
here; anything else (help, a bad value, an unknown option) goes to the Typer app, which explains it.
"""

from __future__ import annotations

import os
from pathlib import Path
import stat
import sys
from typing import Any, Callable
import warnings

from sigclass.errors import InputError, ModelError, SigclassError, SignatureError
from sigclass.vocab import ColourMode, SignatureMode, Status

FORMATS = ("text", "json", "jsonl")  # cli.common.Fmt's values (a test checks)
SIGNATURE_MODES = tuple(m.value for m in SignatureMode)
COLOUR_MODES = tuple(m.value for m in ColourMode)


def err(msg: object) -> None:
    """One line on stderr, prefixed with the program name."""
    for line in str(msg).splitlines() or [""]:
        sys.stderr.write(f"sigclass: {line}\n")
    sys.stderr.flush()


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


def run_scan(paths: list[str] | None, fmt: str = "text", ledger: list[Path] | None = None, signatures: str = "both",
             model: Path | None = None, engine: str | None = None, *, quiet: bool = False, color: str = "auto",
             stall: str = "auto") -> int:
    """`sigclass scan`: print one finding per failure as each ends; the exit status (0 none, 1 found, 2 input errors)."""
    from sigclass.scan import tuning

    tuning.before_start_up()
    from sigclass.outputs.findings import Writer

    from sigclass.scan.factory import build_scanner

    from sigclass.scan.factory import regex_only

    lg, bad = load_ledger_or_exit(ledger)
    try:
        try:
            scanner = build_scanner(lg, signatures, model, engine=engine, on_note=err, warnings_as_notes=True)
        except ModelError as exc:  # a named model that cannot be used: go on without it (exit 2 once done)
            if model is None or signatures == "learned":
                raise
            err(regex_only(exc))
            bad = True
            scanner = build_scanner(lg, "regex", None, engine=engine)
    except (ModelError, SigclassError) as exc:
        err(exc)
        return 2
    except KeyError:
        if engine is None:
            raise  # not the user's choice of engine: a fault of sigclass's own
        err(f"unknown engine {engine!r}; use hyperscan, re2 or regex")
        return 2
    from sigclass.scan.stall import stall_setting

    try:
        scanner.live_stall = stall_setting(stall)
    except ValueError as exc:
        err(str(exc))
        return 2
    writer = Writer(fmt, stream=NullStream() if quiet else None, colour=color)
    tuning.after_start_up()
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
        if any(("binary" in p or "truncated" in p or "read failed" in p or "decompress" in p or "shrank" in p)
               for p in res.problems):
            input_error = True
        found = (found or any(f.status != Status.RECOVERED for f in res.findings)  # recovered: progress went on
                 or (res.verdict is not None and res.verdict.cause is not None))
        lines += res.lines
    writer.close(problems)
    if not found and not quiet and fmt == "text" and not input_error and _terminal(sys.stderr):
        err(f"no failures found in {lines} line{'s' if lines != 1 else ''}")
    return 2 if input_error else 1 if found else 0


class NullStream:
    """Where `-q` sends the findings."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _is_live(path: str) -> bool:
    """Standard input that is not a regular file (a pipe, a terminal) may still be being written."""
    if path != "-":
        return False
    try:
        return not stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError):
        return True


def _terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def guarded(run: Callable[[], Any]) -> Any:
    """Run a command the way the console script does: a closed pipe is quiet, user errors are one line
    and exit 2, and a bug is one line unless SIGCLASS_DEBUG asks for the traceback."""
    try:
        return run()
    except SystemExit as exc:
        if exc.code == 130:  # Typer turns Ctrl-C inside a command into a silent exit status 130
            err("interrupted")
        raise
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


_SCAN_OPTS = {"--format": "fmt", "-f": "fmt", "--ledger": "ledger", "--signatures": "signatures",
              "--model": "model", "--engine": "engine", "--color": "color", "--colour": "color", "--stall": "stall"}
_SCAN_FLAGS = {"--quiet": "quiet", "-q": "quiet"}


def plain_scan_args(argv: list[str]) -> dict[str, Any] | None:
    """The arguments of `sigclass scan ...` (or of a bare `sigclass` reading a pipe) when they are plain,
    else None (the Typer app then parses them, and explains any mistake)."""
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None  # the shell asks for completions: only the Typer app answers those
    if not argv:
        return {"paths": None} if sys.stdin is not None and not sys.stdin.isatty() else None
    if argv[0] != "scan":
        return None
    parsed = plain_options(argv[1:], _SCAN_OPTS, _SCAN_FLAGS)
    if parsed is None:
        return None  # help, version, an unknown option, `--`, `-fjson`: the full parser's business
    out: dict[str, Any] = {"paths": parsed[0]}
    for key, value in parsed[1]:
        if key == "ledger":
            out.setdefault("ledger", []).append(Path(value))
        elif key == "model":
            out["model"] = Path(value)
        elif (key == "fmt" and value in FORMATS or key == "signatures" and value in SIGNATURE_MODES
              or key == "color" and value in COLOUR_MODES or key in ("engine", "stall", "quiet")):
            out[key] = value
        else:
            return None
    out["paths"] = out["paths"] or None
    return out


def plain_options(args: list[str], opts: dict[str, str], flags: dict[str, str], attached: tuple[str, ...] = ()):
    """A command's plain arguments: (positional arguments, [(key, value)] in order; a flag's value is True), or
    None for anything the Typer app must read (help, an unknown option, `--`, `-f=json`, an option without its
    value). `attached` names the short options whose value may follow them in one word (`-j2`)."""
    pos: list[str] = []
    got: list[tuple[str, Any]] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-" or not a.startswith("-"):
            pos.append(a)
            i += 1
            continue
        if a in flags:
            got.append((flags[a], True))
            i += 1
            continue
        name, eq, value = a.partition("=")
        if a[:2] in attached and len(a) > 2 and not eq:
            name, eq, value = a[:2], "attached", a[2:]
        key = opts.get(name)
        if key is None or (eq == "=" and not name.startswith("--")):
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 1
        i += 1
        got.append((key, value))
    return pos, got
