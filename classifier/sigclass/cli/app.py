"""The `sigclass` command. Thin: parse arguments, call the library, print, exit.

The only module that prints errors or chooses exit codes (0: no failure found,
1: failures found, 2: usage or input errors; findings on readable inputs are
still printed).
"""

from __future__ import annotations

import os
import sys

from sigclass.cli.plain import err, guarded, plain_scan_args, run_scan


def main() -> None:
    """Console-script entry point. `sigclass scan` and `sigclass runs` with plain arguments run without building
    the Typer app (its import and option validators cost more than scanning a small log); everything else goes
    through it."""
    if sys.stdout is None:  # started with standard output closed (`>&-`): say so once, and keep the exit status
        err("standard output is closed; nothing is printed (redirect it to a file, or use -q)")
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    if sys.argv[1:] in (["--version"], ["-V"]):
        from sigclass import __version__

        print(f"sigclass {__version__}")
        return
    args = plain_scan_args(sys.argv[1:])
    if args is not None:
        sys.exit(guarded(lambda: run_scan(**args)))
    if sys.argv[1:2] == ["runs"]:  # a plain `sigclass runs` runs without the Typer app too (cli/runsplain.py)
        from sigclass.cli.runsplain import plain_runs_args, run_runs

        runs_args = plain_runs_args(sys.argv[1:])
        if runs_args is not None:
            sys.exit(guarded(lambda: run_runs(**runs_args)))
    guarded(_app())


def _app():
    from sigclass.cli.common import app

    # Each command module registers its commands on `app` when imported.
    from sigclass.cli import agent, compare, completion, learn, ledger, report, runs, scan  # noqa: F401

    return app


def __getattr__(name: str):
    if name == "app":  # `from sigclass.cli.app import app`: the full Typer app
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
