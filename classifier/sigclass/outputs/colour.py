"""When output is coloured: one policy for every text output (`--color auto|always|never`).

`always` and `never` are the user's word and win. `auto` colours a terminal
unless NO_COLOR is set (no-color.org) or TERM is `dumb`; FORCE_COLOR colours
even a pipe.
"""

from __future__ import annotations

import os
from typing import IO

from sigclass.vocab import ColourMode


def wanted(stream: IO[str] | None, when: ColourMode | str = ColourMode.AUTO) -> bool:
    """True when text written to `stream` should carry ANSI colour."""
    when = ColourMode(when)
    if when is ColourMode.ALWAYS:
        return True
    if when is ColourMode.NEVER or stream is None:
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Paint:
    """Wraps text in an SGR code when colour is on; a no-op otherwise."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on and text else text
