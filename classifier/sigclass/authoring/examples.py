"""Same-stem example files: `# expect: ID` / `# expect-not: ID` excerpts (STYLE habit 1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import re

_MARK = re.compile(r"^# (todo-)?(expect|expect-not): *([a-z0-9-]+) *$")


@dataclass(frozen=True)
class Example:
    path: str
    line: int  # line of the marker
    kind: str  # expect | expect-not
    family: str
    text: str
    todo: bool


def parse_examples(path: str | Path) -> list[Example]:
    out: list[Example] = []
    cur: tuple[int, str, str, bool] | None = None
    buf: list[str] = []
    text = Path(path).read_text(encoding="utf-8", errors="replace")

    def flush() -> None:
        if cur is not None:
            out.append(Example(str(path), cur[0], cur[1], cur[2], "\n".join(buf) + "\n", cur[3]))

    for i, line in enumerate(text.splitlines(), 1):
        m = _MARK.match(line)
        if m:
            flush()
            cur = (i, m.group(2), m.group(3), bool(m.group(1)))
            buf = []
        elif cur is not None:
            buf.append(line)
    flush()
    return out


def first_root_family(findings) -> str | None:
    """The family of the first finding that is a failure of the run: not a victim of another, and not an error
    the run went on past (`recovered`)."""
    for f in findings:
        if f.role != "secondary" and f.status != "recovered":
            return f.family
    return None


def check(scanner, ex: Example) -> tuple[bool, str]:
    """Run one excerpt through the scanner; (passed, what was found)."""
    res = scanner.scan_text(ex.text, source=f"{ex.path}:{ex.line}")
    got = first_root_family(res.findings)
    fams = sorted({f.family for f in res.findings})
    if ex.kind == "expect":
        return got == ex.family, f"first root finding {got!r} (all: {fams})"
    # a finding the run went on past (`recovered`) is shown as such, not as a failure of the family
    failed = sorted({f.family for f in res.findings if f.status != "recovered"})
    return ex.family not in failed, f"findings {fams}" + (f" (failures: {failed})" if failed != fams else "")
