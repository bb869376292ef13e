"""A run rendered where it is assembled: what `sigclass runs` prints for it, plus a few flags and counts.

With `-j N` or `--dask`, a worker that assembles a run also renders it
(`Render`), so what travels back to the command is a few strings and numbers
(`Rendered`, a plain tuple) instead of the whole `Run` with its findings and
facts, and the command's own work per run is writing lines. The text and
JSON lines are exactly those the command would make from the `Run` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
from typing import NamedTuple

from sigclass.outputs.colour import Paint
from sigclass.outputs.runs_text import RunsText, Totals
from sigclass.records import Run
from sigclass.text.safe import visible


class Rendered(NamedTuple):
    """One run as the command needs it: the lines to print and what its exit status and total need."""

    run: str
    lines: tuple[str, ...]
    readable: bool
    failed: bool
    problems: tuple[str, ...]  # plain strings (a ProblemLine's text)
    counts: tuple[int, ...]  # Totals.counts(run): what the text total line adds up


@dataclass(frozen=True)
class Render:
    """Renders a run as `text` (coloured or not, for a width) or as one JSON line (`jsonl`); picklable."""

    fmt: str
    colour: bool = False
    cols: int = 80

    def __call__(self, run: Run) -> Rendered:
        if self.fmt == "text":
            lines = tuple(visible(line) for line in RunsText(Paint(self.colour), self.cols).run(run))
        elif self.fmt == "jsonl":
            lines = (json.dumps(run.to_dict(), ensure_ascii=False),)
        else:
            raise ValueError(f"cannot render runs as {self.fmt!r} one by one")
        return Rendered(run.run, lines, run.readable, run.failed, tuple(str(p) for p in run.problems),
                        Totals.counts(run))
