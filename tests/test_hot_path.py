"""The scanner's hot path gives the answers the plain per-line path gives.

Facts are resolved when asked for, key=value lines are skipped from their
bytes, line numbers come from the prefilter thread's newline offsets, and the
prefilter groups matches by line with numpy: each of these is checked here
against the straightforward way.
"""

from __future__ import annotations

from pathlib import Path
import random
import re

import numpy as np
import pytest

from sigclass.ledger.pack import load_ledger
from sigclass.scan import prefilter
from sigclass.scan.deferred import Heads, line_counter, newline_offsets, PENDING_CAP, PendingFacts, PREFIX_FIRST, plain
from sigclass.scan.scanner import Scanner
from sigclass.scan.triggers import KV
from sigclass.text.lines import split_line

LINES = [
    "INFO 03-23 11:14:05 [loggers.py:123] Engine 000: Prefix cache hit rate: 45.2%",
    "(VllmWorker rank=2 pid=5640) INFO 03-23 11:14:05 [gpu.py:1] loading weights",
    "(VllmWorker rank=2 pid=5640) INFO worker=w7 gpu=3 ready",
    "(VllmWorker rank=2 pid=5640) [rank3]: worker=w9",
    "(EngineCore_DP0 pid=17) Prefix cache hit rate: 12.0%",
    "(RayWorkerWrapper pid=99, ip=10.0.0.2) gpu=1 up",
    "(pid=77) rank=5 joined",
    "(not a prefix) rank=6 here",
    "(broken pid=5)x rank=8",
    "[rank1]: rank=1 world=8",
    "[rank1]:rank=4",
    "12: gpu=0 on node",
    "plain line rank=3, worker=a",
    "\x1b[32mrank=9\x1b[0m coloured",
    "progress 10%\r(VllmWorker rank=1 pid=3) gpu=4",
    "",
]


def test_every_worker_prefix_starts_with_a_byte_the_hot_path_checks():
    from sigclass.text import lines

    table = getattr(lines, "_PREFIXES", None) or __import__("sigclass.text.prefixes", fromlist=["LINE_PREFIXES"]).LINE_PREFIXES
    for _, rx in table:
        src = rx.pattern
        first = src[1] if src.startswith("\\") else src[0]
        if src.startswith("(?P<w>\\d") or src.startswith("\\d"):
            first = "0"
        assert ord(first) in PREFIX_FIRST, src
    for raw in LINES:
        if raw and plain(raw.encode()):
            assert split_line(raw).prefix_kind is None, raw


@pytest.mark.parametrize("raw", LINES)
def test_worker_from_bytes_is_split_lines_worker(raw):
    got = Heads().worker(raw.encode())
    if got is not None:
        assert got == (split_line(raw).worker or "")


@pytest.mark.parametrize("raw", LINES)
def test_kv_skip_only_when_nothing_could_change(raw):
    keys = {m["key"] for m in KV.finditer(split_line(raw).content)}
    for known in ({}, {"rank": "0"}, {"rank": "0", "gpu": "0"}, {"rank": "0", "gpu": "0", "worker": "x"}):
        if Heads().kv_known(raw.encode(), known):
            assert keys <= set(known), (raw, known)
    # the common vLLM case is skipped: its rank= is in the process prefix
    assert Heads().kv_known(b"(VllmWorker rank=2 pid=5640) INFO loading", {})


class _Pat:
    def __init__(self, fact: str, src: str) -> None:
        self.fact, self.rx = fact, re.compile(src)

    def fact_value(self, m):  # as ledger.patterns.Pattern gives it
        return m.group(self.fact)


def _search(p, text):
    return p.rx.search(text)


def test_pending_facts_last_value_wins_and_keys_keep_their_order():
    rate = _Pat("rate", r"rate: (?P<rate>[0-9.]+)%|rate: (?P<none>n/a)")
    model = _Pat("model", r"NVIDIA (?P<model>H100|A100)")
    pf, facts = PendingFacts(), {}
    eager: dict[str, dict[str, str]] = {}
    seq = [(model, "", "NVIDIA A100"), (rate, "", "rate: 1.0%"), (rate, "3", "rate: 9.0%"), (rate, "", "rate: 2.0%"),
           (model, "", "NVIDIA H100"), (rate, "", "rate: n/a")]  # the last rate line gives no value: 2.0 stays
    for p, w, text in seq:
        pf.add(p, w, split_line(text), facts, _search)
        m = p.rx.search(text)
        if m and m.group(p.fact) is not None:
            eager.setdefault(w, {})[p.fact] = m.group(p.fact)
    pf.resolve(facts, _search)
    assert facts == eager == {"": {"model": "H100", "rate": "2.0"}, "3": {"rate": "9.0"}}
    assert list(facts[""]) == list(eager[""])


