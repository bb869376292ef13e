"""Text that is safe to print: file names carried losslessly, log text without controls.

A file name may hold bytes that are not UTF-8 (Python carries them as lone
surrogates), a newline that would fake a line of output, or a bidi control
such as U+202E that reorders what a terminal or a browser shows. Names are
turned once, where they enter, into an escaped form that is plain printable
UTF-8 and still says exactly which file is meant.
"""

from __future__ import annotations

from sigclass.text.lazyre import lazy

_SGR = lazy(r"(\x1b\[[0-9;]*+m)")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(ch: str, backslash: bool) -> str:
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode carries it
        return f"\\x{o - 0xDC00:02x}"
    if ch == "\\":
        return "\\\\" if backslash else ch
    if ch in _SHORT:
        return _SHORT[ch]
    return f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}"


def name(text: str) -> str:
    """A file or directory name as printable text, losslessly: bytes that are not UTF-8 become `\\xNN`,
    control and format characters (newline, U+202E, ...) `\\n`, `\\u202e`, and a backslash `\\\\`."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(ch if ch.isprintable() and ch != "\\" else _escape(ch, True) for ch in text)


def visible(text: str) -> str:
    """Log text for a terminal or a page: control and format characters escaped, backslashes kept. The colour
    codes sigclass itself paints with (SGR, `ESC [ ... m`) are kept: log text reaches here without them."""
    if text.isprintable():
        return text
    parts = _SGR.split(text)
    return "".join(p if i % 2 else "".join(ch if ch.isprintable() else _escape(ch, False) for ch in p)
                   for i, p in enumerate(parts))
