"""The worker-prefix patterns avoid regex forms some supported Pythons get wrong.

The `re` of early CPython 3.11 releases (3.11.2, Debian 12's system Python) fails a possessive repeat of a
group, `(?:...)*+`, that has to match nothing when the group holds a look-ahead: every Ray and vLLM process
prefix went unread there. The patterns use the equivalent atomic group, `(?>(?:...)*)`.
"""

from __future__ import annotations

import re

import pytest

from sigclass.text.lines import split_line
from sigclass.text.prefixes import PREFIXES


def test_no_line_pattern_repeats_a_group_possessively():
    for p in PREFIXES:
        assert not re.search(r"\)(?:\*|\+|\?|\{[0-9,]+\})\+", p.pattern), p.pattern


@pytest.mark.parametrize("line, kind, ident", [
    ("(RayWorkerWrapper pid=1234, ip=10.0.0.2) hi", "ray", "1234"),
    ("(VllmWorker TP1 pid=721) x", "ray", "721"),
    ("(VllmWorker PP1_TP0 pid=722) x", "ray", "722"),
    ("(VllmWorker rank=2 pid=5640) y", "ray", "5640"),
    ("(model_worker/7 pid=20331) z", "ray", "20331"),
    ("(EngineCore_DP0 pid=5) e", "ray", "5"),
    ("node-2: Killed", "host", "node-2"),
])
def test_process_and_host_prefixes_are_read(line, kind, ident):
    ln = split_line(line)
    assert ln.prefix_kind == kind and ln.stream is not None and ln.stream.id == ident
