"""What a new user meets first: every help text matches what the command does."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.mcp_tools import Config, Tools

runner = CliRunner()


def test_mcp_help_names_every_tool_the_server_serves(tmp_path):
    res = runner.invoke(app, ["mcp", "--help"], terminal_width=400)
    assert res.exit_code == 0, res.output
    served = [d["name"] for d in Tools(Config(roots=[tmp_path])).definitions()]
    assert len(served) == 5
    missing = [name for name in served if name not in res.output]
    assert not missing, f"`sigclass mcp --help` does not name {missing}"


def test_explain_jsonl_is_the_json_entry_on_one_line():
    as_json = runner.invoke(app, ["explain", "cuda-oom", "-f", "json"])
    as_jsonl = runner.invoke(app, ["explain", "cuda-oom", "-f", "jsonl"])
    assert as_json.exit_code == 0 and as_jsonl.exit_code == 0, as_json.output + as_jsonl.output
    lines = as_jsonl.output.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == json.loads(as_json.output)
    assert json.loads(lines[0])["id"] == "cuda-oom"
