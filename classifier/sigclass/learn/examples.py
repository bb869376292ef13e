"""The ledger's own examples as extra training text for the learned model.

Every signature keeps real excerpts of its family beside it (`<id>.log`, `# expect: <id>` blocks; STYLE habit
1). They are short, and phrased as the libraries print them in other stacks than the corpus's, so they widen
what the model has read. They never count as corpus files: cross-validation trains on them in every fold and
scores only corpus files.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sigclass.authoring.examples import parse_examples


def ledger_examples(ledger) -> list[tuple[str, str, str]]:
    """(name, family, text) of every active signature's `# expect:` examples for its own family."""
    out: list[tuple[str, str, str]] = []
    for sig in ledger:
        if not sig.active or not sig.path:
            continue
        log = Path(sig.path).with_suffix(".log")
        if not log.is_file():
            continue
        for ex in parse_examples(log):
            if ex.kind == "expect" and not ex.todo and ex.family == sig.id and ex.text.strip():
                out.append((f"{log.name}:{ex.line}", ex.family, ex.text))
    return out


PHRASINGS = "phrasings"  # a corpus folder's `phrasings/*.log`: written excerpts in the ledger's example format


def corpus_phrasings(dirs) -> list[tuple[str, str, str]]:
    """(name, family, text) of the `# expect:` excerpts in each corpus folder's `phrasings/*.log`: lines as a
    framework's source prints them, written for the project (not real logs), one family per excerpt."""
    out: list[tuple[str, str, str]] = []
    for d in dirs:
        folder = Path(d) / PHRASINGS
        if not folder.is_dir():
            continue
        for log in sorted(folder.glob("*.log")):
            for ex in parse_examples(log):
                if ex.kind == "expect" and not ex.todo and ex.text.strip():
                    out.append((f"{PHRASINGS}/{log.name}:{ex.line}", ex.family, ex.text))
    return out


def examples_hash(examples: list[tuple[str, str, str]]) -> str:
    h = hashlib.sha256()
    for name, family, text in sorted(examples):
        h.update(f"{family}/{name}\0{text}\0".encode())
    return h.hexdigest()[:16]
