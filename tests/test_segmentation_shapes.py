"""Failure shapes from real logs that open a block although they carry no `Name: message` line.

A small fixed ledger (tests/files/ledger_min), so that these test the scanner's
segmentation, not the shipped pack's wording: each shape must give exactly one
`unknown` finding starting on the right line, from every prefilter engine, and
the look-alike text beside it none.
"""

from __future__ import annotations

import pytest

from sigclass.ledger.pack import load_ledger
from sigclass.scan.prefilter import available_engines
from sigclass.scan.scanner import Scanner

from conftest import FILES

BARE_ASSERT = """\
INFO loading weights
  File "/usr/lib/python3.10/site-packages/pkg/models/gpt.py", line 245, in load_weights
    assert param_slice.shape == loaded_weight.shape
AssertionError
INFO shutting down
"""

EMPTY_MESSAGE = """\
  File "/usr/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 245, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
"""

ARGPARSE = """\
usage: serve [-h] [--port PORT] model
serve: error: unrecognized arguments: --temperature 0.8
"""

ARGPARSE_REQUIRED = "train.py: error: the following arguments are required: --config\n"

# an OpenAI-compatible client's HTTP error (openai's APIStatusError text), caught and printed by the caller
CLIENT_400 = """\
sampling data len 200
Error Occurs: "Error code: 400 - {'object': 'error', 'message': "This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the messages, 10000 in the completion). Please reduce the length of the messages or completion. None", 'type': 'BadRequestError', 'param': None, 'code': 400}"
"""

# c10d gives up on the store: its retries are warnings, the last line an error
C10D_GIVES_UP = """\
[W socket.cpp:697] [c10d] The client socket has failed to connect to 0.104.99.143:47389 (errno: 110 - Connection timed out).
[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address of (6841231, 47389).
"""

LOOK_ALIKES = """\
INFO retried after ConnectionError
step 10 metric=AssertionError count 0
WARNING tokenizer: error: none, continuing
[W socket.cpp:697] [c10d] The client socket has failed to connect to [::ffff:0.104.99.143]:47389 (errno: 110 - Connection timed out).
INFO HTTP Request: POST http://localhost:8000/v1/chat/completions "HTTP/1.1 200 OK"
"""


@pytest.fixture(scope="module")
def mini():
    return load_ledger([FILES / "ledger_min"], shipped=False, strict=True)


@pytest.mark.parametrize("engine", available_engines())
@pytest.mark.parametrize("text, first_line", [(BARE_ASSERT, 2), (EMPTY_MESSAGE, 1), (ARGPARSE, 2),
                                              (ARGPARSE_REQUIRED, 1), (CLIENT_400, 2), (C10D_GIVES_UP, 2)])
def test_shape_opens_one_unknown_block(mini, engine, text, first_line):
    res = Scanner(mini, signatures="regex", engine=engine).scan_text(text)
    assert [f.family for f in res.findings] == ["unknown"]
    assert res.findings[0].line == first_line


@pytest.mark.parametrize("engine", available_engines())
def test_look_alikes_open_nothing(mini, engine):
    assert Scanner(mini, signatures="regex", engine=engine).scan_text(LOOK_ALIKES).findings == []
