"""Reading ahead: blocks of a file with their prefilter hits, matched in helper threads.

One thread reads blocks in order; a small pool of threads runs the prefilter
on them (Hyperscan, RE2 and numpy release the GIL while they work, so two
blocks are matched at once on two cores) and finds each block's newlines.
The consumer takes the blocks back in order. At most a few blocks are in
flight, so memory stays flat whatever the file's size.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
import queue
import threading
from typing import Callable, Iterator

from sigclass.scan.deferred import newline_offsets
from sigclass.scan.reader import blocks, IDLE, SourceState

THREADS = 2  # prefilter threads: one per core of a small machine; the consumer is mostly waiting
IN_FLIGHT = 3  # blocks handed on but not yet taken by the consumer

_DONE, _FAILED = object(), object()


def read_ahead(path: str, state: SourceState, scan: Callable[..., dict]) -> Iterator[tuple[object, tuple | None]]:
    """(block, (hits, newline offsets)) for each block of a file, in order. `scan(buf, nl)` is the prefilter."""

    def match(buf: bytes) -> tuple[dict, object]:
        nl = newline_offsets(buf)
        return scan(buf, nl), nl

    q: queue.Queue = queue.Queue(maxsize=IN_FLIGHT)
    stop = threading.Event()
    pool = ThreadPoolExecutor(THREADS, thread_name_prefix="sigclass-prefilter")

    def produce() -> None:
        try:
            for item in blocks(path, state, live=False):
                if stop.is_set():
                    return
                q.put((item, None if item is IDLE else pool.submit(match, item[0])))  # type: ignore[index]
        except BaseException as exc:  # handed to the consumer, which raises it
            q.put((_FAILED, exc))
            return
        q.put((_DONE, None))

    reader = threading.Thread(target=produce, name="sigclass-reader", daemon=True)
    reader.start()
    try:
        while True:
            item, got = q.get()
            if item is _DONE:
                return
            if item is _FAILED:
                raise got  # type: ignore[misc]
            yield item, got.result() if isinstance(got, Future) else None
    finally:
        stop.set()
        while reader.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                reader.join(0.01)
        pool.shutdown(wait=True, cancel_futures=True)
