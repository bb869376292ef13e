"""Accuracy on the project's corpus and on the shared devset (skipped when absent)."""

from __future__ import annotations

import pytest

from sigclass.scan.scanner import Scanner
from sigclass.learn.scoring import accuracy, score

from conftest import DEVSET, REPO


def _report(rows) -> str:
    return "\n".join(f"{r.label:28} got {r.got!s:28} {r.file}" for r in rows if not r.ok)


@pytest.mark.skipif(not (DEVSET / "index.jsonl").exists(), reason="shared devset not present")
def test_devset_regex_names_the_labelled_family(ledger):
    rows = score(Scanner(ledger, signatures="regex"), DEVSET)
    acc = accuracy(rows)
    assert acc >= 0.90, f"devset accuracy {acc:.1%} < 90%\n{_report(rows)}"


def test_corpus_regex_accuracy(ledger):
    rows = score(Scanner(ledger, signatures="regex"), REPO / "corpus" / "written")
    assert len(rows) >= 5 * 23
    acc = accuracy(rows)
    assert acc >= 0.90, f"corpus accuracy {acc:.1%} < 90%\n{_report(rows)}"
