"""Rule lines found from a Hyperscan pass (or plain string search) over the bytes are the lines the
regex matches, line by line, on the decoded text: byte forms only ever widen, and exact ones agree."""

from __future__ import annotations

import random

import pytest

from sigclass.ledger.pack import load_ledger
from sigclass.scan.locate import byte_form, required_literals, top_branches
from sigclass.scan.overtime import OverTime
from sigclass.scan.progress import region_rx

FRAGMENTS = [
    b"Added request ", b'"POST /v1/completions', b'" 200', b"'loss': ", b" iteration  12/ 300 |", b"Step 5",
    b" loss", b"Loss=", b"\xe2\x96\x88", b"\xff", b"\xe2", b"\r", b" ", b"1", b"0", b"x", b'"', b"ab", b"c",
    b"qqq", b"abc", b"xyz", b"xyzz", b"\xc3\xa9", b"12 1.5 x(f)", b"/3", b"Avg generation throughput: 0",
    b"Avg generation throughput: 10", b"Processed prompts: 100%", b"got prompt", b"Epoch 1: 50%|", b"=3",
    b"/step - ", b"loss: 2", b"\t",
]

EXTRA = [
    r'(xyz[^"]*" 200|abc\d+c|abc.{0,4}b|éxyz|qqq[^ ]+)',
    r"^ *(?P<v>[0-9]+)(/[0-9]+)? +[0-9.]+ +x\(f\)",
    r'(loss|Loss)[^a-z]{0,3}[0-9]|"xyz+é',
    r"(?:abc|xyz)\s+[0-9]$",
    r"(?P<whole>Step [0-9]+|got prompt)",
]


def _patterns() -> list[str]:
    shipped = [r.pattern for r in OverTime(load_ledger()).region.values()]
    assert shipped  # the shipped ledger has progress and request patterns
    return shipped + EXTRA


def _per_line(rx, lines: list[bytes]) -> list[int]:
    return [i for i, ln in enumerate(lines) if rx.search(ln.decode("utf-8", "replace"))]


@pytest.mark.parametrize("engine", ["hyperscan", "find"])
def test_lines_found_are_the_lines_the_regex_matches(engine):
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    rnd = random.Random(5)
    for src in _patterns():
        region = region_rx(src)
        matcher = region.locator
        assert matcher is not None, src
        if engine == "find":
            matcher._db = None  # as without Hyperscan: the required strings found with bytes.find
        for _ in range(200):
            lines = [b"".join(rnd.choice(FRAGMENTS) for _ in range(rnd.randrange(0, 8))) for _ in range(rnd.randrange(1, 30))]
            data = b"\n".join(lines) + (b"\n" if rnd.random() < 0.5 else b"")
            got = [data.count(b"\n", 0, ls) for ls, _le, _text in matcher.lines(data, 5.0)]
            want = _per_line(region.rx, lines)
            assert got == want, (src, lines)
            assert matcher.count(data, None, 5.0) == len(want)
            assert matcher.count(data, 2, 5.0) == min(2, len(want))


def test_byte_forms_widen_what_can_take_a_non_ascii_character():
    assert byte_form(r"Added request [^ ]+") == (rb"Added\x20request\x20[^\x20\x0a]", True)
    assert byte_form(r'x[^"]*" 200') == (rb"x[^\x22\x0a]*\x22\x20200", True)
    form, exact = byte_form(r"step.{0,40}loss")
    assert form == rb"step[^\x0a]{0,160}loss" and not exact  # 40 characters are up to 160 bytes
    form, exact = byte_form(r"ab\d+c")
    assert not exact and b"\\d" not in form  # a Unicode digit is not an ASCII one
    assert byte_form(r"(?i)abc") is None and byte_form(r"(a)\1") is None
    # the regex module reads these as a POSIX class and a set difference, Python's `re` otherwise: no form
    for src in (r"step [[:digit:]]+ loss", r"step [[a-z]--[aeiou]]+ loss"):
        assert byte_form(src) is None and required_literals(src) is None, src


def test_required_literals_and_branches():
    assert required_literals(r"(Added request [^ ]+|got prompt)") == (b"Added request ", b"got prompt")
    assert required_literals(r"[Ss]tep[ :=]+[0-9]+.{0,40}[Ll]oss") == (b"tep",)
    assert required_literals(r"(ab|got prompt)") is None  # a branch with too short a string narrows nothing
    assert required_literals(r"(?i)got prompt") is None
    assert top_branches(r"(a[|)]b|c(d|e)|\|f)") == ["a[|)]b", "c(d|e)", r"\|f"]
    assert top_branches(r"ab(c|d)") is None
