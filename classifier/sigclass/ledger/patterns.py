"""Signature patterns: compiled lazily once known valid (a per-user cache of validated patterns), matched with a timeout."""

from __future__ import annotations

import hashlib
from typing import Any

import regex

from sigclass.errors import Problem
from sigclass.text.lazyre import LazyPattern


MATCH_TIMEOUT = 0.25  # seconds a single regex match on one line may take before it is abandoned
BLOCK_MATCH_TIMEOUT = 0.5  # seconds the pure-regex prefilter may spend on one pattern over one block of bytes


class Pattern:
    """One regex of a signature, with where it came from. Compiled on first use: every pattern is
    validated at load (or was, by this regex version, on an earlier load: see `_Validated`)."""

    __slots__ = ("index", "family", "kind", "source", "location", "fact", "min_count", "_rx", "_fact_group")

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
        self._fact_group: int | None = None

    def fact_value(self, m: Any) -> str | None:
        """The fact's value in a match of this (fact) pattern: its named group, looked up by number (the regex
        module raises and clears an exception inside every lookup of a group by its name)."""
        i = self._fact_group
        if i is None:
            i = self._fact_group = self.compiled.groupindex[self.fact]
        return m.group(i)

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
            from sigclass.folders import cache_dir

            d = cache_dir()
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
        from sigclass.folders import write_cache_file

        write_cache_file(self.path, "\n".join(sorted(self.known | self.new)) + "\n", encoding="ascii")


_VALIDATED: _Validated | None = None


def validated_cache() -> _Validated:
    global _VALIDATED
    if _VALIDATED is None:
        _VALIDATED = _Validated()
    return _VALIDATED


class Collector:
    """Gathers errors while parsing one file so that all of them are reported."""

    def __init__(self) -> None:
        self.errors: list[Problem] = []

    def add(self, where: str, what: str) -> None:
        self.errors.append(Problem(where, what))


KNOWN_VALID = object()  # a pattern validated on an earlier load: compiled on first use


def compile_condition(src: str) -> LazyPattern:
    """A condition's regex (`require` / `prefer`): checked to compile once per text and regex version (the
    validated-pattern cache, under a key of its own), compiled again only when a fact value is tested.
    Raises regex.error for a pattern that does not compile."""
    cache = validated_cache()
    key = cache.key("condition\0" + src)
    if key in cache.known:
        return LazyPattern(src, compile=regex.compile)  # a scan whose log never sets the fact never compiles it
    rx = regex.compile(src)
    cache.new.add(key)
    return LazyPattern(src, compile=regex.compile, compiled=rx)


def compile_pattern(src: str, where: str, errs: Collector, *, fact: str | None = None) -> Any:
    """Validate a pattern: it compiles, does not match the empty string, and a fact pattern has its named
    group. Returns the compiled regex, KNOWN_VALID for a pattern known valid from an earlier load, or None."""
    cache = validated_cache()
    key = cache.key(src)
    if key in cache.known:
        return KNOWN_VALID
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


SLOW, STARVED = "slow", "starved"


def within_limit(fn, limit: float):
    """fn() (a regex search given `timeout=limit`), or SLOW when the search itself spent the limit on this
    thread's CPU. The regex timeout is wall-clock time, which a pause of the whole process (garbage
    collection, swapping, a busy machine) can use up: such a timeout earns another try, and after four
    the answer is STARVED (no verdict on the pattern)."""
    import time

    for _ in range(4):
        t0 = time.thread_time()
        try:
            return fn()
        except TimeoutError:
            if time.thread_time() - t0 >= limit * 0.8:
                return SLOW
    return STARVED
