"""Signature files already read once: their parsed YAML kept as JSON in the cache folder, keyed by a hash of
the file's text, so that loading a known pack imports no YAML parser and parses nothing.

The cache holds plain data only (JSON: no objects, no code), and an entry is used only for the exact text it
was made from. Values JSON cannot carry unchanged (dates, non-string keys) are never cached: such files are
parsed every time.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sigclass.folders import cache_dir, write_cache_file

FORMAT = 1
KEEP = 512  # entries kept (one per signature file text seen)


class _Cache:
    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}
        self.dirty = False
        self.path = None
        d = cache_dir()
        if d is None:
            return
        self.path = d / f"ledger-yaml-v{FORMAT}.json"
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(doc, dict) and doc.get("format") == FORMAT and isinstance(doc.get("entries"), dict):
                self.entries = doc["entries"]
        except (OSError, ValueError):
            self.entries = {}

    def save(self) -> None:
        if not self.dirty or self.path is None:
            return
        self.dirty = False
        keep = dict(list(self.entries.items())[-KEEP:])
        write_cache_file(self.path, json.dumps({"format": FORMAT, "entries": keep}))


_CACHE: _Cache | None = None


def _cache() -> _Cache:
    global _CACHE
    if _CACHE is None:
        _CACHE = _Cache()
    return _CACHE


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load_yaml(text: str, name: str) -> tuple[Any, dict[tuple, int]]:
    """`yaml_strict.load_yaml`, answered from the cache when this exact text was parsed before."""
    cache = _cache()
    key = _key(text)
    got = cache.entries.get(key)
    if isinstance(got, dict) and "data" in got and isinstance(got.get("lines"), list):
        try:
            return got["data"], {tuple(path): int(line) for path, line in got["lines"]}
        except (TypeError, ValueError):
            pass
    from sigclass.ledger.yaml_strict import load_yaml as parse  # raises SignatureError for a bad file

    data, lines = parse(text, name)
    entry = {"data": data, "lines": [[list(path), line] for path, line in lines.items()]}
    try:
        same = json.loads(json.dumps(entry)) == entry and all(
            type(x) in (str, int) for path, _ in entry["lines"] for x in path)
    except (TypeError, ValueError):
        same = False
    if same and _plain(data):
        cache.entries[key] = entry
        cache.dirty = True
    return data, lines


def _plain(v: Any) -> bool:
    """True for data JSON gives back with the same types (str keys, no tuples, dates or sets)."""
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return v is None or type(v) in (str, int, float, bool)


def save() -> None:
    """Write the entries made by this load (best effort: a read-only home just means parsing again)."""
    if _CACHE is not None:
        _CACHE.save()
