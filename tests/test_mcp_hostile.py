"""`sigclass mcp` under hostile calls: after each one the server still answers the next call.

The real server is driven over stdio by the SDK's own client, with a read timeout per call and a bound on the
whole session, so a frozen server fails the test rather than the suite.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import OOM

pytest.importorskip("mcp")

SESSION = 240  # seconds for the whole session
CALL = 60  # seconds for one call
MAX_BYTES = 1 << 20
MAX_TEXT = 1 << 20


def _command(root: Path) -> tuple[str, list[str]]:
    exe = shutil.which("sigclass")
    base = [exe] if exe else [sys.executable, "-m", "sigclass"]
    return base[0], [*base[1:], "mcp", "--root", str(root), "--max-bytes", str(MAX_BYTES),
                     "--max-text-bytes", str(MAX_TEXT)]


def _tree(root: Path) -> None:
    import zstandard

    (root / "logs").mkdir(parents=True)
    (root / "logs" / "train.log").write_text("INFO start\n" + OOM)
    # 64 MiB of newlines in a few KB: over --max-bytes once decompressed
    with open(root / "logs" / "bomb.log.zst", "wb") as f, zstandard.ZstdCompressor().stream_writer(f) as w:
        for _ in range(64):
            w.write(b"\n" * (1 << 20))
    run = root / "runs" / "odd"
    (run / "worker_0").mkdir(parents=True)
    (run / "worker_1").mkdir()
    head = "2026-03-01 12:00:00,000 INFO shard {} starting\n"
    with open(os.path.join(os.fsencode(run / "worker_0"), b"shard_0\xff.log"), "w") as f:
        f.write(head.format(0) + OOM)
    with open(os.path.join(os.fsencode(run / "worker_1"), b"shard_1\nx.log"), "w") as f:
        f.write(head.format(1) + OOM)
    (run / "worker_1" / "shard_2\u202e.log").write_text(head.format(2) + OOM)


async def _session(root: Path, errlog) -> list[str]:
    from datetime import timedelta

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command, args = _command(root)
    params = StdioServerParameters(command=command, args=args, cwd=str(root), env=dict(os.environ))
    done: list[str] = []
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=CALL) as session:
            await session.initialize()

            async def still_serving(after: str) -> None:
                res = await session.call_tool("classify_log", {"path": "logs/train.log"})
                assert not res.is_error, (after, res.content[0].text)
                assert res.structured_content["findings"][0]["family"] == "cuda-oom", after
                done.append(after)

            # 1. a line built to make a backtracking regex go quadratic
            res = await session.call_tool("classify_log", {"text": "[shard 5]" + " " * 60_000 + "1\n" + OOM})
            assert not res.is_error, res.content[0].text
            await still_serving("slow-regex text")

            # 2. a zstd bomb: refused on its decompressed size, in one line
            res = await session.call_tool("classify_log", {"path": "logs/bomb.log.zst"})
            assert res.is_error, res
            msg = res.content[0].text
            assert "over the limit" in msg and "--max-bytes" in msg and "\n" not in msg, msg
            await still_serving("zstd bomb")

            # 3. a run with names that are not UTF-8, hold a newline or a bidi override
            res = await session.call_tool("analyze_run", {"path": "runs/odd"})
            assert not res.is_error, res.content[0].text
            sources = sorted(u["source"] for u in res.structured_content["units"])
            assert sources == ["worker_0/shard_0\\xff.log", "worker_1/shard_1\\nx.log",
                               "worker_1/shard_2\\u202e.log"], sources
            await still_serving("odd names")

            # 4. text with control and bidi characters
            res = await session.call_tool("classify_log", {"text": "\x00\x1b]0;\x07\u202e\r\n" + OOM})
            assert not res.is_error, res.content[0].text
            await still_serving("control characters")
    return done


def test_server_survives_hostile_calls(tmp_path: Path):
    root = tmp_path.resolve() / "root"
    _tree(root)
    errpath = tmp_path / "server.err"
    with open(errpath, "w") as errlog:
        try:
            done = asyncio.run(asyncio.wait_for(_session(root, errlog), SESSION))
        except (TimeoutError, asyncio.TimeoutError):
            pytest.fail(f"the server stopped answering; stderr:\n{errpath.read_text()}")
    assert done == ["slow-regex text", "zstd bomb", "odd names", "control characters"]
    err = errpath.read_text()
    assert "Traceback" not in err, err
