"""Regular expressions compiled when first used.

`re.compile` costs 20-300 µs a pattern; the modules a scan imports hold a few hundred patterns, most of which a
small log never needs (shapes of failures it does not have, launcher exit lines, prose for findings), and a
ledger's conditions (`require` / `prefer`) are tested only when a log sets the fact they test. A
`LazyPattern` is made for nothing and compiles on the first use of any of its methods; from then on its
methods are plain instance attributes bound to the compiled pattern, as fast to reach as the compiled
pattern's own. The compile function is a parameter: `re.compile` for module patterns (`lazy`), `regex.compile`
for ledger conditions (`sigclass.ledger.patterns.compile_condition`).
"""

from __future__ import annotations

import re
from typing import Any, Callable

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner")


class LazyPattern:
    """Stands for ``compile(pattern, flags)`` (``re.compile`` unless told); ``.pattern`` is known without
    compiling. Two lazy patterns are equal when their text, flags and compile function are."""

    def __init__(self, pattern: str, flags: int = 0, compile: Callable[..., Any] = re.compile,
                 compiled: Any = None) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compile = compile
        if compiled is not None:
            self._bind(compiled)

    def _bind(self, rx: Any) -> Any:
        d = self.__dict__
        for name in _METHODS:
            d[name] = getattr(rx, name)
        d["flags"] = rx.flags
        d["groups"] = rx.groups
        d["groupindex"] = rx.groupindex
        d["_rx"] = rx
        return rx

    def compiled(self) -> Any:
        """The compiled pattern (compiled now if it was not yet)."""
        rx = self.__dict__.get("_rx")
        return rx if rx is not None else self._bind(self._compile(self.pattern, self._flags))

    def __getattr__(self, name: str) -> Any:  # reached only before the first compile, or for other attributes
        if name.startswith("__") or name in ("_rx", "_compile", "_flags", "pattern"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LazyPattern) and other.pattern == self.pattern
                and other._flags == self._flags and other._compile is self._compile)

    def __hash__(self) -> int:
        return hash((self.pattern, self._flags))

    def __reduce__(self):
        return (LazyPattern, (self.pattern, self._flags, self._compile))

    def __repr__(self) -> str:
        return f"lazy {getattr(self._compile, '__module__', '')}.compile({self.pattern!r})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """``re.compile(pattern, flags)``, compiled on first use."""
    return LazyPattern(pattern, flags)
