"""A run in words: the one-line headline (the text rendering of a batch is outputs/runs_text.py)."""

from __future__ import annotations

import re

from sigclass.records import Run
from sigclass.vocab import UnitRole, UnitStatus
from sigclass.text.workers import number_key


def natural(unit: str) -> tuple:
    k = number_key(unit)
    return (0, *k) if k else (1, 0, unit)


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]\"'])\.\s+(?=[A-Z(])")


def first_sentence(text: str) -> str:
    """The first sentence of a ledger text, whole (never cut inside it)."""
    text = " ".join(text.split())
    m = _SENTENCE_END.search(text)
    return text[: m.start() + 1] if m else text


def headline(run: Run) -> str:
    """`35/42 shards lost: 7 root faults of F on 7 of 8 workers (systematic), 28 cascade victims`."""
    n = len(run.units)
    if not run.readable and n == 0:
        return "nothing could be read"
    if n == 0:
        return "no units found"
    lost = [u for u in run.units if u.status != UnitStatus.OK]
    noun = run.noun
    outside = launcher_part(run)
    if not lost:
        each = f"all {n} {noun}" if n != 1 else f"the one {noun.rstrip('s') or 'unit'}"
        return f"{each} ok" + (f", but {outside}" if outside else "")
    nroots = len(run.roots)
    victims = sum(1 for u in run.units if u.role == UnitRole.CASCADE)
    loose = sum(1 for u in lost if u.role is None)
    parts: list[str] = []
    if nroots:
        fams = sorted({r.family for r in run.roots})
        what = f"{nroots} root fault{'s' if nroots != 1 else ''}"
        if len(fams) == 1:
            what += f" of {fams[0]}"
            sys_ = next((s for s in run.systematic if s.family == fams[0]), None)
            if sys_ is not None:
                what += f" on {sys_.workers} of {run.workers} workers (systematic)"
        else:
            what += f" ({', '.join(fams)})"
            if run.systematic:
                what += "; systematic: " + ", ".join(f"{s.family} on {s.workers} workers" for s in run.systematic)
        parts.append(what)
    if victims:
        parts.append(f"{victims} cascade victim{'s' if victims != 1 else ''}")
    if loose:
        parts.append(f"{loose} incomplete with no failure seen")
    if outside:
        parts.append(outside)
    first = run.roots[0] if run.roots else None  # the roots are in time order
    if first is not None and first.worker is not None and noun in ("ranks", "tasks"):
        parts.append(f"{noun[:-1]} {first.worker} failed first ({first.family})")
    return f"{len(lost)}/{n} {noun} lost: " + ", ".join(parts)


def launcher_part(run: Run) -> str:
    """'2 launcher failures (import-error, oom-killed)': findings outside any unit, for the headline."""
    if not run.launcher:
        return ""
    fams = list(dict.fromkeys(item.split(":", 1)[0] for item in run.launcher))
    n = len(run.launcher)
    return f"{n} launcher failure{'s' if n != 1 else ''} ({', '.join(fams)})"
