"""Finding a run directory's log sources (symlink loops, unreadable entries and special files reported as problems)."""

from __future__ import annotations

from dataclasses import dataclass
import errno
import os
import stat

from sigclass.runs.layouts import is_source
from sigclass.scan.reader import LOG_SUFFIXES
from sigclass.text import safe


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A run directory as found on disk: its log sources (relative paths, sorted) and discovery problems."""

    path: str
    name: str
    sources: tuple[str, ...]
    problems: tuple[str, ...]
    listable: bool = True
    bytes: int = 0  # total size of the sources (on disk)


def run_name(path: str) -> str:
    p = os.path.normpath(path)
    return os.path.basename(p) or p


def plan_run(path: str) -> RunPlan:
    """Find the log sources under one run directory without opening any of them."""
    name = safe.name(run_name(path))
    shown = safe.name(path)  # a name as it is printed: losslessly escaped (the directory is read by `path`)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return RunPlan(path, name, (), (f"{shown}: no such directory; check the path",), False)
    except OSError as exc:
        return RunPlan(path, name, (), (f"{shown}: cannot read ({os_reason(exc)})",), False)
    if not stat.S_ISDIR(st.st_mode):
        return RunPlan(path, name, (), (f"{shown}: not a directory; `sigclass runs` takes run directories "
                                        f"(use `sigclass scan {shown}` for one log)",), False)
    sources: list[tuple[str, int]] = []
    problems: list[str] = []
    listable = _walk(path, "", {(st.st_dev, st.st_ino)}, sources, problems)
    if listable and not sources:
        problems.append(f"no log files ({', '.join('*' + s for s in LOG_SUFFIXES)}, "
                        f"optionally .gz/.zst) under {shown}")
    sources.sort()
    return RunPlan(path, name, tuple(s for s, _ in sources), tuple(problems), listable, sum(n for _, n in sources))


def os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _walk(root: str, rel: str, ancestors: set[tuple[int, int]], sources: list[tuple[str, int]], problems: list[str]) -> bool:
    here = os.path.join(root, rel) if rel else root
    try:
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        problems.append(f"{safe.name(rel) or '.'}: cannot list this directory ({os_reason(exc)}); its logs are not read")
        return False
    for e in entries:
        relp = f"{rel}/{e.name}" if rel else e.name
        shown = safe.name(relp)
        try:
            link = e.is_symlink()
            st = os.stat(e.path) if link else e.stat(follow_symlinks=False)
        except OSError as exc:
            if not link:
                continue  # vanished while listing
            if exc.errno == errno.ELOOP:
                problems.append(f"{shown}: symlink loop; skipped")
            elif is_source(e.name):
                problems.append(f"{shown}: dangling symlink (its target does not exist); skipped")
            continue
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in ancestors:
                problems.append(f"{shown}: symlink loop (links back to a parent directory); skipped")
                continue
            _walk(root, relp, ancestors | {key}, sources, problems)
            continue
        if not is_source(e.name):
            continue
        if not stat.S_ISREG(st.st_mode):
            problems.append(f"{shown}: {file_kind(st.st_mode)}, not a regular file; not opened")
            continue
        sources.append((relp, st.st_size))
    return True


def file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"
