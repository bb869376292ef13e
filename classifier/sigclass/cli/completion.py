"""`sigclass completion SHELL`: the shell's completion script, to source or save."""

from __future__ import annotations

from enum import Enum
import os
from typing import Annotated

import typer

from sigclass.cli.common import app, err

PROG = "sigclass"
COMPLETE_VAR = "_SIGCLASS_COMPLETE"


def _register() -> None:
    """Let `_SIGCLASS_COMPLETE=complete_bash sigclass` answer (typer does this only with add_completion)."""
    try:
        from typer.completion import completion_init
    except ImportError:  # pragma: no cover
        return
    completion_init()


if os.environ.get(COMPLETE_VAR):
    _register()


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.command()
def completion(
    shell: Annotated[Shell, typer.Argument(metavar="bash|zsh|fish", help="The shell to complete in.")],
) -> None:
    """Print a shell completion script: `eval "$(sigclass completion bash)"`, or save it where your shell loads completions."""
    try:
        from typer._completion_shared import get_completion_script
    except ImportError:  # pragma: no cover - a typer without the helper
        err("this version of typer cannot write completion scripts; upgrade typer")
        raise typer.Exit(2) from None
    name = shell.value if isinstance(shell, Shell) else str(shell)
    typer.echo(get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=name))
