"""Signatures over time: the `over_time` rules of a family, read from what a log does across many lines.

Five kinds (docs/ledger.md has the reference):

- metric: a value read from step lines (`pattern` with a `(?P<value>...)` group) meets a condition
  (`when`: nan, inf, nonfinite, spike, at_most, at_least) for `steps` consecutive steps;
- storm: `min_count` lines of `pattern` in a run (no more than `window` lines apart), optionally
  ending with a value at or under `limit` (a loss scale at its minimum) or `fallen` to 1/`factor` of the
  run's first value, and optionally only past step `min_step` (read from the `step` lines above it);
- stall: progress lines (`progress`) stop while the process lives (`alive` lines go on, `min_count`
  of them), or a silence of `gap` times the usual progress interval is ended by a kill (`ended_by`);
- rate: a load line (`pattern`) repeated per request or item (`per`): at least `min_count` loads and
  `ratio` loads per item;
- recovery: a line (`pattern`) that shows the process got past a warning of the family (vLLM's `init engine ...
  took 300.72 s` after shared-memory broadcast waits during a long compile): a finding of the family with no
  error line of its own, printed above it in the same source, is `recovered`. It finds nothing by itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from sigclass.ledger.patterns import Collector, compile_pattern, KNOWN_VALID, Pattern


KINDS = ("metric", "storm", "stall", "rate", "recovery")

CONDITIONS = ("nan", "inf", "nonfinite", "spike", "fallen", "at_most", "at_least")

# which keys each kind takes (besides kind, name, note) and which it needs
_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "metric": ({"pattern", "when", "limit", "factor", "steps", "where"}, {"pattern", "when"}),
    "storm": ({"pattern", "min_count", "window", "when", "limit", "factor", "step", "min_step"}, {"pattern", "min_count"}),
    "stall": ({"progress", "alive", "min_count", "ended_by", "gap", "min_seconds", "idle"}, {"progress"}),
    "rate": ({"pattern", "per", "min_count", "ratio", "window"}, {"pattern", "per"}),
    "recovery": ({"pattern"}, {"pattern"}),
}


@dataclass(frozen=True)
class TimeRule:
    """One `over_time` rule of a family. Patterns keep the family's index space of their own (the
    scanner gives them prefilter ids); `lines()` lists them with their role."""

    family: str
    kind: str
    name: str
    location: str
    pattern: Pattern | None = None  # metric/storm/rate: the line that carries the value or is counted
    when: str | None = None
    limit: float | None = None
    factor: float = 10.0
    steps: int = 1
    where: Pattern | None = None  # metric: the step only meets the condition when this also matches the line
    min_count: int = 1
    window: int = 0  # storm: lines between storm lines (default 50); rate: lines between loads (default 1000)
    per: Pattern | None = None  # rate: one line per request or item served
    step: Pattern | None = None  # storm: a step line (its number in `value`), read above the storm, never a trigger
    min_step: float = 0.0  # storm: fires only past this step (a storm in the first steps is fp16 warm-up)
    ratio: float = 0.5
    progress: Pattern | None = None  # stall
    alive: Pattern | None = None
    ended_by: Pattern | None = None
    # stall: a line that says the worker has nothing to do (a server's stats with no request running or waiting): a
    # silence after it, ended by a kill, is idleness, not a stall (read from the lines above the kill; no trigger)
    idle: Pattern | None = None
    gap: float = 5.0
    min_seconds: float = 120.0
    note: str = ""

    def lines(self) -> list[tuple[str, Pattern]]:
        """The rule's line patterns with their role, for the prefilter and lint."""
        out = []
        for role in ("pattern", "per", "progress", "alive", "ended_by", "step"):
            p = getattr(self, role)
            if p is not None:
                out.append((role, p))
        return out

    def met(self, value: float, history: list[float]) -> bool:
        """Whether one value meets the rule's condition (history: earlier values of the same stream)."""
        w = self.when
        if w == "nan":
            return value != value
        if w == "inf":
            return value in (float("inf"), float("-inf"))
        if w == "nonfinite":
            return value != value or value in (float("inf"), float("-inf"))
        if value != value:
            return False
        if w == "at_most":
            return self.limit is not None and value <= self.limit
        if w == "at_least":
            return self.limit is not None and value >= self.limit
        if w in ("spike", "fallen"):
            finite = sorted(v for v in history[-20:] if v == v and abs(v) != float("inf"))
            if not finite:
                return False
            med = finite[len(finite) // 2]
            if w == "fallen":  # at or under 1/factor of the running median (a storm: of the run's first value)
                return med > 0 and value * self.factor <= med
            return med > 0 and value > self.factor * med
        return False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "name": self.name}
        for role, p in self.lines():
            d[role] = p.source
        for key in ("where", "idle"):  # patterns no prefilter runs (lines() leaves them out)
            p = getattr(self, key)
            if p is not None:
                d[key] = p.source
        for key in _KEYS[self.kind][0]:
            if key not in d and key not in ("where", "idle"):
                d[key] = getattr(self, key)
        return d


