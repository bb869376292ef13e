"""Ledger prose on a terminal: wrapped between words, never cut inside a sentence.

A mitigation, probe, caveat or superseded-by note is shown whole (wrapped),
or as its first sentence whole with a pointer to the rest
(`sigclass explain FAMILY`). Evidence lines are long; they are clipped only
after the last place that the family's probes or facts point at.
"""

from __future__ import annotations

from typing import Iterable

from sigclass.text.lazyre import lazy

MIN_WIDTH, MAX_WIDTH = 60, 110
EVIDENCE_CHARS = 200  # an evidence line is clipped after this many characters, unless a probe needs more

_SENTENCE_END = lazy(r"(?<=[a-z0-9)\]\"'`])\.\s+(?=[A-Z(`])")
_TERM = lazy(r"`([^`]{3,60})`|\b([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\b|\b([A-Za-z_]+=[^\s,;)]+)")


def width() -> int:
    """Columns to wrap at: the terminal's (or $COLUMNS), kept between 60 and 110."""
    import shutil  # here: a scan that prints no finding needs neither this nor textwrap

    cols = shutil.get_terminal_size((100, 24)).columns
    return max(MIN_WIDTH, min(MAX_WIDTH, cols))


def wrap(text: str, indent: str, label: str = "", cols: int | None = None) -> list[str]:
    """`text` after `indent + label`, wrapped between words; continuation lines line up under the text."""
    cols = cols or width()
    import textwrap

    body = " ".join(text.split())
    lines = textwrap.wrap(body, width=cols, initial_indent=indent + label, subsequent_indent=indent + " " * len(label),
                          break_long_words=False, break_on_hyphens=False)
    return lines or [indent + label.rstrip()]


def first_sentence(text: str) -> tuple[str, bool]:
    """(the first sentence, whole; True when more text follows it)."""
    body = " ".join(text.split())
    m = _SENTENCE_END.search(body)
    if m is None:
        return body, False
    return body[: m.start() + 1], True


def terms(texts: Iterable[str]) -> list[str]:
    """What probes point at in a log line: `code spans`, snake_case names, key=value settings."""
    out: dict[str, None] = {}
    for t in texts:
        for m in _TERM.finditer(t):
            term = next(g for g in m.groups() if g)
            out[term.split("=", 1)[0] if "=" in term and not m.group(1) else term] = None
    return list(out)


def clip_evidence(line: str, keep: Iterable[str] = (), limit: int = EVIDENCE_CHARS) -> str:
    """The line up to `limit` characters, extended past the last of `keep` it contains; a cut is marked."""
    if len(line) <= limit:
        return line
    end = limit
    low = line.lower()
    for k in keep:
        if not k:
            continue
        at = low.rfind(k.lower())
        if at >= 0:
            end = max(end, at + len(k) + 40)
    if end >= len(line):
        return line
    cut = line.rfind(" ", limit // 2, end + 1)
    end = cut if cut > 0 else end
    return f"{line[:end]} … (+{len(line) - end} chars)"
