"""Probe declarations: a ledger probe as data (what it varies, what it keeps equal, what it expects).

A probe stays a plain string (human text only), or is a mapping:

    - text: Run the identical code, model, engine arguments and shard on an A100; ...
      vary: {gpu_model: '^(?!G?H(100|200|800|20))'}   # fact -> the values the probe run takes
      keep: [engine, model, code]                      # facts or groups the probe run keeps equal
      expect: clean                                    # clean | fails: what the probe run does if the family is right
      points_to: cuda-illegal-memory-access            # the family the evidence points to when it refutes
      cost: 2                                          # smaller runs first when naming the next probe

or, for a probe that reads something rather than runs something:

    - text: Check dmesg for Xid 13/31/43 ...
      inspect: {xid: '^(13|31|43)$'}                   # fact -> the values that support the family
      points_to: gpu-hardware-fault

A `vary` value is a regex on the fact's comparable value, a bound
(`< 2048`, `>= 65536`), or one of `other`, `lower`, `higher` (relative to the
failing units). `inspect` may also be a sentence when no log shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import regex

from sigclass.ledger.context import as_number
from sigclass.ledger.patterns import validated_cache

PROBE_KEYS = ("text", "vary", "keep", "expect", "points_to", "cost", "inspect")
EXPECTS = ("clean", "fails")
RELATIVE = ("other", "lower", "higher")
_BOUND = regex.compile(r"^\s*(<=|>=|<|>)\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*$")


@dataclass(frozen=True, slots=True)
class Probe:
    """One probe of a family: its text and, when declared, what it varies, keeps and expects."""

    text: str
    vary: tuple[tuple[str, str], ...] = ()
    keep: tuple[str, ...] = ()
    expect: str = "clean"
    points_to: str | None = None
    cost: int = 1
    inspect: tuple[tuple[str, str], ...] = ()
    inspect_text: str = ""

    @property
    def declared(self) -> bool:
        return bool(self.vary or self.inspect or self.inspect_text)

    @property
    def contrast(self) -> bool:
        return bool(self.vary)

    def facts(self) -> list[str]:
        """Every fact name (or group) the declaration mentions."""
        return [n for n, _ in self.vary] + list(self.keep) + [n for n, _ in self.inspect]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"text": self.text}
        if self.vary:
            d.update(vary=dict(self.vary), keep=list(self.keep), expect=self.expect)
        if self.inspect:
            d["inspect"] = dict(self.inspect)
        elif self.inspect_text:
            d["inspect"] = self.inspect_text
        if self.declared:
            d["cost"] = self.cost
            if self.points_to:
                d["points_to"] = self.points_to
        return d


def value_test(spec: str) -> Callable[[str, list[float]], bool]:
    """A test `(comparable value, numeric values of the failing units) -> bool` for one `vary` value."""
    s = spec.strip()
    if s == "other":
        return lambda v, base: True  # the caller checks that the value differs from the failing units'
    if s in ("lower", "higher"):
        def rel(v: str, base: list[float]) -> bool:
            x = as_number(v)
            if x is None or not base:
                return False
            return x < min(base) if s == "lower" else x > max(base)
        return rel
    m = _BOUND.match(s)
    if m:
        op, bound = m.group(1), float(m.group(2).replace(",", ""))

        def cmp(v: str, base: list[float]) -> bool:
            x = as_number(v)
            if x is None:
                return False
            return {"<": x < bound, "<=": x <= bound, ">": x > bound, ">=": x >= bound}[op]
        return cmp
    rx = regex.compile(s)
    return lambda v, base: rx.search(v) is not None


def _check_value(spec: Any, where: str, add: Callable[[str, str], None]) -> bool:
    if not isinstance(spec, str) or not spec.strip():
        add(where, "a probe value must be a regex, a bound like '< 2048', or other|lower|higher")
        return False
    if spec.strip() in RELATIVE or _BOUND.match(spec):
        return True
    cache = validated_cache()  # checked once per text and regex version
    key = cache.key("probe value\0" + spec)
    if key in cache.known:
        return True
    try:
        regex.compile(spec)
    except regex.error as exc:
        add(where, f"regex does not compile: {exc}")
        return False
    cache.new.add(key)
    return True


def _fact_map(value: Any, where: str, add: Callable[[str, str], None], what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not value:
        add(where, f"probe {what} must map fact names to values")
        return ()
    out = []
    for k, v in value.items():
        if _check_value(v, where, add):
            out.append((str(k), v.strip()))
    return tuple(out)


def parse_probes(value: Any, at: Callable[..., str], add: Callable[[str, str], None]) -> tuple[Probe, ...]:
    """The probes of one signature (`probes:`); problems go to `add(where, message)`."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        add(at("probes"), "probes must be a list of strings or probe declarations")
        return ()
    out: list[Probe] = []
    for i, item in enumerate(value):
        where = at("probes", i)
        if isinstance(item, str):
            out.append(Probe(item))
            continue
        if not isinstance(item, dict):
            add(where, "a probe is a string or a mapping with text and vary/keep/expect (or inspect)")
            continue
        unknown = sorted(set(map(str, item)) - set(PROBE_KEYS))
        if unknown:
            add(where, f"unknown probe key(s) {', '.join(unknown)} (known: {', '.join(PROBE_KEYS)})")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            add(where, "a probe declaration needs its human text under `text`")
            continue
        vary: tuple[tuple[str, str], ...] = ()
        inspect: tuple[tuple[str, str], ...] = ()
        inspect_text = ""
        if "vary" in item and "inspect" in item:
            add(where, "a probe either varies a run (vary) or reads something (inspect), not both")
        if "vary" in item:
            vary = _fact_map(item["vary"], where, add, "vary")
        elif "inspect" in item:
            if isinstance(item["inspect"], str) and item["inspect"].strip():
                inspect_text = item["inspect"].strip()
            else:
                inspect = _fact_map(item["inspect"], where, add, "inspect")
        else:
            add(where, "a probe declaration needs vary (a run to compare) or inspect (what to read)")
        keep = item.get("keep", [])
        if isinstance(keep, str):
            keep = [keep]
        if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
            add(where, "probe keep must be a list of fact or group names")
            keep = []
        expect = item.get("expect", "clean")
        if expect not in EXPECTS:
            add(where, f"probe expect must be one of {', '.join(EXPECTS)}, not {expect!r}")
            expect = "clean"
        points_to = item.get("points_to")
        if points_to is not None and not isinstance(points_to, str):
            add(where, "probe points_to must be a family id")
            points_to = None
        cost = item.get("cost", 1)
        if not isinstance(cost, int) or isinstance(cost, bool) or cost < 0:
            add(where, "probe cost must be a non-negative integer")
            cost = 1
        out.append(Probe(text.strip(), vary, tuple(keep), expect, points_to, cost, inspect, inspect_text))
    return tuple(out)
