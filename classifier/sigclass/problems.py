"""A problem: something sigclass could not read or use, said in one line, with its parts for programs.

Readers, the ledger and the model report problems as one line each,
`PATH: what happened; what was done` (the path is missing when the problem
is not about one file). Every output keeps the line for people and gives
programs its parts: `{"path": ..., "kind": ..., "message": ...}`. `ProblemLine`
is that line as a `str` (so `"binary" in p` keeps working) with the parts as
properties.
"""

from __future__ import annotations

import re
from typing import Any

from sigclass.text.lazyre import lazy

# (what the message says, its kind): the first match wins; one closed vocabulary for every output
KINDS: tuple[tuple[str, str], ...] = (
    (r"binary data", "binary"),
    (r"truncated|decompress|corrupt", "corrupt"),
    (r"vanished|no such file|does not exist|dangling symlink", "missing"),
    (r"symlink loop|links back", "symlink-loop"),
    (r"not a regular file", "not-a-file"),
    (r"empty file", "empty"),
    (r"longer than \d+ KiB|were cut", "long-lines"),
    (r"cannot list|no log files", "no-logs"),
    (r"permission denied|cannot read|read failed|cannot open", "unreadable"),
    (r"out of memory", "out-of-memory"),
    (r"over the limit|too large|too big", "too-large"),
    (r"regex|pattern|signature file|ledger|yaml|duplicate key", "ledger"),
    (r"model", "model"),
    (r"timed out|timeout|slow", "slow-pattern"),
    (r"could not be scanned|internal error", "scan-error"),
)
KIND_NAMES = tuple(dict.fromkeys(k for _, k in KINDS)) + ("other",)
_KIND_RES = tuple((lazy(rx, re.IGNORECASE), kind) for rx, kind in KINDS)
_PATH_END = lazy(r": ")


class ProblemLine(str):
    """One problem line, with `path`, `kind` and `message` for programs."""

    @property
    def path(self) -> str | None:
        return split(self)[0]

    @property
    def message(self) -> str:
        return split(self)[1]

    @property
    def kind(self) -> str:
        return kind_of(self.message)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, d: Any) -> ProblemLine:
        return from_dict(d)

    @classmethod
    def __json_schema__(cls) -> dict[str, Any]:
        """The JSON Schema of a problem record (`sigclass.typeschema` reads it)."""
        return {
            "type": "object",
            "required": ["path", "kind", "message"],
            "properties": {
                "path": {"type": ["string", "null"], "description": "The file the problem is about (null: not about one file)."},
                "kind": {"enum": list(KIND_NAMES)},
                "message": {"type": "string", "description": "What happened and what was done, for people."},
            },
        }


def split(line: str) -> tuple[str | None, str]:
    """(path, message) of a problem line; the path is the part before the first `: ` when it names a file."""
    m = _PATH_END.search(line)
    if m is None:
        return None, line
    head = line[: m.start()]
    if not head or head.startswith(("no ", "the ", "a ", "an ")) or (" " in head and "/" not in head and "." not in head):
        return None, line
    return head, line[m.end():]


def kind_of(message: str) -> str:
    for rx, kind in _KIND_RES:
        if rx.search(message):
            return kind
    return "other"


def to_dict(line: str) -> dict[str, Any]:
    """`{"path", "kind", "message"}` of a problem line (a `str` or a `ProblemLine`)."""
    path, message = split(str(line))
    return {"path": path, "kind": kind_of(message), "message": message}


def to_dicts(lines: Any) -> list[dict[str, Any]]:
    return [to_dict(p) for p in lines]


def from_dict(d: Any) -> ProblemLine:
    """A problem read back from an output (a dict, or a plain line from an older one)."""
    if isinstance(d, str):
        return ProblemLine(d)
    path, message = d.get("path"), str(d.get("message", ""))
    return ProblemLine(f"{path}: {message}" if path else message)
