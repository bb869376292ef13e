"""`sigclass mcp`: the tools as plain functions, then the real server driven by the SDK's own stdio client."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

import sigclass
from sigclass.outputs import schemas
from sigclass.cli.app import app
from sigclass.errors import InputError
from sigclass.ledger.families import CONTRACT_IDS

from conftest import OOM, make_two_worker_run
from sigclass.mcp_tools import Config, PathRefused, Tools, parse_size

pytest.importorskip("mcp")

runner = CliRunner()
TIMEOUT = 120  # seconds for a whole session: a hang fails the test instead of blocking the suite
TOOLS = ("classify_log", "analyze_run", "explain_gotcha", "list_gotchas", "compare_runs")
OUTPUT_SCHEMAS = {"classify_log": "classification", "analyze_run": "run", "explain_gotcha": "gotcha",
                  "list_gotchas": "gotcha-list", "compare_runs": "comparison"}
LIMIT = 4096  # --max-bytes and --max-text-bytes of the server under test

FINDING_FIELDS = ("family", "role", "confidence", "evidence", "fingerprint", "mitigation", "probes", "caveats")


@pytest.fixture()
def tree(tmp_path: Path) -> dict[str, Path]:
    """A root with a log and a run directory, plus things outside it and links that lead out."""
    tmp_path = tmp_path.resolve()
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "logs").mkdir(parents=True)
    outside.mkdir()
    log = root / "logs" / "train.log"
    log.write_text("INFO start\n" + OOM)
    run = root / "runs" / "sweep-7"
    make_two_worker_run(run)
    secret = outside / "secret.log"
    secret.write_text("INFO private\n" + OOM)
    (root / "escape.log").symlink_to(secret)  # a file link out of the root
    (root / "outdir").symlink_to(outside, target_is_directory=True)  # a folder link out of the root
    (root / "inside.log").symlink_to(log)  # a link that stays inside is fine
    bad_run = root / "runs" / "leaky"
    (bad_run / "worker_0").mkdir(parents=True)
    (bad_run / "worker_0" / "shard_0.log").write_text(OOM)
    (bad_run / "worker_0" / "shard_1.log").symlink_to(secret)
    big = root / "logs" / "big.log"
    big.write_text("INFO filler line\n" * (LIMIT // 10))
    return {"root": root, "outside": outside, "log": log, "run": run, "secret": secret, "bad_run": bad_run,
            "big": big}


# --------------------------------------------------------------------------- tools without the protocol

@pytest.fixture()
def tools(tree) -> Tools:
    return Tools(Config(roots=[tree["root"]], max_bytes=LIMIT, max_text_bytes=LIMIT))


def test_parse_size():
    assert parse_size("64M") == parse_size("64MiB") == 64 << 20
    assert parse_size("16m") == 16 << 20
    assert parse_size("1G") == 1 << 30
    assert parse_size("4096") == 4096
    assert parse_size("1.5k") == 1536
    for bad in ("", "lots", "-1", "0", "5q"):
        with pytest.raises(InputError):
            parse_size(bad)


def test_config_defaults_to_the_working_directory(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Config().roots == [tmp_path.resolve()]
    with pytest.raises(InputError, match="no such directory"):
        Config(roots=[tmp_path / "missing"])


def test_declared_tools(tools: Tools):
    defs = {d["name"]: d for d in tools.definitions()}
    assert tuple(defs) == TOOLS
    for name, d in defs.items():
        assert d["input_schema"]["type"] == "object"
        assert d["output_schema"] == schemas.schema(OUTPUT_SCHEMAS[name])
        Draft202012Validator.check_schema(d["output_schema"])


def test_tool_functions(tools: Tools, tree):
    out = tools.call("classify_log", {"text": OOM})
    assert [f["family"] for f in out["findings"]] == ["cuda-oom"]
    out = tools.call("classify_log", {"path": "logs/train.log"})  # relative to the first root
    assert out["source"] == str(tree["log"])
    assert tools.call("classify_log", {"path": "inside.log"})["findings"][0]["family"] == "cuda-oom"
    assert tools.call("explain_gotcha", {"id": "nan-loss"}) == sigclass.explain("nan-loss").to_dict()
    assert len(tools.call("list_gotchas", {})["gotchas"]) == len(sigclass.list_gotchas())
    assert tools.call("analyze_run", {"path": "runs/sweep-7"})["roots"][0]["family"] == "cuda-oom"


@pytest.mark.parametrize("args, message", [
    ({}, "exactly one of"),
    ({"text": "x", "path": "y"}, "exactly one of"),
    ({"text": 3}, "must be a string"),
    ({"path": ""}, "non-empty string"),
    ({"path": "logs/missing.log"}, "no such file"),
    ({"path": "logs"}, "is a directory; use analyze_run"),
    ({"text": "x", "mode": "fast"}, "unknown argument"),
])
def test_classify_log_argument_errors(tools: Tools, args, message):
    with pytest.raises(InputError, match=message):
        tools.call("classify_log", args)


def test_paths_are_confined(tools: Tools, tree):
    with pytest.raises(PathRefused, match="outside the allowed roots"):
        tools.call("classify_log", {"path": str(tree["secret"])})
    with pytest.raises(PathRefused, match="outside the allowed roots"):
        tools.call("classify_log", {"path": "../outside/secret.log"})
    with pytest.raises(PathRefused, match="symbolic link out of the allowed roots") as refused:
        tools.call("classify_log", {"path": "escape.log"})
    assert str(tree["outside"]) not in str(refused.value)  # where the link leads is not told
    with pytest.raises(PathRefused, match="symbolic link out of the allowed roots"):
        tools.call("classify_log", {"path": str(tree["root"] / "outdir" / "secret.log")})
    with pytest.raises(PathRefused, match="symbolic link out of the allowed roots"):
        tools.call("analyze_run", {"path": "outdir"})
    with pytest.raises(PathRefused, match=r"shard_1.log is a symbolic link out of the allowed roots"):
        tools.call("analyze_run", {"path": "runs/leaky"})


def test_several_roots(tree):
    tools = Tools(Config(roots=[tree["root"], tree["outside"]]))
    assert tools.call("classify_log", {"path": str(tree["secret"])})["findings"]
    assert tools.call("classify_log", {"path": "escape.log"})["findings"]  # a link between two roots stays inside


def test_size_limits(tools: Tools, tree):
    with pytest.raises(InputError, match=r"over the limit of 4096 bytes \(--max-bytes\)"):
        tools.call("classify_log", {"path": str(tree["big"])})
    with pytest.raises(InputError, match=r"text is .* over the limit of 4096 bytes \(--max-text-bytes\)"):
        tools.call("classify_log", {"text": "x" * (LIMIT + 1)})
    with pytest.raises(InputError, match="over the limit"):
        tools.call("classify_log", {"text": "é" * (LIMIT // 2 + 1)})  # bytes, not characters, count
    (tree["run"] / "worker_1" / "shard_3.log").write_text("INFO filler line\n" * (LIMIT // 10))
    with pytest.raises(InputError, match=r"shard_3.log is .* per file \(--max-bytes\)"):
        tools.call("analyze_run", {"path": str(tree["run"])})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_never_opened(tools: Tools, tree):
    os.mkfifo(tree["root"] / "pipe.log")
    with pytest.raises(InputError, match="not a regular file"):
        tools.call("classify_log", {"path": "pipe.log"})


def test_a_symlink_loop_in_a_run_does_not_hang(tools: Tools, tree):
    (tree["run"] / "worker_1" / "loop").symlink_to(tree["run"], target_is_directory=True)
    out = tools.call("analyze_run", {"path": str(tree["run"])})
    assert out["roots"][0]["family"] == "cuda-oom"


def test_unknown_tool(tools: Tools):
    with pytest.raises(InputError, match="no tool 'nope'"):
        tools.call("nope", {})


def test_outputs_are_checked_against_their_schemas(tools: Tools):
    good = tools.call("list_gotchas", {})
    assert tools.check_output("list_gotchas", good) is None
    good["gotchas"][0]["role"] = "victim"
    assert tools.check_output("list_gotchas", good).startswith("at gotchas/0/role:")


def test_old_sdk_is_refused_with_a_clear_message(monkeypatch):
    from sigclass.cli import agent as cli_agent

    monkeypatch.setattr(cli_agent, "_sdk_version", lambda: (1, 9))
    result = runner.invoke(app, ["mcp"])
    assert result.exit_code == 2
    assert "needs mcp 2.3 or later (found 1.9)" in result.stderr


def test_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` now raises ImportError
    result = runner.invoke(app, ["mcp"])
    assert result.exit_code == 2
    assert "pip install 'sigclass[mcp]'" in result.stderr


# --------------------------------------------------------------------------- the real server over stdio

def _server_command(exe: list[str], root: Path) -> tuple[str, list[str]]:
    args = [*exe[1:], "mcp", "--root", str(root), "--max-bytes", str(LIMIT), "--max-text-bytes", str(LIMIT)]
    return exe[0], args


def _text(result) -> str:
    return result.content[0].text


def _refused(result, *needles: str) -> str:
    assert result.is_error, result
    msg = _text(result)
    assert "\n" not in msg and "Traceback" not in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


async def _drive(command: str, args: list[str], tree: dict[str, Path], errlog) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, cwd=str(tree["root"]))
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as session:
            init = await session.initialize()
            assert init.server_info.name == "sigclass"

            # the five tools, each with an output schema
            listed = {t.name: t for t in (await session.list_tools()).tools}
            assert set(listed) == set(TOOLS)
            for name, tool in listed.items():
                assert tool.output_schema == schemas.schema(OUTPUT_SCHEMAS[name]), name
                assert tool.input_schema["type"] == "object"
                assert tool.description

            # a log given as text (the client validates structured content against the output schema)
            res = await session.call_tool("classify_log", {"text": OOM})
            assert not res.is_error, _text(res)
            finding = res.structured_content["findings"][0]
            assert finding["family"] == "cuda-oom"
            for key in FINDING_FIELDS:
                assert key in finding
            assert finding["role"] == "root" and finding["mitigation"] and finding["probes"]
            assert json.loads(_text(res)) == res.structured_content

            # a log given as a path, relative to the root and absolute
            for path in ("logs/train.log", str(tree["log"])):
                res = await session.call_tool("classify_log", {"path": path})
                assert not res.is_error, _text(res)
                assert [f["family"] for f in res.structured_content["findings"]] == ["cuda-oom"]
                assert res.structured_content["source"] == str(tree["log"])

            # a gotcha, and the list of them
            res = await session.call_tool("explain_gotcha", {"id": "cuda-oom"})
            assert not res.is_error, _text(res)
            assert res.structured_content == sigclass.explain("cuda-oom").to_dict()
            res = await session.call_tool("list_gotchas", {})
            assert not res.is_error, _text(res)
            assert set(CONTRACT_IDS) <= {g["id"] for g in res.structured_content["gotchas"]}

            # a run directory
            res = await session.call_tool("analyze_run", {"path": str(tree["run"])})
            assert not res.is_error, _text(res)
            run = res.structured_content
            assert run == sigclass.analyze_run(tree["run"], n_jobs=1).to_dict()
            assert [(r["family"], r["unit"], r["victims"]) for r in run["roots"]] == [("cuda-oom", "0", ["1"])]

            # refusals: outside the roots, through links out of them, too large, unknown id
            _refused(await session.call_tool("classify_log", {"path": str(tree["secret"])}),
                     "outside the allowed roots")
            _refused(await session.call_tool("classify_log", {"path": "escape.log"}),
                     "symbolic link out of the allowed roots")
            _refused(await session.call_tool("classify_log", {"path": "outdir/secret.log"}),
                     "symbolic link out of the allowed roots")
            _refused(await session.call_tool("analyze_run", {"path": str(tree["outside"])}),
                     "outside the allowed roots")
            _refused(await session.call_tool("analyze_run", {"path": str(tree["bad_run"])}),
                     "symbolic link out of the allowed roots")
            _refused(await session.call_tool("classify_log", {"path": "logs/big.log"}), "over the limit", "--max-bytes")
            _refused(await session.call_tool("classify_log", {"text": "y" * (LIMIT + 1)}), "over the limit",
                     "--max-text-bytes")
            _refused(await session.call_tool("explain_gotcha", {"id": "cuda-om"}), "did you mean cuda-oom")
            _refused(await session.call_tool("classify_log", {}), "exactly one of")

            # the server is still serving after every refusal
            res = await session.call_tool("list_gotchas", {})
            assert not res.is_error


def test_server_over_stdio_with_the_sdk_client(tree, sigclass_exe, tmp_path):
    command, args = _server_command(sigclass_exe, tree["root"])
    errpath = tmp_path / "server.err"
    with open(errpath, "w") as errlog:
        asyncio.run(asyncio.wait_for(_drive(command, args, tree, errlog), TIMEOUT))
    err = errpath.read_text()
    assert "Traceback" not in err, err


def test_only_protocol_on_stdout(tree, sigclass_exe):
    """Raw JSON-RPC over pipes: every line the server writes to stdout is a protocol message."""
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    command, args = _server_command(sigclass_exe, tree["root"])
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "classify_log", "arguments": {"path": str(tree["secret"])}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "classify_log", "arguments": {"path": "logs/train.log"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "analyze_run",
                                                                       "arguments": {"path": str(tree["run"])}}},
    ]
    # send one message at a time: a request sent before the initialize response could be refused
    proc = subprocess.Popen([command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tree["root"], text=True)
    out: queue.Queue[str | None] = queue.Queue()
    err_lines: list[str] = []

    def pump(stream, sink) -> None:
        for line in stream:
            sink(line)
        if stream is proc.stdout:
            out.put(None)

    threads = [threading.Thread(target=pump, args=(proc.stdout, out.put), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err_lines.append), daemon=True)]
    for t in threads:
        t.start()
    lines: list[str] = []
    try:
        for m in messages:
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" in m:
                line = out.get(timeout=TIMEOUT)
                assert line is not None, "the server closed stdout: " + "".join(err_lines)
                lines.append(line)
        proc.stdin.close()
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for t in threads:
        t.join(timeout=10)
    while (line := out.get_nowait() if not out.empty() else None) is not None:
        if line.strip():
            lines.append(line)
    err = "".join(err_lines)
    docs = [json.loads(ln) for ln in lines]  # a stray print would fail here
    assert all(d.get("jsonrpc") == "2.0" for d in docs)
    by_id = {d["id"]: d for d in docs if "id" in d}
    assert by_id[2]["result"]["isError"] is True
    assert "outside the allowed roots" in by_id[2]["result"]["content"][0]["text"]
    assert by_id[3]["result"]["structuredContent"]["findings"][0]["family"] == "cuda-oom"
    assert by_id[4]["result"]["structuredContent"]["roots"][0]["family"] == "cuda-oom"
    assert "Traceback" not in err, err
    assert proc.returncode == 0, err



def test_the_run_check_limits_exactly_the_log_sources_of_the_run_layouts(tree, tmp_path: Path):
    """Only files the run layouts call log sources count against --max-bytes; others are never read."""
    from sigclass.runs.layouts import is_source

    run = tree["root"] / "runs" / "mixed"
    (run / "worker_0").mkdir(parents=True)
    (run / "worker_0" / "shard_0.log").write_text(OOM)
    big = "x" * (LIMIT + 1)
    (run / "worker_0" / "weights.bin").write_text(big)
    assert not is_source("weights.bin") and is_source("shard_9.out.zst")
    tools = Tools(Config(roots=[tree["root"]], max_bytes=LIMIT, max_text_bytes=LIMIT))
    assert tools.analyze_run({"path": str(run)})["units"]
    (run / "worker_0" / "shard_9.out.zst").write_text(big)
    with pytest.raises(InputError, match=r"shard_9.out.zst is .* per file \(--max-bytes\)"):
        tools.analyze_run({"path": str(run)})
