"""Ctrl-C belongs to the command, not to its worker processes.

A Ctrl-C on a terminal reaches every process of the foreground group: the
command and each joblib worker. A worker that is still starting (importing)
when it arrives dies with a Python traceback on the user's terminal. Worker
processes are therefore started with SIGINT ignored (a disposition they keep
across exec); the command itself still stops on Ctrl-C and shuts them down.
"""

from __future__ import annotations

from contextlib import contextmanager
import signal
import threading
from typing import Iterator


@contextmanager
def workers_ignore_sigint() -> Iterator[None]:
    """Processes started inside this block ignore SIGINT; this process's own handler is restored after it.

    Only the main thread may change signal handlers; elsewhere (an MCP call, a
    thread of the caller) the block changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
