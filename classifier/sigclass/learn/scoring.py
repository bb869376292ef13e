"""Scoring a labelled folder (`<label>/<file>` + index.jsonl) the way the shared contract does.

The answer for a file is the family of its first finding whose role is not
`secondary`; a `clean` file must yield no finding at all; an `unknown` one
must yield `unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
from pathlib import Path

from sigclass.authoring.examples import first_root_family


@dataclass(frozen=True)
class Scored:
    file: str
    label: str
    got: str | None
    ok: bool


def labelled_files(root: str | Path) -> list[tuple[Path, str]]:
    root = Path(root)
    index = root / "index.jsonl"
    out: list[tuple[Path, str]] = []
    if index.exists():
        for line in index.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out.append((root / rec["file"], rec["family"]))
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        out.extend((f, d.name) for f in sorted(d.iterdir()) if f.is_file())
    return out


def score(scanner, root: str | Path) -> list[Scored]:
    rows = []
    for path, label in labelled_files(root):
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
