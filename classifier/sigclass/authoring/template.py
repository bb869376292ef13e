"""The template of an unknown failure block for `sigclass suggest`: built from the exception it raised.

A block's first lines are often the same for unrelated failures (`Traceback (most recent call last):`,
the frames of a launcher, a `ChildFailedError:` summary), so grouping by them mixes failures. The line
that tells them apart is the exception the block ends with: the last exception line of the chain (a
chained traceback prints its causes first), its message masked with the shared masks. An exception
with no message (a bare `AssertionError`, torchelastic's `ChildFailedError:` before its failure table)
says little by itself, so the statement that raised it (the source line under the innermost frame) or
the table's `exitcode` line is added to the template, its code as printed (1, an error the rank raised, and -6, a
SIGABRT, are different failures).

A block that raised no exception says something of its own when one of its lines is neither a traceback's header
nor one of its frames or source lines (a fault line, a launcher's report); a traceback cut short before its
exception line says nothing (`says_something`).
"""

from __future__ import annotations

import re
from typing import Sequence

from sigclass.learn.blocktext import exception_match, strip_prefix
from sigclass.text.lines import mask, split_line
from sigclass.text.workers import ELASTIC_FAILED

_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_RULE = re.compile(r"^[\s^~=\-]*$")
# torchelastic's failure table (torch/distributed/elastic/multiprocessing/errors): '  exitcode  : 1 (pid: 239)'
_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*-?\d+")


def _bodies(block: Sequence[str]) -> list[str]:
    return [strip_prefix(split_line(x).body)[:1000] for x in block]


def exception_key(block: Sequence[str]) -> tuple[str, str] | None:
    """(key line, template) of a block from its last exception line, or None when the block raised none.

    The key line is the exception line as printed (a draft's regex is induced from it); the template is
    it masked, plus the raising statement or the exit code when the exception carries no message.
    """
    lines = _bodies(block)
    at = next((i for i in range(len(lines) - 1, -1, -1)
               if lines[i][:1] not in (" ", "\t") and exception_match(lines[i].strip())), None)
    if at is None:
        return None
    key = lines[at].strip()
    m = exception_match(key)
    template = mask(key)
    if not key[m.end():].strip(" :"):
        after = next((x for x in lines[at + 1:] if _EXITCODE.match(x)), None)
        before = next((x for x in reversed(lines[:at]) if x.strip() and not _RULE.match(x) and not _FRAME.match(x)), None)
        extra = after if after is not None else before
        if extra is not None:
            template += " | " + (" ".join(extra.split("(pid")[0].split()) if after is not None else mask(extra))
    return key, template


def report_key(line: str) -> tuple[str, str] | None:
    """(key line, template) of torchelastic's line that a worker failed (`text.workers.ELASTIC_FAILED`), or None:
    the line from its own words on, without the header a log puts before it (glog's `E1006 18:04:10.454885 1264
    torch/.../api.py:826] `, Python logging's `ERROR:torch.distributed.elastic.multiprocessing.api:`), the exit code
    kept in the template (1, an error the worker raised, is not -6, a SIGABRT)."""
    m = ELASTIC_FAILED.search(line)
    if m is None:
        return None
    return line[m.start():].strip(), f"failed (exitcode: {m['code']}) local_rank: <NUM>"


def is_launcher_report(template: str) -> bool:
    """Whether a template is a launcher's summary of a failed child (an exception with no message, then the
    table's exit code): it reports a failure rather than being one."""
    return " | exitcode : " in template


def says_something(block: Sequence[str]) -> bool:
    """Whether a block that raised no exception has a line of its own beyond a traceback's header and frames."""
    for x in _bodies(block):
        t = x.strip()
        if not t or x[:1] in (" ", "\t") or _RULE.match(x) or t.startswith(("Traceback (most recent call last)",
                                                                           "Original Traceback (most recent")):
            continue
        return True
    return False
