"""Every signature's same-stem examples (STYLE habit 1): one parametrized test.

A signature with no `# expect:` or no `# expect-not:` example fails. `todo-`
examples record known misses: they are expected to fail, and xfail_strict
turns a todo that starts passing into a failure, so it gets promoted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sigclass.authoring.examples import check, parse_examples
from sigclass.ledger.pack import shipped_dir

SIG_FILES = sorted(shipped_dir().glob("*.yaml"))


def _cases():
    for y in SIG_FILES:
        log = y.with_suffix(".log")
        if not log.exists():
            continue
        for ex in parse_examples(log):
            marks = [pytest.mark.xfail(reason="todo example: a known miss", strict=True)] if ex.todo else []
            yield pytest.param(ex, id=f"{y.stem}:{ex.line}:{ex.kind}", marks=marks)


@pytest.mark.parametrize("sig_file", SIG_FILES, ids=lambda p: p.stem)
def test_signature_has_positive_and_negative_examples(sig_file: Path):
    log = sig_file.with_suffix(".log")
    assert log.exists(), f"{sig_file.name} has no same-stem example file {log.name}"
    kinds = {e.kind for e in parse_examples(log) if e.family == sig_file.stem and not e.todo}
    assert "expect" in kinds, f"{log.name}: no `# expect: {sig_file.stem}` example"
    assert "expect-not" in kinds, f"{log.name}: no `# expect-not: {sig_file.stem}` example"


@pytest.mark.parametrize("example", list(_cases()))
def test_signature_example(scanner, example):
    ok, got = check(scanner, example)
    assert ok, f"{example.path}:{example.line}: {example.kind} {example.family}: {got}"
