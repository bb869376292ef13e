"""`sigclass ledger supersede OLD --by NEW --note TEXT`: write a confirmed red herring into the ledger files.

OLD gets a `superseded_by: NEW` link and a red-herring caveat, NEW a
`supersedes: OLD` link, both with the note. The pack of an installed package
is never edited in place: the edit goes to a copy in the user's signature
folder (`sigclass.folders.user_ledger_dir`), read after the shipped pack. The
files are edited as text
(comments, order and the rest of the layout stay as they are): the key's
block is rewritten, or added before `references:`. Each edited file is parsed
again before it replaces the old one, so a write never leaves a broken
signature; writing the same link twice changes nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from sigclass.errors import InputError, SignatureError
from sigclass.ledger.parse import parse_signature


def _block(text: str, key: str) -> tuple[int, int] | None:
    """(start, end) of a top-level key's block: its line and the indented or list lines under it."""
    m = re.search(rf"^{re.escape(key)}:.*\n?", text, re.M)
    if m is None:
        return None
    end = m.end()
    for line in re.finditer(r"^.*\n?", text[end:], re.M):
        s = line.group(0)
        if not s or not (s.startswith((" ", "-", "\t")) or not s.strip()):
            break
        end += len(s)
    return m.start(), end


def _dump(key: str, items: list) -> str:
    body = yaml.safe_dump(items, sort_keys=False, allow_unicode=True, width=1 << 20, default_flow_style=False)
    return f"{key}:\n" + "".join(f"  {ln}\n" for ln in body.splitlines())


def _set(text: str, key: str, items: list) -> str:
    new = _dump(key, items)
    span = _block(text, key)
    if span is not None:
        return text[:span[0]] + new + text[span[1]:]
    ref = _block(text, "references")
    at = ref[0] if ref is not None else len(text)
    if at == len(text) and text and not text.endswith("\n"):
        text += "\n"
    return text[:at] + new + text[at:]


def _append(text: str, key: str, items: list, item: object) -> str:
    """Add one item at the end of a top-level list, leaving the items already there as they are written."""
    span = _block(text, key)
    if span is None or not items:
        return _set(text, key, [*items, item])
    block = text[span[0]:span[1]]
    while block.endswith("\n\n"):
        block = block[:-1]
    end = span[0] + len(block)
    if not block.endswith("\n"):
        text, end = text[:end] + "\n" + text[end:], end + 1
    return text[:end] + _dump(key, [item]).split("\n", 1)[1] + text[end:]


def _links(raw: dict, key: str) -> list:
    out = []
    for item in raw.get(key) or []:
        out.append({"id": item, "note": ""} if isinstance(item, str) else dict(item))
    return out


def _write(path: Path, text: str) -> None:
    parse_signature(text, str(path))  # raises SignatureError: nothing is written
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write ({exc.strerror or exc}); check the file's permissions") from None


def installed(path: Path) -> bool:
    """Whether a signature file belongs to an installed package (never edited in place) rather than a checkout."""
    return any(part in ("site-packages", "dist-packages") for part in path.resolve().parts)


def target_file(source: Path) -> Path:
    """Where an edit of this signature file goes: the file itself in a checkout or a user's own pack; for the
    pack of an installed package, a copy in the user's signature folder, which `load_ledger` reads after it."""
    if not installed(source):
        return source
    from sigclass.folders import user_ledger_dir

    folder = user_ledger_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{folder}: cannot create the user's signature folder ({exc.strerror or exc}); "
                         f"set SIGCLASS_DATA_DIR to a writable folder") from None
    return folder / source.name


def supersede(ledger, old: str, new: str, note: str) -> list[Path]:
    """Link OLD -> NEW in both files with NOTE and add the red-herring caveat to OLD; the files changed."""
    for fid in (old, new):
        if fid not in ledger:
            raise InputError(f"no family {fid!r} in the ledger; `sigclass ledger list` shows the ids")
    if old == new:
        raise InputError("a family cannot supersede itself; name two different families")
    note = " ".join(note.split())
    if not note:
        raise InputError("--note is empty; say what the evidence showed (which probe, which runs)")
    changed: list[Path] = []
    o, n = ledger[old], ledger[new]
    caveat = f"Red herring here: {note} Superseded by {new}."
    edits = [(o, "superseded_by", new), (n, "supersedes", old)]
    for sig, key, other in edits:
        source = Path(sig.path)
        path = target_file(source)
        try:
            text = (path if path.exists() else source).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
        before = text
        links = _links(sig.raw, key)
        if any(x.get("id") == other for x in links):
            continue  # linked before: its note and caveat stay as written then
        text = _set(text, key, [*links, {"id": other, "note": note}])
        if sig is o:
            text = _append(text, "caveats", list(sig.raw.get("caveats") or []), caveat)
        if text != before:
            try:
                _write(path, text)
            except SignatureError as exc:
                raise InputError(f"{path}: the edit would break the signature ({exc}); nothing was written") from None
            changed.append(path)
    return changed