# a named group `value`, as the regex module spells it ((?P<value>...) or (?<value>...)), its bracket not escaped
_VALUE_GROUP = re.compile(r"(?:^|[^\\])(?:\\\\)*\(\?P?<value>")


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_over_time(items: Any, sid: str, at: Callable[..., str], errs: Collector, start: int) -> tuple[TimeRule, ...]:
    """Parse a family's `over_time` list, adding every problem to errs with its file and line."""
    if items is None:
        return ()
    if not isinstance(items, list):
        errs.add(at("over_time"), f"over_time must be a list of rules, each with a kind ({', '.join(KINDS)})")
        return ()
    out: list[TimeRule] = []
    idx = start
    for i, item in enumerate(items):
        where = at("over_time", i)
        if not isinstance(item, dict):
            errs.add(where, "an over_time rule is a mapping with a kind")
            continue
        kind = item.get("kind")
        if kind not in KINDS:
            errs.add(at("over_time", i, "kind"), f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
            continue
        allowed, needed = _KEYS[kind]
        bad = False
        for key in item:
            if key not in allowed | {"kind", "name", "note"}:
                errs.add(at("over_time", i, key), f"unknown key {key!r} for a {kind} rule (known: {', '.join(sorted(allowed))})")
                bad = True
        for key in sorted(needed - set(item)):
            errs.add(where, f"a {kind} rule needs {key}")
            bad = True
        fields: dict[str, Any] = {"name": str(item.get("name") or f"{kind}-{i + 1}"), "note": str(item.get("note") or "")}
        for key in ("pattern", "where", "per", "progress", "alive", "ended_by", "step", "idle"):
            src = item.get(key)
            if src is None:
                continue
            if not isinstance(src, str):
                errs.add(at("over_time", i, key), f"{key} must be a regex string")
                bad = True
                continue
            rx = compile_pattern(src, at("over_time", i, key), errs)
            if rx is None:
                bad = True
                continue
            fields[key] = Pattern(idx, sid, f"over_time.{key}", src, None if rx is KNOWN_VALID else rx, at("over_time", i, key))
            idx += 1
        when = item.get("when")
        if when is not None and when not in CONDITIONS:
            errs.add(at("over_time", i, "when"), f"when must be one of {', '.join(CONDITIONS)}, not {when!r}")
            bad = True
        fields["when"] = when
        if when in ("at_most", "at_least") and not _num(item.get("limit")):
            errs.add(at("over_time", i, "when"), f"when: {when} needs a numeric limit")
            bad = True
        if kind == "storm" and when not in (None, "at_most", "at_least", "fallen"):
            errs.add(at("over_time", i, "when"), "a storm's when is at_most, at_least or fallen (the value its run ends "
                                                 "with, or how far it fell from the run's first)")
            bad = True
        if ("step" in item) != ("min_step" in item):
            errs.add(where, "step (the step lines to read) and min_step (the step a storm must be past) go together")
            bad = True
        for key, lo in (("steps", 1), ("min_count", 1), ("window", 1)):
            if key in item:
                v = item[key]
                if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                    errs.add(at("over_time", i, key), f"{key} must be an integer >= {lo}")
                    bad = True
                else:
                    fields[key] = v
        for key in ("limit", "factor", "ratio", "gap", "min_seconds", "min_step"):
            if key in item:
                v = item[key]
                if not _num(v) or (key not in ("limit", "min_step") and v <= 0) or (key == "min_step" and v < 0):
                    errs.add(at("over_time", i, key), f"{key} must be a {'number' if key == 'limit' else 'positive number'}")
                    bad = True
                else:
                    fields[key] = float(v)
        for key in ("pattern", "step") if kind in ("metric",) or (kind == "storm" and when) else ("step",):
            p = fields.get(key)
            # read from the pattern's text, not a compiled pattern: loading the ledger compiles no rule pattern
            if p is not None and not _VALUE_GROUP.search(p.source):
                errs.add(at("over_time", i, key), "this pattern needs a (?P<value>...) group: the number the condition is about")
                bad = True
        if kind == "stall" and "alive" not in fields and "ended_by" not in fields:
            errs.add(where, "a stall rule needs alive (heartbeats that go on) or ended_by (the kill that ends the silence)")
            bad = True
        fields.setdefault("window", 50 if kind == "storm" else 1000)
        if not bad:
            out.append(TimeRule(sid, kind, location=where, **fields))
    return tuple(out)
