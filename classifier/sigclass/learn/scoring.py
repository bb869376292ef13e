"""Scoring a labelled folder (`<label>/<file>` + index.jsonl) the way the shared contract does.

The answer for a file is the family of its first finding whose role is not
`secondary`; a `clean` file must yield no finding at all; an `unknown` one
must yield `unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sigclass.authoring.examples import first_root_family
from sigclass.learn.corpus import corpus_files, index_entries


@dataclass(frozen=True)
class Scored:
    file: str
    label: str
    got: str | None
    ok: bool


def labelled_files(root: str | Path, *, split: str = "all") -> list[tuple[Path, str]]:
    """The labelled files of a folder: those its ``index.jsonl`` lists (of ``split``), else ``<label>/<file>``."""
    return corpus_files([root], split=split)


def score(scanner, root: str | Path, *, split: str = "all") -> list[Scored]:
    rows = []
    for path, label in labelled_files(root, split=split):
        res = scanner.scan(str(path))
        got = first_root_family(res.findings)
        if label == "clean":
            ok = not res.findings
            got = got if res.findings else None
        else:
            ok = got == label
        rows.append(Scored(str(path), label, got, ok))
    return rows


def accuracy(rows: list[Scored]) -> float:
    return sum(r.ok for r in rows) / len(rows) if rows else 0.0


MODES = ("regex", "learned", "both")
KINDS = ("all", "known", "unknown", "clean", "no exception", "multi-worker")


def score_modes(ledger, root: str | Path, predictor=None, *, split: str = "all") -> dict[str, list[Scored]]:
    """`score` in each signature mode: regex alone, and, given a predictor, learned alone and both."""
    from sigclass.scan.scanner import Scanner

    out: dict[str, list[Scored]] = {}
    for mode in MODES:
        if mode != "regex" and predictor is None:
            continue
        if predictor is not None:
            predictor.set_mode(mode)
        out[mode] = score(Scanner(ledger, signatures=mode, learned=None if mode == "regex" else predictor), root,
                          split=split)
    return out


def _kinds(label: str, rec: dict) -> list[str]:
    kinds = ["all"]
    kinds.append(label if label in ("clean", "unknown") else "known")
    if rec.get("noexc") and label != "clean":
        kinds.append("no exception")
    if rec.get("multi"):
        kinds.append("multi-worker")
    return kinds


def breakdown(rows: list[Scored], root: str | Path) -> dict[str, dict[str, float]]:
    """Right answers per kind of file (all, known, unknown, clean, no exception, multi-worker)."""
    recs = {str(Path(root) / r["file"]): r for r in index_entries(root) or []}
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        for kind in _kinds(row.label, recs.get(row.file, {})):
            cell = out.setdefault(kind, {"right": 0, "files": 0})
            cell["right"] += row.ok
            cell["files"] += 1
    for cell in out.values():
        cell["accuracy"] = round(cell["right"] / cell["files"], 4)
    return out
