"""Escaping, ids and attributes: every piece of log text goes through `html.escape`, every attribute is quoted."""

from __future__ import annotations

import html
import re
from typing import Any

from sigclass.outputs.report.geometry import Layout


ID_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def esc(value: Any) -> str:
    """Escape text for HTML element content or a double-quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def slug(value: Any) -> str:
    s = ID_BAD.sub("-", str(value)).strip("-")
    return s or "x"


def anchor(run_idx: int, lay: "Layout", key: str) -> str:
    """A unique, readable element id for a unit (its order in the run keeps slug clashes apart)."""
    b = lay.by_key.get(key)
    return f"{run_idx}-{slug(key)}-{b.order if b else 'x'}"


def attrs(**kw: Any) -> str:
    """Quoted, escaped attributes; `data_x` becomes `data-x`; None values are left out."""
    out = []
    for k, v in kw.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        out.append(f'{name}="{esc(v)}"')
    return " ".join(out)
