"""The per-user folders sigclass writes to: a cache (compiled pattern databases, validated patterns) and a data folder
(the list of trusted model files)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "SIGCLASS_CACHE_DIR"
DATA_ENV = "SIGCLASS_DATA_DIR"


def cache_dir() -> Path | None:
    """$SIGCLASS_CACHE_DIR, else $XDG_CACHE_HOME/sigclass, else ~/.cache/sigclass; None when set to "", "0" or "off"."""
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sigclass")
    if base in ("", "0", "off"):
        return None
    return Path(base)


def data_dir() -> Path:
    """$SIGCLASS_DATA_DIR, else $XDG_DATA_HOME/sigclass, else ~/.local/share/sigclass."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "sigclass"
