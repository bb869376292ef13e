"""Finding the lines a rule pattern can match in a stretch of bytes without running the regex over it.

Progress and request patterns are alternations with no common prefix, which the ``regex`` module
searches at a few tens of MB/s. Every match of such a pattern contains one of a few plain ASCII
strings (`required_literals`): the lines that hold one are found with one Hyperscan pass over the
bytes (or `bytes.find` without it), and only those lines are decoded and searched with the regex.
A line is the unit: the answer for a stretch is the lines the regex matches within the line.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

MIN_LITERAL = 3  # shorter required strings are too common to narrow anything down


def _best(options: list[frozenset[str]]) -> frozenset[str] | None:
    """The most selective requirement: the longest shortest string, then the fewest strings."""
    options = [o for o in options if o]
    if not options:
        return None
    return max(options, key=lambda o: (min(len(s) for s in o), -len(o)))


def _required(seq: Any, c: Any) -> frozenset[str] | None:
    """Strings one of which every match of the parsed sequence contains (None: no such set known); c holds
    the parser's opcodes."""
    options: list[frozenset[str]] = []
    run: list[str] = []

    def close() -> None:
        if len(run) >= 1:
            options.append(frozenset(["".join(run)]))
        run.clear()

    for op, av in seq:
        if op is c.LITERAL and av < 128:
            run.append(chr(av))
            continue
        close()
        got: frozenset[str] | None = None
        if op is c.SUBPATTERN:
            _group, add_flags, _del_flags, sub = av
            if add_flags & c.SRE_FLAG_IGNORECASE:
                continue
            got = _required(sub, c)
        elif op is c.BRANCH:
            parts = [_required(b, c) for b in av[1]]
            if parts and all(p for p in parts):
                got = frozenset().union(*parts)  # type: ignore[arg-type]
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
            lo, _hi, sub = av
            if lo >= 1:
                got = _required(sub, c)
        elif op is getattr(c, "ATOMIC_GROUP", None):
            got = _required(av, c)
        if got:
            options.append(got)
    close()
    return _best(options)


def parse_pattern(src: str) -> Any:
    """The pattern parsed by Python's `re` parser, or None where the `regex` module may read it otherwise:
    syntax `re` refuses, and what it warns about (`[[:alpha:]]`, set operations like `[a--b]`), which the
    `regex` module reads as POSIX classes and set operations."""
    import re
    import warnings
    from re import _parser  # type: ignore[attr-defined]

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return _parser.parse(src, 0)
    except (re.error, ValueError, TypeError, RecursionError, OverflowError, Warning):
        return None


def required_literals(src: str) -> tuple[bytes, ...] | None:
    """ASCII strings, each at least MIN_LITERAL long, one of which every match of the pattern contains;
    None when the pattern gives no such set (case-insensitive, a branch without a plain string, syntax
    the `re` parser does not know)."""
    import re
    from re import _constants  # type: ignore[attr-defined]

    parsed = parse_pattern(src)
    if parsed is None or parsed.state.flags & re.IGNORECASE:
        return None
    got = _required(parsed, _constants)
    if not got or min(len(s) for s in got) < MIN_LITERAL:
        return None
    return tuple(sorted(s.encode("ascii") for s in got))


