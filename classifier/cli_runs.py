"""Commands of the `sigclass` CLI registered on the shared app (see cli.py)."""

from __future__ import annotations

from sigclass.cli import app, err  # noqa: F401
