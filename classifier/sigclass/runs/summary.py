"""A run in words: the one-line headline and the text rendering of a batch."""

from __future__ import annotations

import re
from typing import Iterator, Sequence

from sigclass.records import Batch, Run
from sigclass.vocab import UnitRole, UnitStatus, UNKNOWN


def natural(unit: str) -> tuple:
    return (0, int(unit), "") if unit.isdigit() else (1, 0, unit)


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]\"'])\.\s+(?=[A-Z(])")


def _gist(text: str, limit: int = 110) -> str:
    """The leading clause of a probe (up to its first `;` or sentence end), for one-line summaries."""
    s = first_sentence(text, 10 * limit)
    depth, quoted = 0, False
    for i, ch in enumerate(s):  # the first `;` outside quotes and brackets ends the clause
        if ch in "\"`":
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == ";" and not quoted and depth == 0:
            s = s[:i]
            break
    paren = s.find(" (")
    if paren >= 40:  # drop a parenthesised aside: `... enforce_eager=True (LLM(..., ...) or --flags), then ...`
        s = s[:paren]
    if len(s) > limit:
        s = s[: limit - 1].rsplit(" ", 1)[0] + " …"
    return s.rstrip(" .,")


def first_sentence(text: str, limit: int = 240) -> str:
    """The first sentence of a ledger text, cut at a word boundary when it is very long."""
    text = " ".join(text.split())
    m = _SENTENCE_END.search(text)
    s = text[: m.start() + 1] if m else text
    if len(s) > limit:
        s = s[: limit - 1].rsplit(" ", 1)[0] + " …"
    return s


def _ids(ids: Sequence[str]) -> str:
    """'4-7, 9, a' from ids: runs of consecutive numbers collapse to ranges."""
    nums = sorted({int(i) for i in ids if i.isdigit()})
    out: list[str] = []
    k = 0
    while k < len(nums):
        j = k
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[k]) if j == k else f"{nums[k]}-{nums[j]}" if j > k + 1 else f"{nums[k]}, {nums[j]}")
        k = j + 1
    out.extend(sorted(i for i in ids if not i.isdigit()))
    return ", ".join(out)


def headline(run: Run) -> str:
    """`35/42 shards lost: 7 root faults of F on 7 of 8 workers (systematic), 28 cascade victims`."""
    n = len(run.units)
    if not run.readable and n == 0:
        return "nothing could be read"
    if n == 0:
        return "no units found"
    lost = [u for u in run.units if u.status != UnitStatus.OK]
    noun = run.noun
    if not lost:
        return f"all {n} {noun} ok"
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
    return f"{len(lost)}/{n} {noun} lost: " + ", ".join(parts)


def _hms(t: str | None) -> str:
    return t[11:19] if t and len(t) >= 19 else "--:--:--"


def render_text(batch: Batch) -> Iterator[str]:
    """The post-mortem for people, one block per run."""
    for run in batch.runs:
        yield from render_run(run)


def render_run(run: Run) -> Iterator[str]:
    yield f"{run.run}: {run.summary}"
    singular = {"shards": "shard", "ranks": "rank", "tasks": "task"}.get(run.noun, "unit")
    for s in run.systematic:
        label = s.family if s.fingerprint is None else f"unknown failure {s.fingerprint}"
        yield f"  systematic: {label} struck {s.workers} of {run.workers} workers separately"
    wmax = max((len(str(r.worker)) for r in run.roots), default=4)
    umax = max((len(r.unit) for r in run.roots), default=1)
    told: set[str] = set()
    said: set[str] = set()
    for r in run.roots:
        n = len(r.victims)
        if n == 0:
            took = "no other unit lost"
        elif singular == "rank":
            took = f"took down {n} rank{'s' if n != 1 else ''} ({_ids(r.victims)})"
        else:
            noun = run.noun if n != 1 else singular
            took = f"lost {n} {'queued ' if singular == 'shard' else ''}{noun} ({_ids(r.victims)})"
        worker = str(r.worker) if r.worker is not None else "?"
        yield f"  {worker:<{wmax}}  {singular} {r.unit:<{umax}}  {_hms(r.time)}  {r.family} -> {took}"
        pad = " " * (wmax + 4)
        if r.family not in told:
            told.add(r.family)
            if r.mitigation:
                yield f"{pad}do: {_gist(r.mitigation, 180)}"
            if r.probes:
                yield f"{pad}first check: " + "; ".join(_gist(x) for x in r.probes[:2])
            for note in r.notes:
                said.add(note)
                yield f"{pad}note: {note}"
            if r.family == UNKNOWN and r.evidence:
                yield f"{pad}evidence: {r.evidence[-1][:200]}"
        else:
            for note in r.notes:  # a note of this root's own (a fact its node printed), not the family's
                if note not in said:
                    said.add(note)
                    yield f"{pad}note: {note}"
            if r.family == UNKNOWN and r.evidence:
                yield f"{pad}evidence: {r.evidence[-1][:200]}"
    for item in run.launcher:
        yield f"  launcher: {item}"
    if run.problems:
        yield "  problems:"
        for p in run.problems:
            yield f"    - {p}"