class LineMatcher:
    """The lines of a stretch of bytes a pattern matches within the line.

    Candidates come from one Hyperscan pass: over the byte forms of the pattern's alternatives when
    they compile (each match names its alternative; an exact one needs no regex), else over the
    required strings (or `bytes.find` of them without Hyperscan). Candidates are then confirmed with
    the regex module, one alternative at a time (it tries every alternative at every position, ~20 us
    a line for the step patterns), only the alternatives the line can hold."""

    def __init__(self, src: str, rx: Any, compile_: Any, literals: tuple[bytes, ...]) -> None:
        self.rx = rx
        self.literals = literals
        self._compile = compile_
        branches = top_branches(src) or [src]
        # (required strings, source, compiled when first needed) of each alternative
        self.parts: list[list[Any]] | None = (
            [[required_literals(b), b, None] for b in branches] if len(branches) > 1 else None)
        forms = [byte_form(b) for b in branches]
        self.forms: list[tuple[bytes, bool]] | None = forms if all(forms) else None  # type: ignore[assignment]
        self._db: Any = False  # compiled on first use (start-up pays nothing for rules never asked)
        self._by_form = False
        self._local = threading.local()

    def _database(self) -> Any:
        if self._db is False:
            self._db = None
            try:
                import hyperscan
            except ImportError:  # bytes.find below finds the same candidate lines
                return None
            if self.forms is not None:
                db = _cached_database([f for f, _ in self.forms])
                if db is not None:
                    self._db, self._by_form = db, True
                    return db
            try:
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                db.compile(expressions=[hs_literal(s) for s in self.literals], ids=list(range(len(self.literals))),
                           flags=[0] * len(self.literals))
                self._db = db
            except Exception:
                self._db = None
        return self._db

    def candidates(self, buf: bytes) -> list[tuple[int, set[int] | None]]:
        """(line start, alternatives Hyperscan matched there or None: unknown) of the candidate lines."""
        db = self._database()
        if db is not None:
            scratch = getattr(self._local, "scratch", None)
            if scratch is None:  # one scratch space per thread
                import hyperscan

                scratch = self._local.scratch = hyperscan.Scratch(db)
            hits: list[tuple[int, int]] = []
            db.scan(buf, match_event_handler=lambda pid, _s, end, _f, _c: hits.append((end, pid)), scratch=scratch)
            return _starts(buf, hits, self._by_form)
        found: set[int] = set()
        for lit in self.literals:
            at = buf.find(lit)
            while at != -1:
                found.add(buf.rfind(b"\n", 0, at) + 1)
                le = buf.find(b"\n", at)
                if le == -1:
                    break
                at = buf.find(lit, le + 1)
        return [(ls, None) for ls in sorted(found)]

    def confirm(self, raw: bytes, text: str, ids: set[int] | None, timeout: float) -> bool:
        if ids is not None and self.forms is not None and any(self.forms[i][1] for i in ids):
            return True  # an exact byte form matched within the line
        if self.parts is None:
            return self.rx.search(text, concurrent=False, timeout=timeout) is not None
        for i, part in enumerate(self.parts):
            if ids is not None and i not in ids:
                continue
            if ids is None and part[0] is not None and not any(s in raw for s in part[0]):
                continue
            if part[2] is None:
                try:
                    part[2] = self._compile(part[1])
                except Exception:  # an alternative that does not compile alone: the whole pattern decides
                    return self.rx.search(text, concurrent=False, timeout=timeout) is not None
            if part[2].search(text, concurrent=False, timeout=timeout) is not None:
                return True
        return False

    def count(self, buf: bytes, limit: int | None, timeout: float) -> int:
        """How many lines of buf the pattern matches (stopping at limit): a line an exact form matched is
        counted without being decoded."""
        n = 0
        exact = [e for _, e in self.forms] if self.forms is not None else None
        for ls, ids in self.candidates(buf):
            if ids is not None and exact is not None and any(exact[i] for i in ids):
                n += 1
            else:
                le = buf.find(b"\n", ls)
                raw = buf[ls:] if le == -1 else buf[ls:le]
                try:
                    if not self.confirm(raw, raw.decode("utf-8", "replace"), ids, timeout):
                        continue
                except TimeoutError:
                    continue
                n += 1
            if limit is not None and n >= limit:
                break
        return n

    def lines(self, buf: bytes, timeout: float) -> Iterator[tuple[int, int, str]]:
        """(start, end, text) of each line of buf the pattern matches within the line, in order."""
        for ls, ids in self.candidates(buf):
            le = buf.find(b"\n", ls)
            le = len(buf) if le == -1 else le
            raw = buf[ls:le]
            text = raw.decode("utf-8", "replace")
            try:
                if self.confirm(raw, text, ids, timeout):
                    yield ls, le, text
            except TimeoutError:
                continue


def _cached_database(forms: list[bytes]) -> Any:
    """A Hyperscan database of the forms (multi-line, ids in order), from the cache folder when it was
    compiled before (bounded repeats take tens of ms to compile); None when Hyperscan refuses one."""
    from sigclass.scan.prefilter import cached_database

    try:
        return cached_database("hslines", forms, list(range(len(forms))))
    except Exception:  # a form Hyperscan refuses: the caller uses the required strings instead
        return None


def hs_literal(s: bytes) -> bytes:
    return b"".join(bytes([c]) if chr(c).isalnum() else b"\\x%02x" % c for c in s)


