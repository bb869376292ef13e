"""The per-user folders sigclass writes to: a cache (compiled pattern databases, validated patterns) and a data folder
(the list of trusted model files, and the user's own ledger edits in its `signatures/`).

Where they are is the platform's convention, through platformdirs (on Linux the XDG base directories:
$XDG_CACHE_HOME/sigclass or ~/.cache/sigclass, $XDG_DATA_HOME/sigclass or ~/.local/share/sigclass).
$SIGCLASS_CACHE_DIR and $SIGCLASS_DATA_DIR override them.
"""

from __future__ import annotations

import os
import posixpath
import sys
from pathlib import Path

CACHE_ENV = "SIGCLASS_CACHE_DIR"
DATA_ENV = "SIGCLASS_DATA_DIR"

APP = "sigclass"


def cache_dir() -> Path | None:
    """$SIGCLASS_CACHE_DIR, else the platform's user cache folder for sigclass; None when set to "0" or "off"."""
    env = os.environ.get(CACHE_ENV)
    if env in ("0", "off"):
        return None
    if env:
        return Path(env)
    return Path(_user_dir("XDG_CACHE_HOME", "~/.cache") or _platformdirs().user_cache_dir(APP, appauthor=False))


def data_dir() -> Path:
    """$SIGCLASS_DATA_DIR, else the platform's user data folder for sigclass."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    return Path(_user_dir("XDG_DATA_HOME", "~/.local/share") or _platformdirs().user_data_dir(APP, appauthor=False))


def _user_dir(xdg: str, default: str) -> str | None:
    """What platformdirs gives for a per-user folder on Linux in the plain case (an absolute $XDG_... variable,
    else under an absolute $HOME), without importing it (it imports tempfile and shutil: ~6 ms of every
    command's start-up); None anywhere else (another platform, Android, no usable HOME), where platformdirs
    decides."""
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel") or "ANDROID_DATA" in os.environ:
        return None
    base = os.environ.get(xdg, "")
    if not posixpath.isabs(base):
        if not posixpath.isabs(os.environ.get("HOME", "")):
            return None
        base = os.path.expanduser(default)
    return os.path.join(base, APP)


def _platformdirs():
    import platformdirs  # here, not at import: most commands never get here

    return platformdirs


def user_ledger_dir() -> Path:
    """The user's signature folder, read after the shipped pack (same ids override): where `sigclass ledger
    supersede` writes its edits of an installed pack, which it never changes in place."""
    return data_dir() / "signatures"


def package_dir(name: str) -> Path:
    """The folder of one of sigclass's own data packages (`signatures`, `data`) as installed: beside this file
    when it is there (importing importlib.resources costs a small scan ~5 ms), else as importlib.resources
    finds it."""
    here = Path(__file__).parent / name
    if (here / "__init__.py").is_file():
        return here
    import importlib.resources

    return Path(str(importlib.resources.files(f"sigclass.{name}")))


def write_cache_file(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Replace a cache file in one step (a reader never sees half of it). Best effort: a read-only home just
    means the work is done again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding=encoding)
        os.replace(tmp, path)
    except OSError:
        pass
