"""Training data: a corpus laid out as ``<dir>/<label>/<name>.log``, each file scanned with the same `Scanner`
that runs at inference time, so training and inference see the same text (see `collect`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import hashlib
from pathlib import Path
import re
from typing import Iterable, Sequence
import warnings

import numpy as np

from sigclass.errors import ModelError
from sigclass.learn.blocktext import ABSTAIN, block_input
from sigclass.text.lines import split_line


LATER_WEIGHT = 0.5  # weight of a later block that the regex ledger attributes to a family

_LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".jsonl", ".log.gz", ".log.zst")


@dataclass
class CorpusFile:
    path: Path
    label: str
    blocks: list[str] = field(default_factory=list)  # every block the learned path sees, in order
    regex: list[str | None] = field(default_factory=list)  # the family the regex ledger gives each block
    group: str = ""  # files of one group (a real corpus's `thread`) never straddle cross-validation folds
    source: str = "real"  # real (a file with a thread), written (a corpus file without one), example (a ledger's)


SPLITS = ("train", "heldout", "all")


def index_entries(root: str | Path) -> list[dict] | None:
    """The records of ``<root>/index.jsonl`` (one object per file: file, family, optional split ...), or None."""
    import json

    index = Path(root) / "index.jsonl"
    if not index.is_file():
        return None
    out: list[dict] = []
    for n, line in enumerate(index.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            rec["file"], rec["family"]
        except (ValueError, KeyError, TypeError):
            raise ModelError(f"{index}:{n}: not an index record (a JSON object with 'file' and 'family')") from None
        out.append(rec)
    return out


def corpus_files(dirs: Iterable[str | Path], *, split: str = "train") -> list[tuple[Path, str]]:
    """Labelled files of corpus folders: those an ``index.jsonl`` lists, else ``<dir>/<label>/<name>.log``.

    ``split`` picks the files whose index record has that split (``train`` also takes records without one;
    ``all`` takes every file): the held-out part of a corpus never reaches training.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    out: list[tuple[Path, str]] = []
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise ModelError(f"{d}: corpus folder does not exist; name a folder laid out as <label>/<name>.log")
        entries = index_entries(d)
        if entries is not None:
            for rec in entries:
                if split == "all" or rec.get("split", "train") == split:
                    out.append((d / rec["file"], rec["family"]))
            continue
        if split == "heldout":
            continue
        for sub in sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
                          and p.name != "phrasings"):  # `sigclass.learn.examples.PHRASINGS`: extra text, no label
            for f in sorted(sub.iterdir()):
                if f.is_file() and f.name.endswith(_LOG_SUFFIXES):
                    out.append((f, sub.name))
    return out