def _starts(buf: bytes, hits: list[tuple[int, int]], by_form: bool) -> list[tuple[int, set[int] | None]]:
    """Line starts of matches given by increasing end (several on a line: one start, their ids)."""
    out: list[tuple[int, set[int] | None]] = []
    le = -1
    n = len(buf)
    for end, pid in hits:
        at = end - 1 if end else 0
        if at >= le:
            ls = buf.rfind(b"\n", 0, at) + 1
            if not out or out[-1][0] != ls:
                out.append((ls, set() if by_form else None))
            le = buf.find(b"\n", at)
            le = n if le == -1 else le
        ids = out[-1][1]
        if ids is not None:
            ids.add(pid)
    return out


def top_branches(src: str) -> list[str] | None:
    """The alternatives of a pattern that is one alternation (optionally inside one group spanning it):
    a line matches the pattern when it matches one of them. None when the pattern is not of that shape."""
    body = src
    if body.startswith("(") and _close_of(body, 0) == len(body) - 1:
        if body.startswith("(?:"):
            body = body[3:-1]
        elif body.startswith("(?P<") and ">" in body:
            body = body[body.index(">") + 1 : -1]
        elif not body.startswith("(?"):
            body = body[1:-1]
        else:
            return None
    parts, depth, start = [], 0, 0
    for i, c in _structure(body, 0):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0:  # a "|" between alternatives
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts if len(parts) > 1 and depth == 0 else None


def _structure(s: str, i: int) -> Iterator[tuple[int, str]]:
    """(index, character) of the parentheses and bars of s from i on, outside escapes and classes."""
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(s, i)
            continue
        if c in "()|":
            yield i, c
        i += 1


def _class_end(s: str, i: int) -> int:
    """The index after the character class opening at s[i]."""
    j = i + 1
    if j < len(s) and s[j] == "^":
        j += 1
    if j < len(s) and s[j] == "]":
        j += 1
    while j < len(s) and s[j] != "]":
        j += 2 if s[j] == "\\" else 1
    return j + 1


def _close_of(s: str, i: int) -> int:
    """The index of the parenthesis closing the group opening at s[i] (-1: none)."""
    depth = 0
    for j, c in _structure(s, i):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


# ---------------------------------------------------------------------- byte forms for Hyperscan
# A pattern read by the regex module on decoded text, written for Hyperscan on the raw bytes so that it
# matches at least wherever the original does within a line: each decoded character is one ASCII byte
# or 1-4 bytes of 0x80-0xff (a character or a replacement for invalid bytes), so an element that can
# take a non-ASCII character takes those bytes, and `{a,b}` of it becomes `{a,4b}`; assertions Hyperscan
# reads differently (word boundaries, lookarounds) are dropped. A form is *exact* when it has no such
# widening and cannot take a newline: then its Hyperscan match is the regex's answer for the line.

_HIGH = b"\\x80-\\xff"
_ANY = b"[^\\x0a]"


class _Wide(Exception):
    """A construct with no byte form (a back reference, a conditional, case-insensitivity)."""


def _byte(c: int) -> bytes:
    return bytes([c]) if chr(c).isalnum() else b"\\x%02x" % c


def _class(items: list, c: Any) -> tuple[bytes, str]:
    """A character class as bytes and its kind: "ascii" (ASCII characters only: byte for character),
    "all" (every non-ASCII character too, so any byte of 0x80-0xff) or "some" (a byte form wider than
    the class). A line holds no newline, so no form takes one."""
    negate = False
    parts: list[bytes] = []
    high = False
    for op, av in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL:
            if av < 128:
                parts.append(_byte(av))
            else:
                high = True
        elif op is c.RANGE:
            lo, hi = av
            if lo < 128:
                parts.append(_byte(lo) + b"-" + _byte(min(hi, 127)))
            high = high or hi >= 128
        else:  # a category (\d, \w, \s: Unicode in text): any byte but the newline
            return _ANY, "some"
    if negate:
        return (b"[^" + b"".join(parts) + b"\\x0a]", "some" if high else "all")
    if high:
        return b"[" + b"".join(parts) + _HIGH + b"]", "some"
    if not parts:
        raise _Wide
    return b"[" + b"".join(parts) + b"]", "ascii"


def _one(op: Any, av: Any, c: Any) -> tuple[bytes, str]:
    """The byte form and kind (see _class) of one character element."""
    if op is c.IN:
        return _class(av, c)
    if op is c.ANY:
        return _ANY, "all"
    if op is c.LITERAL:
        return (_byte(av), "ascii") if av < 128 else (b"[" + _HIGH + b"]", "some")
    return (b"[^" + _byte(av) + b"\\x0a]", "all") if av < 128 else (_ANY, "some")  # NOT_LITERAL


