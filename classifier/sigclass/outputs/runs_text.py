"""`sigclass runs` for people: per run, the headline, a labelled table of root faults, what to do, what to re-queue.

The answer someone needs at 3 a.m.: which fault, on which worker, when, what
it took down; the mitigation whole; the first sentence of each probe and
caveat whole (`sigclass explain FAMILY` has the rest); which fix to try
first when the ledger says a family is superseded; and one line naming the
lost units to re-queue with the fix to apply to them first. Across several
runs, one total line ends the output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

from sigclass.outputs.colour import Paint
from sigclass.outputs.prose import clip_evidence, first_sentence, width, wrap
from sigclass.records import RootFault, Run
from sigclass.text.workers import number_key

SINGULAR = {"shards": "shard", "ranks": "rank", "tasks": "task", "units": "unit"}
PROBES_SHOWN = 2


def natural(unit: str) -> tuple:
    k = number_key(unit)
    return (0, *k) if k else (1, 0, unit)


def id_ranges(ids: Sequence[str]) -> str:
    """'4-7, 9, a' from ids: runs of consecutive numbers collapse to ranges."""
    countable = {i for i in ids if number_key(i) and len(i) <= 1000}  # a number int() reads at once
    nums = sorted({int(i) for i in countable})
    out: list[str] = []
    k = 0
    while k < len(nums):
        j = k
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[k]) if j == k else f"{nums[k]}-{nums[j]}" if j > k + 1 else f"{nums[k]}, {nums[j]}")
        k = j + 1
    out.extend(sorted(i for i in ids if i not in countable))
    return ", ".join(out)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun if n != 1 else SINGULAR.get(noun, noun.rstrip('s'))}"


def spans_days(run: Run) -> bool:
    """True when the run's times fall on more than one date (then times carry their date)."""
    days = {t[:10] for t in [*(u.time for u in run.units), *(r.time for r in run.roots)] if t and len(t) >= 19}
    return len(days) > 1


def when(t: str | None, dated: bool) -> str:
    if not t or len(t) < 19:
        return "--"
    return f"{t[:10]} {t[11:19]}" if dated else t[11:19]


def took(r: RootFault, noun: str) -> str:
    n = len(r.victims)
    if n == 0:
        return "no other unit lost"
    if noun == "ranks":
        return f"took down {_count(n, 'ranks')} ({id_ranges(r.victims)})"
    queued = "queued " if noun == "shards" else ""
    return f"lost {n} {queued}{noun if n != 1 else SINGULAR.get(noun, 'unit')} ({id_ranges(r.victims)})"


def own_notes(r: RootFault, said: set[str], indent: str, cols: int) -> list[str]:
    """A root's notes not said yet (a note of its own, such as a fact its node printed, shows on every root)."""
    out: list[str] = []
    shown = [" ".join(c.split()) for c in r.caveats]
    for note in r.notes:
        if note in said or note.startswith("superseded by ") or any(c.startswith(note) for c in shown):
            continue  # said already, or above in full
        said.add(note)
        out.extend(wrap(note, indent, "note: ", cols))
    return out


def advice(r: RootFault, indent: str, paint: Paint, cols: int, said: set[str]) -> list[str]:
    """What to do about a root's family: nothing cut inside a sentence; a pointer when something is left out."""
    out: list[str] = []
    more = False
    for s in r.superseded_by:
        note, rest = first_sentence(s.get("note", ""))
        more = more or rest
        out.extend(paint(x, "1") for x in wrap(f"{s.get('id')}, before this family's fix: {note}", indent, "try first: ", cols))
    if r.mitigation:
        out.extend(wrap(r.mitigation, indent, "do: ", cols))
    for i, p in enumerate(r.probes):
        if i >= PROBES_SHOWN:
            more = True
            break
        s, rest = first_sentence(p)
        more = more or rest
        out.extend(wrap(s, indent, "check: ", cols))
    for c in r.caveats:
        s, rest = first_sentence(c)
        more = more or rest
        out.extend(paint(x, "35") for x in wrap(s, indent, "caveat: ", cols))
    out.extend(own_notes(r, said, indent, cols))
    if r.family == "unknown" and r.evidence:
        out.append(f"{indent}evidence: {clip_evidence(r.evidence[-1])}")
    elif more:
        out.append(paint(f"{indent}more: sigclass explain {r.family}", "2"))
    return out