def test_pending_facts_resolve_a_long_key_on_the_spot():
    rate = _Pat("rate", r"rate: (?P<rate>[0-9.]+)%")
    pf, facts = PendingFacts(), {}
    for i in range(PENDING_CAP * 3 + 1):
        pf.add(rate, "", f"rate: {i}.0%".encode(), facts, _search)
        assert sum(len(v) for v in pf.lines.values()) < PENDING_CAP
    pf.resolve(facts, _search)
    assert facts == {"": {"rate": f"{PENDING_CAP * 3}.0"}}


def test_line_counter_from_offsets_matches_bytes_count():
    rnd = random.Random(3)
    buf = b"".join(rnd.choice([b"a", b"bb\n", b"\n", b"ccc"]) for _ in range(20000))
    nl = newline_offsets(buf)
    count = line_counter(buf, nl, lambda b, x, y: b.count(b"\n", x, y))
    for _ in range(300):
        a, b = sorted(rnd.randrange(len(buf) + 1) for _ in range(2))
        assert count(a, b) == buf.count(b"\n", a, b)
    assert newline_offsets(b"") is not None and len(newline_offsets(b"")) == 0


def test_grouping_matches_by_line_with_numpy_equals_the_search_per_match():
    rnd = random.Random(5)
    buf = b"".join(rnd.choice([b"x" * rnd.randrange(1, 40) + b"\n", b"\n"]) for _ in range(3000))
    nl = newline_offsets(buf)
    ends = sorted((rnd.randrange(len(buf) + 1), rnd.choice([1, 7, 300, (1 << 20) + 6])) for _ in range(2000))
    ends[0] = (0, 1)
    fast: dict[int, set[int]] = {}
    prefilter.by_line(ends, nl, _DefaultSet(fast))
    slow: dict[int, set[int]] = {}
    for end, pid in ends:
        at = end - 1 if end else 0
        slow.setdefault(buf.rfind(b"\n", 0, at) + 1, set()).add(pid)
    assert fast == slow


class _DefaultSet(dict):
    def __init__(self, target: dict) -> None:
        super().__init__()
        self.target = target

    def __missing__(self, key):
        return self.target.setdefault(key, set())


@pytest.fixture(scope="module")
def shipped_scanner():
    return Scanner(load_ledger([]), signatures="regex")


