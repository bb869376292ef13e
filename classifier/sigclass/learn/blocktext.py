"""What the learned model reads: a failure block as normalised, masked text.

Kept free of scikit-learn so that inference with the compact model (and the
scanner's lazy learned callback) never imports it.
"""

from __future__ import annotations

import re
from typing import Sequence

from sigclass.text.lines import MASKS

ABSTAIN = ("clean", "unknown")

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line \d+, in (?P<fn>\S+)')
_SITE = re.compile(r"(?:site|dist)-packages/")
_CARET = re.compile(r"^[\s^~]*$")
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure))\b:?")
# headers the reader leaves on a body: vLLM's 'ERROR 12-01 10:00:00 engine.py:12]', Ray's '(Actor pid=1, ip=...)',
# torchrun's '[rank3]:' / '[default0]:' worker tags
_PREFIX = re.compile(r"^(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.-]+:\d+\] ?"
                     r"|\(\w+ pid=\d+(?:, ip=[\d.]+)?\) ?|\[(?:rank|default)\d+\]: ?)+")
# the chained cause: a traceback printed while another was handled, or the one that directly caused it
_CHAIN = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
# exit codes and signal numbers say what killed a process ('exitcode: -9', 'exit code 137'): kept, not masked
_EXIT = re.compile(r"\b(exit ?code|exit status|returncode|return code|signal)\s*[:=]?\s*(-?\d{1,3})\b", re.IGNORECASE)
# the shared masks, except that a digit glued to a name is part of the name ('urllib3', 'sm_90', 'H100')
_MASKS = tuple((rx, rep) for rx, rep in MASKS if rep != "<NUM>") + (
    (re.compile(r"(?<![A-Za-z_\d])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?"), "<NUM>"),)


def _frame_line(m: re.Match[str]) -> str:
    path = m["path"].replace("\\", "/")
    tail = _SITE.split(path)[-1]
    parts = [p for p in tail.split("/") if p and p != "."]
    mod = ".".join(parts[-3:]).removesuffix(".py") if parts else "PATH"
    return f"at {mod} in {m['fn']}"


def _mask(line: str) -> str:
    """`sigclass.text.lines.mask` for the model: exit codes, signal numbers and digits of names kept."""
    line = _EXIT.sub(lambda m: f"{m[1].lower().replace(' ', '')}_{m[2].replace('-', 'neg')}", line)
    for rx, rep in _MASKS:
        line = rx.sub(rep, line)
    return " ".join(line.split())


FACT_MARK = "\x1ffacts"


def block_input(bodies: Sequence[str], facts: dict[str, str] | None = None) -> str:
    """What the model reads for one block: its lines, then the source's facts as tokens on a marked line."""
    text = "\n".join(bodies)
    if facts:
        toks = []
        for name, value in sorted(facts.items()):
            toks.append(f"fact_{name}")
            toks.extend(f"fact_{name}_{w}" for w in re.findall(r"[A-Za-z0-9]+", str(value)) if not w.isdigit())
        text += f"\n{FACT_MARK} " + " ".join(toks)
    return text


def normalise_block(text: str, *, max_lines: int = 160, repeat_exceptions: int = 1, facts: bool = True) -> str:
    """One block (its lines joined by newlines) as masked text: frames shortened, volatile tokens masked.

    The exception lines (type and message) are repeated ``repeat_exceptions`` times for weight, and each
    exception type also becomes a token: ``exc_<Type>`` for the last one raised, ``cause_<Type>`` for one
    that led to it (a chained traceback), so a generic wrapper does not hide the error that caused it.
    """
    out: list[str] = []
    exc: list[str] = []
    types: list[str] = []
    fact_line = ""
    lines = text.splitlines()
    if lines and lines[-1].startswith(FACT_MARK):
        fact_line = lines.pop()[len(FACT_MARK):].strip()
    if len(lines) > max_lines:
        half = max_lines // 2
        lines = lines[:half] + lines[-half:]
    for raw in lines:
        raw = _PREFIX.sub("", raw[:1000])
        if not raw.strip() or _CARET.match(raw):
            continue
        m = _FRAME.match(raw)
        if m:
            out.append(_mask(_frame_line(m)))
            continue
        s = _mask(raw)
        out.append(s)
        if _CHAIN.match(raw):
            out.append("chained_exception")
        e = _EXC.match(raw.strip()) if raw[:1] not in (" ", "\t") else None
        if e:
            exc.append(s)
            types.append(e["type"].rsplit(".", 1)[-1])
    if repeat_exceptions and exc:
        out.extend(exc[-3:] * repeat_exceptions)
    if types:
        out.append(" ".join([f"cause_{t}" for t in dict.fromkeys(types[:-1]) if t != types[-1]] + [f"exc_{types[-1]}"]))
    if facts and fact_line:
        out.append(fact_line)
    return "\n".join(out)


def decide(proba_row, classes: Sequence[str], threshold: float) -> tuple[str, float] | None:
    """The family for one row of probabilities, or None to abstain (an abstain label, or below threshold)."""
    k = int(proba_row.argmax())
    label, p = str(classes[k]), float(proba_row[k])
    if label in ABSTAIN or p < threshold:
        return None
    return label, p
