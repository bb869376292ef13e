"""The over-time rules read block tails and request stretches only as far as a decision needs: the
answers must be those of reading everything."""

from __future__ import annotations

import random

from sigclass.scan.progress import count_in, lines_back, lines_in, Recent, region_rx, RING

STEP = region_rx(r"(iteration +[0-9]+/ *[0-9]+ \||global_step[ :=]+[0-9])")
REQ = region_rx(r"(Added request [^ ]+|got prompt)")


def _blocks(seed: int, n_blocks: int, step_share: float) -> list[tuple[bytes, int]]:
    """Blocks of a log as (bytes, number of its last line), numbered on from one to the next."""
    rnd = random.Random(seed)
    out, lineno = [], 0
    for _ in range(n_blocks):
        lines = []
        for _ in range(rnd.randrange(20, 400)):
            lineno += 1
            if rnd.random() < step_share:
                lines.append(f"[rank{rnd.randrange(4)}]: iteration {lineno}/ 9000 | lm loss: 1.{lineno % 97}")
            else:
                lines.append(f"INFO noise line {lineno} " + "x" * rnd.randrange(0, 200))
        out.append((("\n".join(lines) + "\n").encode(), lineno))
    return out


def _eager(blocks: list[tuple[bytes, int]], tail_bytes: int) -> dict[int, list[tuple[int, str]]]:
    r = Recent()
    for data, last in blocks:
        r.add(1, lines_in(STEP, data, max(0, len(data) - tail_bytes), len(data), last))
    return {pid: [(e.lineno, e.text) for e in ring] for pid, ring in r.rings.items()}


def _lazy(blocks: list[tuple[bytes, int]], tail_bytes: int) -> tuple[dict[int, list[tuple[int, str]]], list]:
    r = Recent({1: STEP})
    for data, last in blocks:
        r.tail(data[max(0, len(data) - tail_bytes):], last)
    left = list(r.pending)
    return {pid: [(e.lineno, e.text) for e in ring] for pid, ring in r.rings.items()}, left


def test_lazy_block_tails_give_the_rings_reading_every_tail_gives():
    for seed, share, tail in [(1, 0.3, 4096), (2, 0.01, 4096), (3, 0.0, 2048), (4, 0.9, 300), (5, 0.3, 1 << 20)]:
        blocks = _blocks(seed, 150, share)  # more blocks than are kept pending: some flushes on the way
        got, _ = _lazy(blocks, tail)
        assert got == _eager(blocks, tail), (seed, share, tail)
    assert len(_eager(_blocks(1, 150, 0.3), 4096)[1]) == RING  # the rings were full: older tails had to drop out


def test_a_ring_asked_for_between_tails_sees_every_tail_before_it():
    blocks = _blocks(7, 10, 0.05)
    r = Recent({1: STEP})
    for i, (data, last) in enumerate(blocks):
        r.tail(data, last)
        want = _eager(blocks[:i + 1], 1 << 30).get(1, [])
        assert [(e.lineno, e.text) for e in r.of(1, None)] == want


def test_a_look_back_added_before_the_tails_are_read_keeps_the_newest_lines():
    blocks = _blocks(8, 12, 0.2)
    r = Recent({1: STEP})
    for data, last in blocks:
        r.tail(data[-3000:], last)
    first, last0 = blocks[0]
    r.add(1, lines_in(STEP, first, 0, len(first), last0))  # an old stretch, as a stall's look-back adds
    got = [(e.lineno, e.text) for e in r.of(1, None)]
    eager = Recent()
    eager.add(1, lines_in(STEP, first, 0, len(first), last0))
    for data, last in blocks:
        eager.add(1, lines_in(STEP, data, max(0, len(data) - 3000), len(data), last))
    assert got == [(e.lineno, e.text) for e in eager.of(1, None)]


def test_a_counted_stretch_stops_at_its_limit_and_is_exact_below_it():
    lines = []
    for i in range(6000):  # ~300 kB: several chunks, cut at line ends
        if i % 400 == 7:
            lines.append(f"INFO Added request cmpl-{i} Added request twice on one line")
        elif i % 999 == 3:
            lines.append("INFO got prompt")
        else:
            lines.append(f"DEBUG filler {i} " + "y" * 40)
    data = ("\n".join(lines)).encode()  # no newline at the end
    full = count_in(REQ, data, 0, len(data))
    assert full == sum(1 for ln in lines if REQ.search(ln)) > 20
    for limit in (1, 2, 5, full - 1, full, full + 1, 10 * full):
        assert count_in(REQ, data, 0, len(data), limit) == min(limit, full), limit
    assert count_in(REQ, data, 0, len(data), 0) == 0
    mid = data.find(b"filler 3000")
    assert count_in(REQ, data, mid, len(data), 1000) == count_in(REQ, data, mid, len(data))


def _rate_log(requests: int) -> str:
    """Three tokenizer loads, then more than the rule's window (1,000 lines) with `requests` served."""
    out = [f"INFO 03-23 11:14:0{i} [x.py:1] loading file tokenizer_config.json from cache at /c/{i}" for i in range(3)]
    for i in range(1500):
        if i >= 700 and (i - 700) % 100 == 0 and (i - 700) // 100 < requests:
            out.append(f"INFO 03-23 11:15:00 [async_llm.py:273] Added request cmpl-{i}-0.")
        else:
            out.append(f"INFO 03-23 11:15:00 [x.py:2] nothing to see on line {i} " + "z" * 60)
    return "\n".join(out) + "\n"


def test_loads_per_request_at_the_end_of_a_log_decide_as_a_full_count_would(scanner):
    # 3 loads, ratio 0.5: up to 6 requests served is a reload per call, 7 or more is not
    for requests, fires in [(1, True), (6, True), (7, False), (8, False)]:
        fs = [f for f in scanner.scan_text(_rate_log(requests)).findings
              if f.facts.get("over_time_rule") == "rate loads-per-request"]
        assert bool(fs) == fires, requests
        if fires:
            assert fs[0].family == "tokenizer-reload-per-call" and fs[0].count == 3
    assert not [f for f in scanner.scan_text(_rate_log(0)).findings
                if f.facts.get("over_time_rule") == "rate loads-per-request"]  # no request served: nothing to rate


def test_a_look_back_read_backwards_gives_the_newest_lines_a_full_read_gives():
    for seed, share in [(11, 0.3), (12, 0.02), (13, 0.0), (14, 0.95)]:
        data = b"".join(d for d, _ in _blocks(seed, 40, share))  # ~300 kB, numbered from 1
        for start, end in [(0, len(data)), (1234, len(data)), (0, data.rfind(b"\n", 0, len(data) // 2) + 1)]:
            end_line = data.count(b"\n", 0, end)
            full = lines_in(STEP, data, start, end, end_line)
            for enough in (1, 10, RING, 10 ** 6):
                got = lines_back(STEP, data, start, end, end_line, enough)
                assert got[-enough:] == full[-enough:], (seed, share, start, end, enough)
                assert set(got) <= set(full)
                assert len(got) >= min(enough, len(full))
