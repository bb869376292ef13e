"""Module-level regular expressions compiled when first used.

`re.compile` costs 20-300 µs a pattern; the modules a scan imports hold a few hundred patterns, most of which a
small log never needs (shapes of failures it does not have, launcher exit lines, prose for findings). A
`LazyPattern` is made at import for nothing and compiles on the first use of any of its methods; from then
on its methods are plain instance attributes bound to the compiled pattern, as fast to reach as the
compiled pattern's own.
"""

from __future__ import annotations

import re
from typing import Any

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner")


class LazyPattern:
    """Stands for ``re.compile(pattern, flags)``; ``.pattern`` is known without compiling."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def compiled(self) -> re.Pattern[str]:
        rx = re.compile(self.pattern, self._flags)
        d = self.__dict__
        for name in _METHODS:
            d[name] = getattr(rx, name)
        d["flags"] = rx.flags
        d["groups"] = rx.groups
        d["groupindex"] = rx.groupindex
        d["_rx"] = rx
        return rx

    def __getattr__(self, name: str) -> Any:  # reached only before the first compile, or for other attributes
        if name.startswith("__") or name == "_rx":
            raise AttributeError(name)
        rx = self.__dict__.get("_rx") or self.compiled()
        return getattr(rx, name)

    def __reduce__(self):
        return (LazyPattern, (self.pattern, self._flags))

    def __repr__(self) -> str:
        return f"lazy re.compile({self.pattern!r})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """``re.compile(pattern, flags)``, compiled on first use."""
    return LazyPattern(pattern, flags)
