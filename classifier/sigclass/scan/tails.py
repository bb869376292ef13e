"""A pattern's prefilter form without the repetition at its end, when that cannot change which lines match.

The prefilter only asks which lines a pattern matches, but Hyperscan reports
every end of every match: `rank=[0-9]+` on `rank=12345` is five matches, each
a Python callback. A line matches `P X+` exactly when it matches `P X`, and
`P X*` (or `P X?`, `P X{0,n}`) exactly when it matches `P`: the end of a
pattern can be trimmed to its shortest form, inside a trailing group too, and
each line then gives about one match per pattern.

Anything this small parser does not follow (escapes with arguments, inline
flags, lookarounds, back-references, POSIX classes) leaves the pattern as it is.
"""

from __future__ import annotations

import re

_QUANT = re.compile(r"(?:[*+?]|\{(\d*)(?:,(\d*))?\})[?+]?")
_GROUP_HEAD = re.compile(r"\((?:\?:|\?P<[A-Za-z_]\w*>)?")


def _last_atom(s: str) -> tuple[int, int, str] | None:
    """(start, end, quantifier) of the last atom at the top level of s, or None when s is not understood."""
    i, n = 0, len(s)
    depth = 0
    last: tuple[int, int] | None = None
    opens: list[int] = []
    quant = ""
    prev = ""  # the kind of the token before: atom, quant, open, alt
    while i < n:
        c = s[i]
        if c == "\\":
            if i + 1 >= n or s[i + 1] in "xuUNpPgk0123456789":
                return None
            start, i = i, i + 2
        elif c == "[":
            k = i + 1
            if k < n and s[k] == "^":
                k += 1
            if k < n and s[k] == "]":
                k += 1
            while k < n and s[k] != "]":
                if s[k] == "\\":
                    k += 1
                elif s[k] == "[" and k + 1 < n and s[k + 1] in ":=.":
                    return None
                k += 1
            if k >= n:
                return None
            start, i = i, k + 1
        elif c == "(":
            head = _GROUP_HEAD.match(s, i)
            if s.startswith("(?", i) and (head is None or head.end() == i + 1):
                return None  # lookaround, atomic group, inline flags, conditional
            opens.append(i)
            depth += 1
            i = head.end() if head else i + 1
            prev = "open"
            continue
        elif c == ")":
            if not opens:
                return None
            start = opens.pop()
            depth -= 1
            i += 1
            if depth:
                prev = "atom"
                continue
        elif c in "*+?{":
            m = _QUANT.match(s, i)
            if m is None or prev != "atom":
                return None
            if depth == 0:
                quant = m.group(0)
            i = m.end()
            prev = "quant"
            continue
        elif c == "|":
            i += 1
            prev = "alt"
            if depth == 0:
                last, quant = None, ""
            continue
        else:
            start, i = i, i + 1
        prev = "atom"
        if depth == 0:
            last, quant = (start, i), ""
    if depth or last is None:
        return None
    a, b = last
    if b + len(quant) != n:
        return None
    return a, b, quant


def _trim_once(s: str) -> str | None:
    got = _last_atom(s)
    if got is None:
        return None
    a, b, quant = got
    atom = s[a:b]
    if not quant:
        if atom.startswith("(") and atom.endswith(")"):
            head = _GROUP_HEAD.match(atom)
            inner = atom[head.end():-1] if head else None
            if inner:
                new = _trim_once(inner)
                if new is not None and new != inner:
                    return s[:a] + atom[: head.end()] + new + ")"  # type: ignore[union-attr]
        return None
    m = _QUANT.fullmatch(quant)
    if m is None:
        return None
    if quant[0] == "+":
        low = 1
    elif quant[0] in "*?":
        low = 0
    else:
        low = int(m.group(1) or 0)
    if low == 0:
        return s[:a]
    return s[:a] + atom + ("" if low == 1 else "{%d}" % low)


def trim_tail(src: str) -> str:
    """src with its trailing repetitions cut to their shortest form (same lines match); src when unsure or
    when what is left could match an empty line."""
    out = src
    for _ in range(16):
        new = _trim_once(out)
        if new is None or new == out:
            break
        out = new
    if out == src:
        return src
    try:
        if not out or re.compile(out).search("") is not None:
            return src
    except re.error:
        return src
    return out
