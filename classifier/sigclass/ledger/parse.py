"""Parsing one signature file into a `Signature`, collecting every error with its file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import regex

from sigclass.errors import Problem, SignatureError
from sigclass.ledger.overtime import parse_over_time
from sigclass.ledger.patterns import KNOWN_VALID, Collector, compile_condition, compile_pattern, Pattern
from sigclass.ledger.probes import parse_probes
from sigclass.ledger.signature import ROLES, Signature, STATUSES, Supersede
from sigclass.ledger.yaml_cache import load_yaml
from sigclass.vocab import Role, Status


_TOP_KEYS = {
    "id", "title", "role", "status", "priority", "match", "facts", "conditions",
    "mitigation", "probes", "caveats", "supersedes", "superseded_by", "references",
    "min_count", "examples", "tags", "over_time",
}


_MATCH_KEYS = {"any", "all", "none", "multiline"}


def str_list(value: Any, where: str, errs: Collector, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errs.add(where, f"{what} must be a list of strings")
        return []
    return list(value)


def parse_signature(text: str, path: str, start_index: int = 0) -> Signature:
    """Parse one signature file's text. Raises SignatureError listing every problem."""
    data, lines = load_yaml(text, path)
    errs = Collector()

    def at(*key: Any) -> str:
        k = tuple(key)
        while k and k not in lines:
            k = k[:-1]
        return f"{path}:{lines.get(k, 1)}"

    if not isinstance(data, dict):
        raise SignatureError(Problem(f"{path}:1", "a signature file must be a mapping with id, title, role, match, ..."))
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
        role = Role.ROOT
    role = Role(role)
    status = data.get("status", Status.ACTIVE)
    if status not in STATUSES:
        errs.add(at("status"), f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        status = Status.ACTIVE
    status = Status(status)
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
        for i, src in enumerate(str_list(items, at("match", kind), errs, f"match.{kind}")):
            rx = compile_pattern(src, at("match", kind, i), errs)
            if rx is not None:
                pats[kind].append(Pattern(idx, sid, kind, src, None if rx is KNOWN_VALID else rx, at("match", kind, i),
                                          min_count=counts.get(i, 1)))
                idx += 1
    if not pats["any"] and not pats["multiline"]:
        errs.add(at("match"), "match.any needs at least one pattern")

    facts: list[Pattern] = []
    for i, fact in enumerate(data.get("facts") or []):
        if not isinstance(fact, dict) or not isinstance(fact.get("name"), str) or not isinstance(fact.get("pattern"), str):
            errs.add(at("facts", i), "a fact needs a name and a pattern")
            continue
        rx = compile_pattern(fact["pattern"], at("facts", i, "pattern"), errs, fact=fact["name"])
        if rx is None:
            continue
        facts.append(Pattern(idx, sid, "fact", fact["pattern"], None if rx is KNOWN_VALID else rx, at("facts", i),
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
                out.append((str(name), compile_condition(src)))
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

    probe_decls = parse_probes(data.get("probes"), at, errs.add)
    over_time = parse_over_time(data.get("over_time"), sid, at, errs, idx)

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
        probes=tuple(p.text for p in probe_decls),
        caveats=tuple(str_list(data.get("caveats"), at("caveats"), errs, "caveats")),
        supersedes=supers("supersedes"),
        superseded_by=supers("superseded_by"),
        references=tuple(str_list(data.get("references"), at("references"), errs, "references")),
        min_count=min_count,
        path=path,
        line_of=lines,
        raw=data,
        probe_decls=probe_decls,
        over_time=over_time,
    )
    if errs.errors:
        raise SignatureError(*errs.errors)
    return sig
