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
    # UCX's `[host:pid  :thread:tid]` (its pid padded to five)
    ("[92c90024c028:157  :4:419] Caught signal 11 (Segmentation fault: address not mapped to object)", "host",
     "92c90024c028:157"),
    ("[gpu-7.cluster:1379601:0:1379824] Caught signal 7 (Bus error: nonexistent physical address)", "host",
     "gpu-7.cluster:1379601"),
])
def test_process_and_host_prefixes_are_read(line, kind, ident):
    ln = split_line(line)
    assert ln.prefix_kind == kind and ln.stream is not None and ln.stream.id == ident


@pytest.mark.parametrize("line, header, body", [
    # loguru's default format (xinference, many serving wrappers)
    ("2026-04-16 14:23:34.047 | ERROR    | xinference.core.worker:launch_builtin_model:912 - Traceback (most recent "
     "call last):", "2026-04-16 14:23:34.047 | ERROR    | xinference.core.worker:launch_builtin_model:912 - ",
     "Traceback (most recent call last):"),
    # FastChat's `%(asctime)s | %(levelname)s | %(name)s | %(message)s`
    ("2024-02-08 09:56:23 | ERROR | stderr | ModuleNotFoundError: No module named 'zmq'",
     "2024-02-08 09:56:23 | ERROR | stderr | ", "ModuleNotFoundError: No module named 'zmq'"),
    # a collector's timestamp and bar before every line of a record
    ("2026-04-16 14:23:34.047 | TypeError: f() takes 1 positional argument but 2 were given",
     "2026-04-16 14:23:34.047 | ", "TypeError: f() takes 1 positional argument but 2 were given"),
    # a bar that is the message's own text stays in the body
    ("2024-01-01 10:00:00 INFO epoch | 1 | loss |", "2024-01-01 10:00:00 INFO ", "epoch | 1 | loss |"),
])
def test_a_bar_separated_log_header_is_a_header(line, header, body):
    ln = split_line(line)
    assert (ln.header, ln.body) == (header, body)


def test_an_exception_under_a_bar_separated_header_is_a_failure():
    text = ("2026-04-16 14:23:34.047 |   File \"/app/configs/qwen.py\", line 101, in __init__\n"
            "2026-04-16 14:23:34.047 |     layer_type_validation(self.layer_types, self.num_hidden_layers)\n"
            "2026-04-16 14:23:34.047 | TypeError: layer_type_validation() takes 1 positional argument but 2 were given\n")
    import sigclass

    assert [f.family for f in sigclass.classify(text).findings] == ["unknown"]
