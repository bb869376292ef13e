"""The `sigclass` command. Thin: parse arguments, call the library, print, exit.

The only module that prints errors or chooses exit codes (0: no failure found,
1: failures found, 2: usage or input errors; findings on readable inputs are
still printed).
"""

from __future__ import annotations

import os
import sys

from sigclass.cli.common import app, err
from sigclass.errors import SigclassError, SignatureError

# Each command module registers its commands on `app` when imported.
from sigclass.cli import agent, compare, completion, learn, ledger, report, runs, scan  # noqa: F401


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
