"""The gotcha ledger: loading, validating and compiling signature files.

One YAML file per family (file stem == id). Parsing goes through a strict
loader that rejects duplicate keys and remembers the line of every key, so
every error reads ``file:line: what is wrong``. See docs/ledger.md.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
import stat
from typing import Iterable
import warnings

from sigclass.errors import Problem, SignatureError
from sigclass.ledger import yaml_cache
from sigclass.ledger.parse import parse_signature
from sigclass.ledger.patterns import validated_cache, Pattern
from sigclass.ledger.signature import replace_fields, Signature


def shipped_dir() -> Path:
    """The signature pack installed with the package (in a checkout, the top-level signatures/ the package links to)."""
    from sigclass.folders import package_dir

    return package_dir("signatures").resolve()


class Ledger:
    """All signatures, with a global pattern table for the prefilter."""

    def __init__(self, signatures: Iterable[Signature], problems: Iterable[Problem] = ()) -> None:
        self.signatures: dict[str, Signature] = {}
        for sig in signatures:
            self.signatures[sig.id] = sig
        self.problems: list[Problem] = list(problems)
        self.patterns: list[Pattern] = []
        for sig in self.signatures.values():
            if not sig.active:
                continue
            for p in (*sig.any, *sig.facts):
                self.patterns.append(p)
        self.hash = hashlib.sha256(
            "\n".join(f"{s.path}\0{s.raw!r}" for s in sorted(self.signatures.values(), key=lambda s: s.id)).encode()
        ).hexdigest()[:16]

    def __contains__(self, fid: str) -> bool:
        return fid in self.signatures

    def __getitem__(self, fid: str) -> Signature:
        return self.signatures[fid]

    def __iter__(self):
        return iter(sorted(self.signatures.values(), key=lambda s: s.id))

    def __len__(self) -> int:
        return len(self.signatures)


def sig_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("_"))
    return [path]


MAX_SIGNATURE_BYTES = 1 << 20  # one signature file; the shipped ones are a few KiB


def read_signature_file(path: Path) -> str:
    """The text of one signature file. A file over MAX_SIGNATURE_BYTES, or one that is not a regular file,
    is refused before it is parsed (or, for a pipe or a device, opened)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise SignatureError(Problem(f"{path}:1", "not a regular file (a pipe or a device is never read as a "
                                                  "signature)"))
    with open(path, "rb") as fh:
        data = fh.read(MAX_SIGNATURE_BYTES + 1)
    if len(data) > MAX_SIGNATURE_BYTES:
        raise SignatureError(Problem(f"{path}:1", f"the file is over {MAX_SIGNATURE_BYTES >> 20} MiB, too large "
                                                  "for one signature; keep one signature per file and its "
                                                  "examples in a .log beside it"))
    return data.decode("utf-8")


def load_ledger(extra: Iterable[str | Path] = (), *, shipped: bool = True, strict: bool = False,
                user: bool = True) -> Ledger:
    """Load the shipped pack, the user's own edits of it (`sigclass.folders.user_ledger_dir`, with the shipped
    pack unless ``user=False``), then each extra file or folder (later ones override by id).

    A file that does not parse is left out and reported in ``ledger.problems``
    (``strict=True`` raises instead), so one bad user file never stops a scan.
    """
    sources: list[Path] = []
    if shipped:
        sources.extend(sig_files(shipped_dir()))
        if user:
            from sigclass.folders import user_ledger_dir

            mine = user_ledger_dir()
            if mine.is_dir():
                sources.extend(sig_files(mine))
    for item in extra:
        p = Path(item)
        if not p.exists():
            problem = Problem(str(p), "ledger path does not exist; name a .yaml file or a folder of them")
            if strict:
                raise SignatureError(problem)
            warnings.warn(str(problem), stacklevel=2)
            continue
        sources.extend(sig_files(p))
    sigs: dict[str, Signature] = {}
    problems: list[Problem] = []
    for path in sources:
        try:
            text = read_signature_file(path)
            sig = parse_signature(text, str(path))
        except (OSError, UnicodeDecodeError) as exc:
            problem = Problem(f"{path}:1", f"cannot read signature file: {exc}")
            if strict:
                raise SignatureError(problem) from None
            problems.append(problem)
            continue
        except SignatureError as exc:
            if strict:
                raise
            problems.extend(exc.problems)
            continue
        sigs[sig.id] = sig
    # renumber pattern indices so they are unique across files
    renumbered: list[Signature] = []
    idx = 0
    for sig in sigs.values():
        fields = {}
        for kind in ("any", "all", "none", "multiline", "facts"):
            pats = []
            for p in getattr(sig, kind):
                pats.append(p.renumbered(idx))
                idx += 1
            fields[kind] = tuple(pats)
        renumbered.append(replace_fields(sig, **fields))
    validated_cache().save()
    yaml_cache.save()
    return Ledger(renumbered, problems)
