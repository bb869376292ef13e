"""Process settings for a command that scans logs and then exits (`sigclass scan`).

Not for the library or a long-lived server: they change the whole process.

- OpenBLAS starts one worker thread per core when numpy is imported; the scan
  makes no BLAS call worth splitting, and on a shared machine the idle workers
  spin (about 0.1 s of CPU on a 300 MB log). One thread, unless the user chose.
- The start-up (ledger, compiled patterns, learned model) leaves tens of
  thousands of long-lived objects that every full garbage collection would walk
  again; they are frozen once built, and young collections run less often.
  Cycles are still collected, so memory stays flat.
"""

from __future__ import annotations

import gc
import os

GC_THRESHOLD = (5_000, 10, 10)  # allocations between young collections (CPython's default is 700)


def before_start_up() -> None:
    """Call first, before numpy is imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.set_threshold(*GC_THRESHOLD)


def after_start_up() -> None:
    """Call once the scanner is built: what exists now lives until the process exits."""
    gc.collect()
    gc.freeze()