def requeue(run: Run, cols: int) -> list[str]:
    """One (wrapped) line: the lost units to re-queue, and the fix to apply to them first."""
    lost = sorted((u.unit for u in run.units if u.status != "ok"), key=natural)
    if not lost or not run.roots:
        return []
    fams: dict[str, RootFault] = {}
    for r in run.roots:
        fams.setdefault(r.family, r)
    fixes = []
    for fam, r in fams.items():
        if r.superseded_by:
            fixes.append(f"{r.superseded_by[0].get('id')}'s fix (the ledger's first choice over {fam})")
        elif r.mitigation:
            fixes.append(f"the {fam} fix (its do: above)")
    if run.noun == "ranks":
        what = f"re-run the job ({_count(len(lost), 'ranks')} lost)"
    else:
        what = f"re-queue {_count(len(lost), run.noun)} ({id_ranges(lost)})"
    tail = f" after applying {' and '.join(fixes)}" if fixes else "; no fix is known yet, see the roots above"
    return wrap(what + tail, "  ", "", cols)


@dataclass
class Totals:
    runs: int = 0
    units: int = 0
    lost: int = 0
    roots: int = 0
    launcher: int = 0
    problems: int = 0

    @staticmethod
    def counts(run: Run) -> tuple[int, int, int, int, int]:
        """What one run adds: units, units lost, root faults, launcher failures, problems."""
        return (len(run.units), sum(1 for u in run.units if u.status != "ok"), len(run.roots), len(run.launcher),
                len(run.problems))

    def add(self, run: Run) -> None:
        self.add_counts(self.counts(run))

    def add_counts(self, counts: tuple[int, ...]) -> None:
        units, lost, roots, launcher, problems = counts
        self.runs += 1
        self.units += units
        self.lost += lost
        self.roots += roots
        self.launcher += launcher
        self.problems += problems

    def line(self) -> str:
        parts = [f"{self.lost}/{self.units} units lost", f"{self.roots} root fault{'s' if self.roots != 1 else ''}"]
        if self.launcher:
            parts.append(f"{self.launcher} launcher failure{'s' if self.launcher != 1 else ''}")
        if self.problems:
            parts.append(f"{self.problems} problem{'s' if self.problems != 1 else ''}")
        return f"total: {self.runs} runs, " + ", ".join(parts)


class RunsText:
    """Renders runs one by one (a fleet's worth streams in flat memory) and totals them at the end."""

    def __init__(self, paint: Paint | None = None, cols: int | None = None) -> None:
        self.paint = paint or Paint(False)
        self.cols = cols or width()
        self.totals = Totals()

    def total(self) -> list[str]:
        """The total line across runs; nothing for a single run (its headline says it all)."""
        return [self.paint(self.totals.line(), "1")] if self.totals.runs > 1 else []

    def run(self, run: Run) -> Iterator[str]:
        p = self.paint
        self.totals.add(run)
        yield f"{p(run.run, '1')}: {run.summary}"
        for s in run.systematic:
            label = s.family if s.fingerprint is None else f"unknown failure {s.fingerprint}"
            yield f"  systematic: {label} struck {s.workers} of {run.workers} workers separately"
        if run.roots:
            yield from self._roots(run)
            yield from requeue(run, self.cols)
        for item in run.launcher:
            yield from wrap(clip_evidence(item), "  ", "launcher: ", self.cols)
        if run.problems:
            yield "  problems:"
            for prob in run.problems:
                yield f"    - {prob}"

    def _roots(self, run: Run) -> Iterator[str]:
        p = self.paint
        dated = spans_days(run)
        unit_label = SINGULAR.get(run.noun, "unit").upper()
        rows = [(str(r.worker) if r.worker is not None else "?", r.unit, when(r.time, dated), r.family, took(r, run.noun))
                for r in run.roots]
        heads = ("WORKER", unit_label, "DATE TIME" if dated else "TIME", "ROOT FAULT", "LOST")
        w = [max(len(heads[i]), *(len(row[i]) for row in rows)) for i in range(4)]
        yield p("  " + "  ".join(h.ljust(w[i]) for i, h in enumerate(heads[:4])) + "  " + heads[4], "2")
        pad = "  " + " " * (w[0] + 2)
        told: set[str] = set()
        said: set[str] = set()
        for r, row in zip(run.roots, rows):
            fam = p(row[3].ljust(w[3]), "1;33" if r.family == "unknown" else "1;31")
            yield f"  {row[0].ljust(w[0])}  {row[1].ljust(w[1])}  {row[2].ljust(w[2])}  {fam}  {row[4]}"
            if r.family not in told or r.family == "unknown":
                told.add(r.family)
                yield from advice(r, pad, p, self.cols, said)
            else:
                yield from own_notes(r, said, pad, self.cols)


def render(runs: Sequence[Run], paint: Paint | None = None) -> Iterator[str]:
    """The whole text for a batch of runs."""
    out = RunsText(paint)
    for run in runs:
        yield from out.run(run)
    yield from out.total()
