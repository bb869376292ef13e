"""Gated patterns (scan.gate): which patterns are gated, and that the engine still finds the same lines."""

from __future__ import annotations

import random

import pytest
import regex

from sigclass.scan import prefilter
from sigclass.scan.gate import GATE_BASE, gate_strings, slow_lead

hyperscan = pytest.importorskip("hyperscan")

TQDM_KILLED = r"[0-9:]+<[0-9:?]+, [^\]]*(/s|s/[A-Za-z]+)\]Killed *$"


@pytest.mark.parametrize("src, slow", [
    (TQDM_KILLED, True),  # a class repeated without bound before `]Killed`
    (r"(?:^|\]:|^[0-9]+: |\) )\[[0-9]+\][-+]? +Killed +[^ ]", True),
    (r"NCCL WARN .*Connect to [^ \n]+ failed", False),  # starts with a plain string
    (r".*Processed prompts: +(?:[0-9]+)%", False),  # a leading `.*` costs nothing
    (r"CUDA out of memory", False),
    (r"[0-9]+ bytes", True),  # the string comes after the repetition
    (r"[a-z]+[0-9]+", False),  # no plain string at all: nothing to gate on
])
def test_slow_lead(src, slow):
    assert slow_lead(src) is slow


def test_gate_strings_need_a_long_required_string():
    assert gate_strings(TQDM_KILLED) == (b"]Killed",)
    assert gate_strings(r"[0-9]+ ab(cd|ef)") is None  # only short strings: not worth a gate
    assert gate_strings(r"(?i)[0-9]+ killed") is None  # case-insensitive: no plain string


def _lines(rnd: random.Random) -> list[bytes]:
    pieces = [
        b"Map: 100%|##########| 5000/5000 [00:03<00:00, 1520.33 examples/s]Killed",
        b"Map: 100%|##########| 5000/5000 [00:03<00:00, 1520.33 examples/s]Killed   ",
        b"[rank0]: 12:01:02<01:03, 7.1s/it]Killed",
        b"nothing killed here ]Killed but no bar",
        b"Map:  10%|#         | 500/5000 [00:03<00:30, 152.33 examples/s]",
        b"INFO 03-23 11:14:05 [async_llm.py:1] Added request cmpl-1",
        b"ERROR CUDA out of memory. Tried to allocate 2.00 GiB",
        b"[1]+  Killed                  python train.py",
        b"00:01<00:02, x",  # a bar's head on one line ...
        b"y s/it]Killed",  # ... and its end on the next: no line holds a whole match
        b"",
    ]
    return [rnd.choice(pieces) for _ in range(4000)]


def test_gated_engine_finds_the_lines_the_regex_engine_finds(tmp_path, monkeypatch):
    monkeypatch.setenv("SIGCLASS_CACHE_DIR", str(tmp_path))
    items = [
        (1, TQDM_KILLED, "tqdm killed"),
        (2, r"(?:^|\]:|^[0-9]+: |\) )\[[0-9]+\][-+]? +Killed +[^ ]", "shell killed"),
        (3, r"CUDA out of memory", "oom"),
        (4, r"Added request", "request"),
    ]
    buf = b"\n".join(_lines(random.Random(3))) + b"\n"
    want: dict[int, set[int]] = {}  # each line searched alone
    rxs = [(pid, regex.compile(src.encode(), regex.M)) for pid, src, _ in items]
    pos = 0
    for line in buf.split(b"\n")[:-1]:
        for pid, rx in rxs:
            if rx.search(line):
                want.setdefault(pos, set()).add(pid)
        pos += len(line) + 1
    assert {1, 2, 3, 4} <= set().union(*want.values())
    for attempt in range(2):  # compiled, then loaded from the cache folder
        eng = prefilter.HyperscanEngine(items)
        assert eng.gated is not None and {pid for pid, _ in eng.gated.items} == {1, 2}
        for nl in (None, prefilter_nl(buf)):
            got = eng.scan(buf, nl)
            assert {k: v for k, v in got.items() if v} == want
            assert all(pid < GATE_BASE for v in got.values() for pid in v)


def prefilter_nl(buf: bytes):
    from sigclass.scan.deferred import newline_offsets

    return newline_offsets(buf)


def test_the_shipped_pack_gates_the_tqdm_killed_pattern(ledger):
    """The pattern that doubled the cost of the block pass on a realistic log is gated."""
    srcs = [prefilter.prefilter_form(p.source) for s in ledger for p in s.any]
    assert any(gate_strings(s) == (b"]Killed",) for s in srcs)
