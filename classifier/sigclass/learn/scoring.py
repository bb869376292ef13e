"""Scoring a labelled folder (`<label>/<file>` + index.jsonl) the way the shared contract does, and scoring the
verdict's cause (family and worker) on the multi-worker entries of labelled real excerpts.

The answer for a file is the family of its first finding whose role is not
`secondary`; a `clean` file must yield no finding at all; an `unknown` one
must yield `unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass
import hashlib
from pathlib import Path
from typing import Iterable

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
            failures = [f for f in res.findings if f.status != "recovered"]  # what the run went on past is none
            ok = not failures
            got = got if failures else None
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


# --------------------------------------------------------------------------- attribution: the cause's family AND worker

HELD_OUT_BELOW = 77  # a thread is held out when the first byte of sha256(thread URL) is below this (~30%)


def held_out(thread: str) -> bool:
    """The split by thread (corpus/README.md): sha256(thread)[0] < 77 marks it held out."""
    return hashlib.sha256(thread.encode("utf-8")).digest()[0] < HELD_OUT_BELOW


def split_of(rec: dict) -> str:
    """An index record's split: its own `split`, else the one its thread's hash gives."""
    if rec.get("split") in ("train", "heldout"):
        return rec["split"]
    return "heldout" if held_out(rec.get("thread") or rec.get("source") or "") else "train"


@dataclass(frozen=True)
class Attributed:
    file: str
    label: str
    want_worker: str | None  # None: the labels do not say which worker (then the family alone is scored)
    got: str | None
    got_worker: str | None
    ok_family: bool
    ok: bool  # family and worker


def score_attribution(scanner, roots: Iterable[str | Path], *, split: str = "heldout") -> list[Attributed]:
    """The verdict's cause on the `multi: true` entries of labelled folders (index.jsonl with file, family,
    thread, multi, root_worker): right when the family is, and the worker too where the labels name one
    (ids compared normalised: 'rank3' == '[rank3]:' == '3'). `split` is `heldout`, `train` or `all`."""
    from sigclass.learn.corpus import SPLITS
    from sigclass.text.workers import norm_worker

    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    rows = []
    for root in roots:
        for rec in index_entries(root) or []:
            if not rec.get("multi") or (split != "all" and split_of(rec) != split):
                continue
            path = Path(root) / rec["file"]
            res = scanner.scan(str(path))
            cause = res.verdict.cause if res.verdict is not None else None
            label = rec["family"]
            got, got_w = (cause.family, cause.worker) if cause is not None else (None, None)
            ok_family = got is None if label == "clean" else got == label
            want_w = rec.get("root_worker")
            ok = ok_family and (want_w is None or norm_worker(want_w) == norm_worker(got_w))
            rows.append(Attributed(str(path), label, want_w, got, got_w, ok_family, ok))
    return rows


def main(argv: list[str] | None = None) -> int:
    """`python -m sigclass.learn.scoring [--split heldout|train|all] FOLDER...`: the verdict's cause on the
    multi-worker entries of labelled folders, one line per miss, then the accuracy."""
    import argparse

    from sigclass.ledger.pack import load_ledger
    from sigclass.scan.factory import build_scanner

    ap = argparse.ArgumentParser(prog="python -m sigclass.learn.scoring", description=main.__doc__)
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--split", default="heldout", choices=("heldout", "train", "all"))
    ap.add_argument("--signatures", default="both", choices=("regex", "learned", "both"))
    args = ap.parse_args(argv)
    rows = score_attribution(build_scanner(load_ledger(), args.signatures), args.folders, split=args.split)
    for r in rows:
        if not r.ok:
            print(f"miss  {r.label:28} worker {r.want_worker!s:14} got {r.got}/{r.got_worker}  {r.file}")
    fam = sum(r.ok_family for r in rows)
    print(f"{args.split}: {len(rows)} multi-worker files; cause family {fam}/{len(rows)}, "
          f"family and worker {sum(r.ok for r in rows)}/{len(rows)} ({accuracy(rows):.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