def test_a_big_file_scans_as_the_same_text_in_memory(tmp_path, shipped_scanner):
    """The file path (read-ahead threads, deferred facts, newline offsets) against scan_text (inline)."""
    rnd = random.Random(11)
    noise = [
        "INFO 03-23 11:14:{s:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Prefix cache hit rate: {r}%",
        "(VllmWorker rank={k} pid=56{k}0) INFO 03-23 11:14:{s:02d} [gpu_worker.py:1] Loading weights took 1.{k} s",
        "[shard {k}] starting",
        "[shard {k}] done",
        "loading file tokenizer_config.json from cache at /root/.cache/x",
        "enable_prefix_caching=True, max_model_len=4096, gpu_memory_utilization=0.{k}",
        "NVIDIA H100 80GB HBM3" if rnd.random() < 0.5 else "NVIDIA A100-SXM4-80GB",
        "[rank{k}]: iteration 10/100 | consumed samples: 640 | number of nan iterations:   0 |",
        "step {s} loss 1.{k}",
    ]
    fail = ("Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in <module>\n    run()\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    parts = []
    size = 0
    while size < 9 << 20:
        if rnd.random() < 0.0005:
            chunk = fail
        else:
            chunk = rnd.choice(noise).format(s=rnd.randrange(60), r=rnd.randrange(100), k=rnd.randrange(8)) + "\n"
        parts.append(chunk)
        size += len(chunk)
    text = "".join(parts)
    path = tmp_path / "big.log"
    path.write_text(text)
    a = shipped_scanner.scan(str(path))
    b = shipped_scanner.scan_text(text, source=str(path))
    assert a.lines == b.lines == text.count("\n")
    assert [f.to_dict() for f in a.findings] == [f.to_dict() for f in b.findings]
    assert len(a.findings) > 3
    assert a.facts == b.facts and a.facts[""]["gpu_model"]
    assert a.workers_kv == b.workers_kv
    assert a.fact_lines == b.fact_lines
    assert [(m.unit, m.kind, m.line) for m in a.markers] == [(m.unit, m.kind, m.line) for m in b.markers]


def test_a_request_that_quotes_a_traceback_in_its_prompt_is_not_a_failure(shipped_scanner):
    text = (
        "INFO 03-23 11:18:26 [logger.py:43] Received request cmpl-53-0: prompt: 'Why does this fail?\\nTraceback "
        "(most recent call last):\\n  File \"train.py\", line 3, in <module>\\nRuntimeError: CUDA error: out of memory"
        "\\nHow do I fix it?', params: SamplingParams(n=1, temperature=0.0), prompt_token_ids: [5865, 9822].\n"
        "INFO 03-23 11:18:27 [logger.py:43] Added request cmpl-53-0.\n"
        + "".join(f"step {i} ok\n" for i in range(5))
        + "RuntimeError: CUDA error: out of memory\n"
    )
    res = shipped_scanner.scan_text(text)
    assert [(f.family, f.line) for f in res.findings] == [("cuda-oom", 8)]


@pytest.mark.parametrize("src, want", [
    (r"got signal: [0-9]+", r"got signal: [0-9]"),
    (r"rate: (GPU: )?(?:[0-9.]+)%", r"rate: (GPU: )?(?:[0-9.]+)%"),  # ends in a literal: unchanged
    (r"v(==?| +)(?:[0-9]+\.[0-9]+[0-9A-Za-z.+-]*)", r"v(==?| +)(?:[0-9]+\.[0-9])"),
    (r"len *(?:[0-9]{2,5})", r"len *(?:[0-9]{2})"),
    (r"killed +", r"killed "),
    (r"a|b+", r"a|b"),
    (r"x(?=y+)", r"x(?=y+)"),  # a lookahead is left alone
    (r"(?i)err+", r"(?i)err+"),  # so are inline flags
    (r"[0-9]+", r"[0-9]"),
    (r"a*", r"a*"),  # nothing would be left
    (r"ab\1+", r"ab\1+"),
])
def test_trailing_repetition_is_cut_to_its_shortest_form(src, want):
    from sigclass.scan.tails import trim_tail

    assert trim_tail(src) == want


def test_trimmed_prefilter_patterns_match_the_same_lines():
    import glob

    import regex

    from sigclass.scan.tails import trim_tail
    from sigclass.scan.triggers import GENERIC

    lg = load_ledger([])
    srcs = [prefilter.prefilter_form(p.source) for s in lg for p in (*s.any, *s.facts)] + list(GENERIC.values())
    pairs = [(regex.compile(s, regex.M), regex.compile(trim_tail(s), regex.M)) for s in srcs if trim_tail(s) != s]
    assert len(pairs) >= 10
    lines = []
    for f in sorted(glob.glob(str(Path(lg_dir()) / "*.log"))):
        lines += Path(f).read_text(encoding="utf-8", errors="replace").splitlines()
    rnd = random.Random(2)
    lines += [ln[: rnd.randrange(len(ln))] for ln in list(lines) if ln]  # cut anywhere, the end included
    lines += ["rank=12345", "shard_77 done", "NVIDIA H100 80GB HBM3", "max_model_len=32768", "vllm==0.10.1.1"]
    for a, b in pairs:
        for ln in lines:
            assert (a.search(ln) is None) == (b.search(ln) is None), (a.pattern, ln)


def lg_dir():
    from sigclass.ledger.pack import shipped_dir

    return shipped_dir()


def test_line_splitting_tries_only_the_prefixes_a_first_character_allows(monkeypatch):
    import glob

    from sigclass.text import lines

    monkeypatch.setattr(lines, "_SPLIT_MEMO", {})
    monkeypatch.setattr(lines, "_SPLIT_MEMO_LEN", -1)  # nothing kept: the second pass splits every line again
    sample = list(LINES) + ["[0,3]<stdout>:x", "[sc:w=2;u=;t=;l=4]:(pid=5) y", "7: z", "[default3]: q", "(pid=9, ip=1.2.3.4) r"]
    for f in sorted(glob.glob(str(Path(lg_dir()) / "*.log"))):
        sample += Path(f).read_text(encoding="utf-8", errors="replace").splitlines()
    fast = [lines.split_line(x) for x in sample]
    table = getattr(lines, "_PREFIXES", None) or lines.LINE_PREFIXES
    monkeypatch.setattr(lines, "_PREFIX_BY_FIRST", {})
    monkeypatch.setattr(lines, "_PREFIX_ANY", tuple(table))
    assert [lines.split_line(x) for x in sample] == fast
    assert sum(1 for ln in fast if ln.prefix_kind) > 10


def test_split_line_memo_gives_what_splitting_anew_gives(monkeypatch):
    """Lines split again from the memo (repeats, a full memo starting over) equal lines split afresh."""
    from sigclass.text import lines

    monkeypatch.setattr(lines, "_SPLIT_MEMO", {})
    monkeypatch.setattr(lines, "_SPLIT_MEMO_MAX", 5)
    sample = list(LINES) + ["x" * 500, "[rank1]: " + "y" * 450, "Traceback (most recent call last):"]
    first = [lines.split_line(x) for x in sample * 3]
    assert first == [lines._split_line(x) for x in sample * 3]
    assert len(lines._SPLIT_MEMO) <= 5
    assert all(len(k) <= lines._SPLIT_MEMO_LEN for k in lines._SPLIT_MEMO)
    again = lines.split_line(sample[-1])
    assert again is lines.split_line(sample[-1])  # kept: the same Line serves both


@pytest.mark.parametrize("text", [
    "2025-03-23 11:14:07,038 worker 3 pid=52341 at /opt/x.py:12 0xdeadbeef 10.0.0.2:29500",
    "no digits, no separators here",
    "ids 123e4567-e89b-12d3-a456-426614174000 and cafebabe12345678 rank 3",
    "C:\\Users\\me\\run.log line 7",
    "gpu3 step=10 loss=1.5e-3 took 12:01:02.5",
    "", "   ", "a-b-c", "v1.2.3", "rank: 7",
])
def test_mask_skipping_rules_changes_nothing(text):
    """mask() skips a rule when the text lacks the strings its matches need: the same template as every rule run."""
    from sigclass.text.lines import mask, MASKS

    full = text
    for rx, rep in MASKS:
        full = rx.sub(rep, full)
    assert mask(text) == " ".join(full.split())


def test_mask_skipping_rules_changes_nothing_on_generated_text():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from sigclass.text.lines import mask, MASKS

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet="0123456789abcdefxABCDEF:-./\\ _TZ+,=rankpidgGPU", max_size=60))
    def check(text):
        full = text
        for rx, rep in MASKS:
            full = rx.sub(rep, full)
        assert mask(text) == " ".join(full.split())

    check()


def test_guard_hit_answers_as_the_regex_search_does(shipped_scanner):
    """`hit` (a substring test for a pattern that is plain text) says yes exactly where the timed regex search
    finds a match, for every block pattern of the shipped pack, on the lines of the pack's example logs."""
    import glob

    sample = []
    for f in sorted(glob.glob(str(Path(lg_dir()) / "*.log"))):
        sample += [split_line(x).body for x in Path(f).read_text(encoding="utf-8", errors="replace").splitlines()]
    guard = shipped_scanner.guard
    pats = [p for sig in shipped_scanner.ledger for p in (*sig.any, *sig.all, *sig.none)]
    plain = 0
    agree = 0
    for p in pats:
        found = [ln for ln in sample if guard.search(p, ln) is not None]
        assert [ln for ln in sample if guard.hit(p, ln)] == found, p.source
        plain += guard.plain.get(p.index) is not None
        agree += bool(found)
    assert plain > 50 and agree > 100  # both kinds of pattern, and lines they match, were tried
