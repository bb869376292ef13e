"""Escaping, ids and attributes, and the jinja2 environment of the report's templates.

The templates are rendered with autoescaping: every value a template prints
goes through `esc` (`html.escape`, quotes included) unless it is already
markup (the `attrs` helper's output), every attribute is quoted.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any, TYPE_CHECKING

from sigclass.text.safe import visible

if TYPE_CHECKING:
    import jinja2

    from sigclass.outputs.report.geometry import Layout



ID_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def esc(value: Any) -> str:
    """Escape text for HTML element content or a double-quoted attribute; control and bidi characters
    (U+202E would reorder what the page shows) are written out as visible escapes."""
    return html.escape(visible("" if value is None else str(value)), quote=True)


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


@functools.cache
def environment() -> "jinja2.Environment":
    """The templates of the report (package files), autoescaped through `esc`; undefined names are errors."""
    import jinja2
    from markupsafe import Markup

    def finalize(value: Any) -> Any:
        return value if hasattr(value, "__html__") else Markup(esc(value))

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("sigclass.outputs.report", "templates"),
        autoescape=True,
        finalize=finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["attrs"] = lambda **kw: Markup(attrs(**kw))
    env.filters["px0"] = lambda v: f"{v:.0f}"
    env.filters["px1"] = lambda v: f"{v:.1f}"
    return env