def corpus_hash(files: Sequence[tuple[Path, str]]) -> str:
    h = hashlib.sha256()
    for path, label in sorted(files, key=lambda t: (t[1], t[0].name, str(t[0]))):
        h.update(f"{label}/{path.name}\0".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def ledger_hash(ledger) -> str:
    """A content hash of the ledger that does not depend on where it is installed."""
    import json

    h = hashlib.sha256()
    for sig in ledger:
        h.update(sig.id.encode() + b"\0" + json.dumps(sig.raw, sort_keys=True, default=str).encode() + b"\n")
    return h.hexdigest()[:16]


def _keys(block: Sequence[str]) -> tuple[str, str]:
    """A finding's block as the learned path saw it (counted evidence keeps its log headers; the learned path not)."""
    return "\n".join(block), "\n".join(split_line(x).body for x in block)


def file_groups(files: Sequence[tuple[Path, str]]) -> list[str]:
    """Each file's cross-validation group: its index record's ``thread`` when it has one, else the file itself."""
    threads: dict[Path, dict[str, str]] = {}
    out: list[str] = []
    for path, _ in files:
        root = Path(path).parent.parent
        if root not in threads:
            threads[root] = {str(root / r["file"]): str(r["thread"]) for r in index_entries(root) or [] if r.get("thread")}
        out.append(threads[root].get(str(path)) or f"file:{path}")
    return out


# a thread on a code host: its repository is the project (github.com/<owner>/<name>/issues/N)
_REPO = re.compile(r"^https?://(?:www\.)?(?:github|gitlab)\.com/([^/]+/[^/#?]+)", re.IGNORECASE)
_HOST = re.compile(r"^[a-z]+://([^/]+)", re.IGNORECASE)
GROUPINGS = ("thread", "project")


def project_of(group: str) -> str:
    """The project a cross-validation group belongs to: the repository of a thread on a code host, the site of
    another thread, the group itself for a file without a thread (`file_groups`)."""
    m = _REPO.match(group)
    if m:
        return m[1].lower().removesuffix(".git")
    m = _HOST.match(group)
    return m[1].lower() if m else group


def collect(files: Sequence[tuple[Path, str]], ledger,
            texts: Sequence[tuple[str, str, str]] = ()) -> list[CorpusFile]:
    """Scan each corpus file twice: learned mode (the blocks, in reported order) and regex mode (what the ledger says).

    ``texts`` are (name, label, text) documents scanned the same way (the ledger's examples and a corpus's
    phrasings, `sigclass.learn.examples`); they come after the files, with source `example` (`phrasing` for
    a name under `phrasings/`).
    The learned-mode recorder claims every block for a placeholder family so that the
    scanner reports each one as a finding, in the order (by start line) it reports findings.
    """
    from sigclass.scan.scanner import Scanner

    placeholder = next(iter(ledger)).id
    seen: dict[str, list[str]] = {}

    def recorder(bodies: list[str], facts: dict[str, str] | None = None) -> tuple[str, float]:
        seen.setdefault("\n".join(bodies), []).append(block_input(bodies, facts))
        return placeholder, 1.0

    recorder.wants_facts = True  # type: ignore[attr-defined]

    learn_sc = Scanner(ledger, signatures="learned", learned=recorder)
    regex_sc = Scanner(ledger, signatures="regex")

    def one(cf: CorpusFile, scan) -> CorpusFile:
        seen.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            order = scan(learn_sc).findings
            res = scan(regex_sc)
        plain: list[str] = []
        for f in order:
            for key in _keys(f.block):
                if seen.get(key):
                    plain.append(key)
                    cf.blocks.append(seen[key].pop(0))
                    break
        for key, rest in seen.items():
            plain.extend([key] * len(rest))
            cf.blocks.extend(rest)
        by_block: dict[str, str] = {}
        for f in [*res.findings, *res.quieted]:  # a block the ledger matched is the ledger's, even when quieted
            if f.method == "regex" and f.block:
                for key in _keys(f.block):
                    by_block.setdefault(key, f.family)
        cf.regex = [by_block.get(b) for b in plain]
        return cf

    out: list[CorpusFile] = []
    for (path, label), group in zip(files, file_groups(files)):
        cf = CorpusFile(path, label, group=group, source="written" if group.startswith("file:") else "real")
        out.append(one(cf, lambda sc, p=path: sc.scan(str(p))))
    for name, label, text in texts:
        cf = CorpusFile(Path(name), label, group=f"example:{name}",
                        source="phrasing" if name.startswith("phrasings/") else "example")
        out.append(one(cf, lambda sc, t=text, n=name: sc.scan_text(t, source=n)))
    return out


def training_rows(cf: CorpusFile) -> list[tuple[int, str, float]]:
    """(block index, label, weight) rows of one corpus file.

    A family file F: its target block (the first block the regex ledger calls F,
    else the first block) is F; a block before it is what the ledger calls it,
    else `unknown` (the model must stay quiet there); a later block counts only
    when the ledger attributes it to a family, at half weight. Clean files: every
    block is `clean`. Unknown files: every block is `unknown` unless the ledger
    attributes it to a secondary family's text.
    """
    rows: list[tuple[int, str, float]] = []
    if not cf.blocks:
        return rows
    if cf.label in ABSTAIN:
        for i, fam in enumerate(cf.regex):
            rows.append((i, cf.label if cf.label == "clean" or fam is None else fam, 1.0 if fam is None else LATER_WEIGHT))
        return rows
    target = next((i for i, fam in enumerate(cf.regex) if fam == cf.label), 0)
    for i, fam in enumerate(cf.regex):
        if i == target:
            rows.append((i, cf.label, 1.0))
        elif i < target:
            rows.append((i, fam or "unknown", LATER_WEIGHT))
        elif fam is not None:
            rows.append((i, fam, LATER_WEIGHT))
    return rows


def design(cfs: Sequence[CorpusFile], weights: dict[str, float] | None = None
           ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Training rows of the files: texts, labels, weights (times ``weights[cf.source]``, 1 if not named), files."""
    X, y, w, g = [], [], [], []
    for k, cf in enumerate(cfs):
        scale = (weights or {}).get(cf.source, 1.0)
        if scale <= 0:
            continue
        for i, label, weight in training_rows(cf):
            X.append(cf.blocks[i])
            y.append(label)
            w.append(weight * scale)
            g.append(k)
    return X, np.array(y, dtype=object), np.array(w), np.array(g)


def shipped_corpus() -> list[Path] | None:
    """The corpus parts of a source checkout (``corpus/written``, ``corpus/real``); an installed wheel ships none."""
    import sigclass

    root = Path(sigclass.__file__).resolve().parents[2]  # classifier/sigclass/__init__.py
    parts = [root / "corpus" / name for name in ("written", "real")]
    parts = [d for d in parts if d.is_dir()]
    return parts if parts and (root / "pyproject.toml").exists() else None
