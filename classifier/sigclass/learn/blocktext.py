"""What the learned model reads: a failure block as normalised, masked text.

Kept free of scikit-learn so that inference with the compact model (and the
scanner's lazy learned callback) never imports it.
"""

from __future__ import annotations

import re
from typing import Sequence

from sigclass.text.lines import mask

ABSTAIN = ("clean", "unknown")

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line \d+, in (?P<fn>\S+)')
_SITE = re.compile(r"(?:site|dist)-packages/")
_CARET = re.compile(r"^[\s^~]*$")
_EXC = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b")


def _frame_line(m: re.Match[str]) -> str:
    path = m["path"].replace("\\", "/")
    tail = _SITE.split(path)[-1]
    parts = [p for p in tail.split("/") if p]
    mod = "/".join(parts[-3:]) if parts else "<PATH>"
    return f"at {mod} in {m['fn']}"


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
    """One block (its lines joined by newlines) as masked text: frames shortened, volatile tokens masked."""
    out: list[str] = []
    exc: list[str] = []
    fact_line = ""
    lines = text.splitlines()
    if lines and lines[-1].startswith(FACT_MARK):
        fact_line = lines.pop()[len(FACT_MARK):].strip()
    if len(lines) > max_lines:
        half = max_lines // 2
        lines = lines[:half] + lines[-half:]
    for raw in lines:
        if not raw.strip() or _CARET.match(raw):
            continue
        m = _FRAME.match(raw)
        if m:
            out.append(mask(_frame_line(m)))
            continue
        s = mask(raw[:1000])
        out.append(s)
        if raw[:1] not in (" ", "\t") and _EXC.match(raw.strip()):
            exc.append(s)
    if repeat_exceptions and exc:
        out.extend(exc[-3:] * repeat_exceptions)
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
