"""The gotcha ledger: loading, validating and compiling signature files.

One YAML file per family (file stem == id). Parsing goes through a strict
loader that rejects duplicate keys and remembers the line of every key, so
every error reads ``file:line: what is wrong``. See docs/ledger.md.
"""

from __future__ import annotations

import hashlib
import os
import importlib.resources
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import regex
import yaml

from sigclass.errors import SignatureError

ROLES = ("root", "secondary")
STATUSES = ("active", "red-herring", "retired")
MATCH_TIMEOUT = 0.25  # seconds a single regex match may take before it is abandoned

_TOP_KEYS = {
    "id", "title", "role", "status", "priority", "match", "facts", "conditions",
    "mitigation", "probes", "caveats", "supersedes", "superseded_by", "references",
    "min_count", "examples", "tags",
}
_MATCH_KEYS = {"any", "all", "none", "multiline"}


# --------------------------------------------------------------------------- YAML

_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Base):  # type: ignore[misc,valid-type]
    """SafeLoader (the C one where available) that refuses duplicate keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _line_map(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Map each key path (('match', 'any', 0), ...) to its 1-based line."""
    out = {} if out is None else out
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            out[path + (key,)] = k.start_mark.line + 1
            _line_map(v, path + (key,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _line_map(v, path + (i,), out)
    return out


def _load_yaml(text: str, name: str) -> tuple[Any, dict[tuple, int]]:
    try:
        node = yaml.compose(text, Loader=_StrictLoader)
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise SignatureError(f"{name}:{line}: YAML error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise SignatureError(f"{name}:1: YAML error: {exc}") from None
    return data, (_line_map(node) if node is not None else {})


# --------------------------------------------------------------------------- model

class Pattern:
    """One regex of a signature, with where it came from. Compiled on first use: every pattern is
    validated at load (or was, by this regex version, on an earlier load: see `_Validated`)."""

    __slots__ = ("index", "family", "kind", "source", "location", "fact", "min_count", "_rx")

    def __init__(self, index: int, family: str, kind: str, source: str, compiled: Any, location: str,
                 fact: str | None = None, min_count: int = 1) -> None:
        self.index = index  # global index across the ledger (prefilter id)
        self.family = family
        self.kind = kind  # any | all | none | multiline | fact
        self.source = source  # the regex text
        self.location = location  # file:line
        self.fact = fact
        self.min_count = min_count  # >1: lines matching it are counted per source and worker, not blocks
        self._rx = compiled

    @property
    def compiled(self) -> Any:
        rx = self._rx
        if rx is None:
            rx = self._rx = regex.compile(self.source, regex.V0)
        return rx

    def renumbered(self, index: int) -> "Pattern":
        return Pattern(index, self.family, self.kind, self.source, self._rx, self.location, self.fact, self.min_count)

    def __repr__(self) -> str:
        return f"Pattern({self.index}, {self.family!r}, {self.kind!r}, {self.source!r})"


class _Validated:
    """Pattern texts this regex version has already compiled and checked (a cache file of their hashes),
    so that loading a known pack skips ~300 compiles; a new or edited pattern is compiled at load."""

    def __init__(self) -> None:
        self.known: set[str] = set()
        self.new: set[str] = set()
        self.path = None
        try:
            from sigclass.scan.prefilter import _cache_dir

            d = _cache_dir()
            if d is not None:
                self.path = d / f"validated-regex-{regex.__version__}.txt"
                self.known = set(self.path.read_text(encoding="ascii").split())
        except (OSError, UnicodeDecodeError, AttributeError):
            self.known = set()

    @staticmethod
    def key(src: str) -> str:
        return hashlib.sha256(src.encode("utf-8", "surrogatepass")).hexdigest()[:24]

    def save(self) -> None:
        if not self.new or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text("\n".join(sorted(self.known | self.new)) + "\n", encoding="ascii")
            os.replace(tmp, self.path)
        except OSError:
            pass


_VALIDATED: _Validated | None = None


def _validated() -> _Validated:
    global _VALIDATED
    if _VALIDATED is None:
        _VALIDATED = _Validated()
    return _VALIDATED


@dataclass(frozen=True)
class Supersede:
    id: str
    note: str


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    role: str
    status: str
    priority: int
    any: tuple[Pattern, ...]
    all: tuple[Pattern, ...]
    none: tuple[Pattern, ...]
    multiline: tuple[Pattern, ...]
    facts: tuple[Pattern, ...]
    require: tuple[tuple[str, Any], ...]
    prefer: tuple[tuple[str, Any], ...]
    mitigation: str
    probes: tuple[str, ...]
    caveats: tuple[str, ...]
    supersedes: tuple[Supersede, ...]
    superseded_by: tuple[Supersede, ...]
    references: tuple[str, ...]
    min_count: int
    path: str
    line_of: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    raw: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def active(self) -> bool:
        return self.status != "retired"

    def location(self, *key: Any) -> str:
        return f"{self.path}:{self.line_of.get(tuple(key), self.line_of.get((), 1))}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "role": self.role,
            "status": self.status,
            "priority": self.priority,
            "match": {
                "any": [p.source for p in self.any],
                "all": [p.source for p in self.all],
                "none": [p.source for p in self.none],
                "multiline": [p.source for p in self.multiline],
            },
            "min_count": self.min_count,
            "pattern_min_count": {p.source: p.min_count for p in self.any if p.min_count > 1},
            "facts": [{"name": p.fact, "pattern": p.source} for p in self.facts],
            "conditions": {
                "require": {k: v.pattern for k, v in self.require},
                "prefer": {k: v.pattern for k, v in self.prefer},
            },
            "mitigation": self.mitigation,
            "probes": list(self.probes),
            "caveats": list(self.caveats),
            "supersedes": [{"id": s.id, "note": s.note} for s in self.supersedes],
            "superseded_by": [{"id": s.id, "note": s.note} for s in self.superseded_by],
            "references": list(self.references),
            "path": self.path,
        }


class _Collector:
    """Gathers errors while parsing one file so that all of them are reported."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.errors.append(f"{where}: {what}")


def _str_list(value: Any, where: str, errs: _Collector, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errs.add(where, f"{what} must be a list of strings")
        return []
    return list(value)


_OK = object()  # a pattern validated on an earlier load: compiled on first use


def _compile(src: str, where: str, errs: _Collector, *, fact: str | None = None) -> Any:
    """Validate a pattern: it compiles, does not match the empty string, and a fact pattern has its named
    group. Returns the compiled regex, _OK for a pattern known valid from an earlier load, or None."""
    cache = _validated()
    key = cache.key(src)
    if key in cache.known:
        return _OK
    try:
        rx = regex.compile(src, regex.V0)
    except regex.error as exc:
        errs.add(where, f"regex does not compile: {exc} in {src!r}")
        return None
    try:
        if rx.search("", timeout=MATCH_TIMEOUT) is not None:
            errs.add(where, f"pattern matches the empty string: {src!r}")
            return None
    except TimeoutError:
        pass
    if fact is not None and fact not in rx.groupindex:
        errs.add(where, f"fact pattern needs a named group (?P<{fact}>...)")
        return None
    cache.new.add(key)
    return rx


def parse_signature(text: str, path: str, start_index: int = 0) -> Signature:
    """Parse one signature file's text. Raises SignatureError listing every problem."""
    data, lines = _load_yaml(text, path)
    errs = _Collector()

    def at(*key: Any) -> str:
        k = tuple(key)
        while k and k not in lines:
            k = k[:-1]
        return f"{path}:{lines.get(k, 1)}"

    if not isinstance(data, dict):
        raise SignatureError(f"{path}:1: a signature file must be a mapping with id, title, role, match, ...")
    for key in data:
        if key not in _TOP_KEYS:
            errs.add(at(key), f"unknown key {key!r} (known: {', '.join(sorted(_TOP_KEYS))})")
    stem = Path(path).stem
    sid = data.get("id")
    if not isinstance(sid, str) or not sid:
        errs.add(at("id"), "id is missing")
        sid = stem
    elif sid != stem:
        errs.add(at("id"), f"id {sid!r} differs from the file stem {stem!r}")
    if not regex.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", sid or ""):
        errs.add(at("id"), f"id {sid!r} is not kebab-case")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        errs.add(at("title"), "title is missing")
        title = sid
    role = data.get("role")
    if role not in ROLES:
        errs.add(at("role"), f"role must be one of {', '.join(ROLES)}, not {role!r}")
        role = "root"
    status = data.get("status", "active")
    if status not in STATUSES:
        errs.add(at("status"), f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        status = "active"
    priority = data.get("priority", 50)
    if not isinstance(priority, int) or isinstance(priority, bool):
        errs.add(at("priority"), "priority must be an integer")
        priority = 50
    min_count = data.get("min_count", 1)
    if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
        errs.add(at("min_count"), "min_count must be a positive integer")
        min_count = 1

    idx = start_index
    pats: dict[str, list[Pattern]] = {k: [] for k in _MATCH_KEYS}
    match = data.get("match")
    if not isinstance(match, dict):
        errs.add(at("match"), "match is missing: it needs at least one pattern under match.any")
        match = {}
    for key in match:
        if key not in _MATCH_KEYS:
            errs.add(at("match", key), f"unknown key match.{key} (known: any, all, none, multiline)")
    for kind in ("any", "all", "none", "multiline"):
        items = match.get(kind)
        counts: dict[int, int] = {}
        if kind == "any" and isinstance(items, list):
            # an `any` entry may be {pattern: REGEX, min_count: N}: a line that only counts once N are seen
            flat = []
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    n = item.get("min_count", 1)
                    if set(item) - {"pattern", "min_count"} or not isinstance(item.get("pattern"), str) \
                            or not isinstance(n, int) or isinstance(n, bool) or n < 1:
                        errs.add(at("match", kind, i), "a counted pattern is {pattern: REGEX, min_count: N} with N >= 1")
                        continue
                    counts[len(flat)] = n
                    flat.append(item["pattern"])
                else:
                    flat.append(item)
            items = flat
        for i, src in enumerate(_str_list(items, at("match", kind), errs, f"match.{kind}")):
            rx = _compile(src, at("match", kind, i), errs)
            if rx is not None:
                pats[kind].append(Pattern(idx, sid, kind, src, None if rx is _OK else rx, at("match", kind, i),
                                          min_count=counts.get(i, 1)))
                idx += 1
    if not pats["any"] and not pats["multiline"]:
        errs.add(at("match"), "match.any needs at least one pattern")

    facts: list[Pattern] = []
    for i, fact in enumerate(data.get("facts") or []):
        if not isinstance(fact, dict) or not isinstance(fact.get("name"), str) or not isinstance(fact.get("pattern"), str):
            errs.add(at("facts", i), "a fact needs a name and a pattern")
            continue
        rx = _compile(fact["pattern"], at("facts", i, "pattern"), errs, fact=fact["name"])
        if rx is None:
            continue
        facts.append(Pattern(idx, sid, "fact", fact["pattern"], None if rx is _OK else rx, at("facts", i),
                             fact=fact["name"]))
        idx += 1

    conds = data.get("conditions") or {}
    require: list[tuple[str, Any]] = []
    prefer: list[tuple[str, Any]] = []
    if not isinstance(conds, dict):
        errs.add(at("conditions"), "conditions must be a mapping with require/prefer")
        conds = {}
    for key in conds:
        if key not in ("require", "prefer"):
            errs.add(at("conditions", key), f"unknown key conditions.{key} (known: require, prefer)")
    for kind, out in (("require", require), ("prefer", prefer)):
        block = conds.get(kind) or {}
        if not isinstance(block, dict):
            errs.add(at("conditions", kind), f"conditions.{kind} must map fact names to regexes")
            continue
        for name, src in block.items():
            if not isinstance(src, str):
                errs.add(at("conditions", kind, name), "a condition must be a regex string")
                continue
            try:
                out.append((str(name), regex.compile(src)))
            except regex.error as exc:
                errs.add(at("conditions", kind, name), f"regex does not compile: {exc}")

    mitigation = data.get("mitigation", "")
    if not isinstance(mitigation, str) or not mitigation.strip():
        errs.add(at("mitigation"), "mitigation is missing: say what to do")
        mitigation = ""

    def supers(key: str) -> tuple[Supersede, ...]:
        out = []
        for i, item in enumerate(data.get(key) or []):
            if isinstance(item, str):
                out.append(Supersede(item, ""))
            elif isinstance(item, dict) and isinstance(item.get("id"), str):
                out.append(Supersede(item["id"], str(item.get("note", ""))))
            else:
                errs.add(at(key, i), f"{key} entries need an id (and a note)")
        return tuple(out)

    sig = Signature(
        id=sid,
        title=title.strip(),
        role=role,
        status=status,
        priority=priority,
        any=tuple(pats["any"]),
        all=tuple(pats["all"]),
        none=tuple(pats["none"]),
        multiline=tuple(pats["multiline"]),
        facts=tuple(facts),
        require=tuple(require),
        prefer=tuple(prefer),
        mitigation=mitigation.strip(),
        probes=tuple(_str_list(data.get("probes"), at("probes"), errs, "probes")),
        caveats=tuple(_str_list(data.get("caveats"), at("caveats"), errs, "caveats")),
        supersedes=supers("supersedes"),
        superseded_by=supers("superseded_by"),
        references=tuple(_str_list(data.get("references"), at("references"), errs, "references")),
        min_count=min_count,
        path=path,
        line_of=lines,
        raw=data,
    )
    if errs.errors:
        raise SignatureError("\n".join(errs.errors))
    return sig


# --------------------------------------------------------------------------- ledger

def shipped_dir() -> Path:
    """The signature pack installed with the package."""
    return Path(str(importlib.resources.files("sigclass.signatures")))


class Ledger:
    """All signatures, with a global pattern table for the prefilter."""

    def __init__(self, signatures: Iterable[Signature], problems: Iterable[str] = ()) -> None:
        self.signatures: dict[str, Signature] = {}
        for sig in signatures:
            self.signatures[sig.id] = sig
        self.problems: list[str] = list(problems)
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


def _sig_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("_"))
    return [path]


def load_ledger(extra: Iterable[str | Path] = (), *, shipped: bool = True, strict: bool = False) -> Ledger:
    """Load the shipped pack, then each extra file or folder (later ones override by id).

    A file that does not parse is left out and reported in ``ledger.problems``
    (``strict=True`` raises instead), so one bad user file never stops a scan.
    """
    sources: list[Path] = []
    if shipped:
        sources.extend(_sig_files(shipped_dir()))
    for item in extra:
        p = Path(item)
        if not p.exists():
            msg = f"{p}: ledger path does not exist; name a .yaml file or a folder of them"
            if strict:
                raise SignatureError(msg)
            warnings.warn(msg, stacklevel=2)
            continue
        sources.extend(_sig_files(p))
    sigs: dict[str, Signature] = {}
    problems: list[str] = []
    for path in sources:
        try:
            text = path.read_text(encoding="utf-8")
            sig = parse_signature(text, str(path))
        except (OSError, UnicodeDecodeError) as exc:
            msg = f"{path}:1: cannot read signature file: {exc}"
            if strict:
                raise SignatureError(msg) from None
            problems.append(msg)
            continue
        except SignatureError as exc:
            if strict:
                raise
            problems.extend(str(exc).splitlines())
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
        renumbered.append(_replace(sig, **fields))
    _validated().save()
    return Ledger(renumbered, problems)


def _replace(sig: Signature, **changes: Any) -> Signature:
    import dataclasses

    return dataclasses.replace(sig, **changes)
