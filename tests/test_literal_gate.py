"""A ledger pattern is run only on texts holding one of the plain strings its matches need: the gated search
finds what the regex finds, for every shipped pattern, on texts built from its own strings and on real lines."""

from __future__ import annotations

from pathlib import Path
import random

import pytest

from sigclass.ledger.pack import load_ledger
from sigclass.ledger.patterns import Pattern
from sigclass.scan.scanner import _PatternGuard, literals_of
from sigclass.text import workers

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _lines(limit: int = 4000) -> list[str]:
    """Real log lines from the corpus, a fixed sample."""
    files = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".log", ".txt"))
    out: list[str] = []
    for p in files:
        out.extend(p.read_text("utf-8", "replace").splitlines()[:40])
        if len(out) >= limit:
            break
    assert len(out) > 500  # the corpus has real lines to test on
    return out[:limit]


def _patterns() -> list[Pattern]:
    led = load_ledger()
    pats = [p for sig in led for p in (*sig.any, *sig.all, *sig.none, *sig.multiline, *sig.facts)]
    assert len(pats) > 100
    return pats


def _texts(rng: random.Random, needs: tuple[str, ...] | None, lines: list[str]) -> list[str]:
    """Texts around the pattern's own strings (so that the regex runs), near misses, and real lines."""
    out = [rng.choice(lines) for _ in range(40)]
    for s in needs or ():
        for _ in range(6):
            a, b = rng.choice(lines), rng.choice(lines)
            out.append(f"{a[:rng.randrange(0, 60)]}{s}{b[rng.randrange(0, max(1, len(b))):]}")
            out.append(f"{a[:30]}{s[:-1]}|{s[-1:]}{b[:30]}")  # the string cut: no longer whole
            out.append("\n".join([a, s + b, a]))  # a block's text over several lines
    return out


def test_gated_search_matches_the_regex_on_every_shipped_pattern():
    rng = random.Random(12)
    lines = _lines()
    gated = 0
    for pat in _patterns():
        guard = _PatternGuard()
        needs = literals_of(pat.source)
        gated += needs is not None
        for text in _texts(rng, needs, lines):
            want = pat.compiled.search(text)
            got = guard.search(pat, text)
            assert (got is None) == (want is None), (pat.location, pat.source, text)
            if want is not None:
                assert got.span() == want.span()
    assert gated > 50  # most shipped patterns have strings to test for


@pytest.mark.parametrize("src, needs", [
    (r"CUDA out of memory", ("CUDA out of memory",)),
    (r"(?s)shared_memory\.py.*No space left", ("No space left", "shared_memory.py")),
    (r"(?i)cuda error", None),  # case-insensitive: no plain string is needed
    (r"(?i:oom)|killed", None),  # one branch has none
    (r"\d+ bytes", (" bytes",)),
])
def test_literals_of(src, needs):
    got = literals_of(src)
    if needs is None:
        assert got is None
    else:
        assert got is not None and any(s in got for s in needs)


def test_a_text_without_the_strings_is_not_searched():
    calls = []

    class Spy:
        def search(self, text, **kw):
            calls.append(text)
            return None

    pat = Pattern(1, "x", "any", r"CUDA out of memory", Spy(), "t.yaml:1")
    guard = _PatternGuard()
    assert guard.search(pat, "all is well") is None
    assert calls == []
    guard.search(pat, "RuntimeError: CUDA out of memory. Tried")
    assert len(calls) == 1


def _worker_plain(lines: list[str]) -> str | None:
    cmd_rank = workers.IN_MESSAGE[workers._CMD_RANK]
    for rx in workers.IN_MESSAGE:
        for ln in lines:
            if rx is cmd_rank and workers.LAST_STARTED.search(ln):
                continue  # DeepSpeed's `[... '--local_rank=1'] exits with return code = 1` names the last one started
            m = rx.search(ln)
            if m:
                return workers._worker_id(m["w"])  # SGLang names its ranks as printed (`DP1 TP3`)
    return None


def test_worker_in_text_is_the_plain_rule_loop():
    rng = random.Random(3)
    lines = _lines()
    extra = ["failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary", "  rank      : 5 (local_rank: 1)",
             "srun: error: node-1: tasks 2-3: Killed", "[2025-03-10 12:00:00 DP0 TP3] Scheduler hit", "[PG 1 Rank 7] x",
             "rank=4 loss", "global_rank: 6", "Worker PID: 93658 Worker exit type", "-- Process 2 terminated with the",
             "[ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', '--local_rank=1'] exits with "
             "return code = 1", "cmd = python -u train.py --local_rank=2"]
    found = 0
    for _ in range(1500):
        chunk = [rng.choice(lines + extra) for _ in range(rng.randrange(1, 12))]
        want = _worker_plain(chunk)
        assert workers.worker_in_text(chunk) == want, chunk
        found += want is not None
    assert found > 100