_CHAR_OPS = ("LITERAL", "NOT_LITERAL", "ANY", "IN")


def _trimmed(seq: Any, c: Any) -> list:
    """The sequence without its trailing repetition: `X Y{a,b}` matches within a line exactly where
    `X Y{a}` does, and Hyperscan then reports one match end where `[^ ]+` gave one per byte."""
    items = list(seq)
    while items and _is_repeat(items[-1][0], c):
        lo, _hi, sub = items[-1][1]
        if lo == 0:
            items.pop()
            continue
        items[-1] = (items[-1][0], (lo, lo, sub))
        break
    return items


def _is_repeat(op: Any, c: Any) -> bool:
    return op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None)


def _bounds(lo: int, hi: int, c: Any) -> bytes:
    if hi == c.MAXREPEAT:
        return b"*" if lo == 0 else b"+" if lo == 1 else b"{%d,}" % lo
    return b"" if lo == hi == 1 else b"{%d}" % lo if lo == hi else b"{%d,%d}" % (lo, hi)


def _form(seq: Any, c: Any, top: bool = False) -> tuple[bytes, bool]:
    """(byte form, exact) of a parsed sequence; top: the pattern's own (trimmed) sequence, whose last
    element only has to start a match."""
    out: list[bytes] = []
    exact = True
    char_ops = {getattr(c, n) for n in _CHAR_OPS}
    items = list(seq)
    for k, (op, av) in enumerate(items):
        last = top and k == len(items) - 1
        if op in char_ops:
            form, kind = _one(op, av, c)
            if kind == "ascii" or (last and kind == "all"):  # a last character: its first byte is enough
                out.append(form)
            else:
                out.append(form + b"{1,4}")  # one character: one to four bytes
                exact = False
        elif _is_repeat(op, c):
            lo, hi, sub = av
            if len(sub) == 1 and sub[0][0] in char_ops:
                form, kind = _one(sub[0][0], sub[0][1], c)
                if kind == "ascii":
                    out.append(form + _bounds(lo, hi, c))
                elif kind == "all" and last and lo == hi == 1:
                    out.append(form)
                elif kind == "all" and hi == c.MAXREPEAT and lo <= 1:
                    out.append(form + _bounds(lo, hi, c))  # any run of such bytes is a run of such characters
                else:
                    out.append(form + _bounds(lo, hi if hi == c.MAXREPEAT else 4 * hi, c))
                    exact = False
            else:
                form, sub_exact = _form(sub, c)
                out.append(b"(?:" + form + b")" + _bounds(lo, hi, c))
                exact = exact and sub_exact
        elif op is c.SUBPATTERN:
            _group, add_flags, _del, sub = av
            if add_flags & (c.SRE_FLAG_IGNORECASE | c.SRE_FLAG_DOTALL | c.SRE_FLAG_VERBOSE):
                raise _Wide
            form, sub_exact = _form(sub, c)
            out.append(b"(?:" + form + b")")
            exact = exact and sub_exact
        elif op is getattr(c, "ATOMIC_GROUP", None):
            form, sub_exact = _form(av, c)
            out.append(b"(?:" + form + b")")
            exact = exact and sub_exact
        elif op is c.BRANCH:
            forms = [_form(b, c) for b in av[1]]
            out.append(b"(?:" + b"|".join(f for f, _ in forms) + b")")
            exact = exact and all(e for _, e in forms)
        elif op is c.AT:
            if av in (c.AT_BEGINNING, c.AT_BEGINNING_LINE):
                out.append(b"^")
            elif av in (c.AT_END, c.AT_END_LINE):
                out.append(b"$")
            exact = False  # dropped (\b, \B, \A, \Z), or a line anchor the confirming regex checks
        elif op in (c.ASSERT, c.ASSERT_NOT):
            exact = False  # dropped: matching without it finds a superset
        else:
            raise _Wide
    return b"".join(out), exact


def byte_form(src: str) -> tuple[bytes, bool] | None:
    """(Hyperscan pattern for the raw bytes, exact) for a regex read on decoded text, or None."""
    import re
    from re import _constants  # type: ignore[attr-defined]

    parsed = parse_pattern(src)
    if parsed is None or parsed.state.flags & (re.IGNORECASE | re.DOTALL | re.VERBOSE):
        return None
    try:
        form, exact = _form(_trimmed(parsed, _constants), _constants, top=True)
    except (_Wide, ValueError, TypeError, RecursionError, OverflowError):
        return None
    return (form, exact) if form else None
