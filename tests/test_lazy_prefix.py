"""Lines read from their bytes alone (facts and key=value lines outside a failure) get the worker and content
a full split gives, also behind a host: pdsh's `node1: [rank3]: `, `gpu187:2: ` and `worker-1: ` start with a
letter."""

from __future__ import annotations

import pytest

from sigclass.scan.deferred import content_of, Heads, plain
from sigclass.text.lines import split_line

LINES = [
    "node1: [rank3]: vllm==0.10.1 loaded",
    "node-2.cluster: [default7]: torch==2.5.1",
    "gpu187:2: vllm==0.10.1 loaded",
    "worker-1: vllm==0.10.1 loaded",
    "RuntimeError: vllm==0.10.1 is not installed",
    "INFO 03-23 11:14:05 [core.py:74] vllm==0.10.1",
    "note: [ranked list] vllm==0.10.1",
    "Prefix cache hit rate: 5.0%",
    "(VllmWorker rank=2 pid=44056) INFO vllm==0.10.1",
    "2024-11-20 14:37:16 [rank3]: torch==2.5.1",
]


@pytest.mark.parametrize("raw", LINES)
def test_bytes_tell_what_a_full_split_tells(raw):
    ln = split_line(raw)
    got = Heads().worker(raw.encode())
    assert got is None or got == (ln.worker or ""), raw
    assert content_of(raw.encode(), Heads()) == ln.content, raw
    if plain(raw.encode()):
        assert ln.prefix_kind is None, raw


def test_a_fact_behind_a_host_belongs_to_its_rank(scanner):
    text = "".join(f"INFO step {i}\n" for i in range(5)) + "node1: [rank3]: vllm==0.10.1 loaded\n"
    facts = scanner.scan_text(text).facts
    assert facts.get("3", {}).get("vllm_version") == "0.10.1", facts
    assert "vllm_version" not in facts.get("", {})
