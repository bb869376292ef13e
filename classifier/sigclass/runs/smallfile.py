"""A run's small plain log read whole in one call, for the scanner's `scan_whole` (most shards of a sweep).

A shard log is a few kilobytes: the general reader's work per file (a
compression sniff, its own `stat`s, newline-aligned blocks, a final empty
read) costs as much as the prefilter pass over it. A file that the reader
would hand over unchanged as one block, here read with one `read`, gives the
same scan; anything else (compressed, JSON lines, binary, holding NUL
bytes, no final newline, changing while read) goes through the reader.
"""

from __future__ import annotations

import os

from sigclass.scan.reader import looks_binary, MAX_LINE

SMALL = MAX_LINE  # no line of a file this small can be longer than the reader keeps

_GZIP, _ZSTD = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"

_OTHER_NAMES = (".gz", ".zst", ".jsonl")  # read through the reader: decompressed, or records made lines


def read_small(path: str, size: int) -> bytes | None:
    """Every byte of a small plain log of `size` bytes (its `stat`), or None when the reader must read it."""
    if not 0 < size <= SMALL or path.lower().endswith(_OTHER_NAMES):
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None  # the reader says what is wrong with it
    try:
        data = os.read(fd, size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) != size or data[-1] != 0x0A or b"\x00" in data or data[:2] == _GZIP or data[:4] == _ZSTD:
        return None  # changed since its stat, no final newline, a hole of NUL bytes, or compressed
    if looks_binary(data[:8192]):
        return None
    return data
