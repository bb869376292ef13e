"""A run's small plain log read whole (`runs.smallfile.read_small`, `Scanner.scan_whole`): the same result as
the reader gives for the same file, and every file the reader must handle goes to it."""

from __future__ import annotations

import gzip
from pathlib import Path

from conftest import FILES, REPO, SAMPLE_RUNS

from sigclass.runs.smallfile import read_small, SMALL


def _logs() -> list[Path]:
    roots = [FILES / "runs", REPO / "examples", SAMPLE_RUNS]  # the shared sample runs may be absent
    return sorted(p for r in roots if r.is_dir() for p in r.rglob("*") if p.is_file() and p.suffix in (".log", ".txt", ".out", ".err"))


def test_a_small_log_read_whole_scans_as_the_reader_scans_it(scanner):
    whole = 0
    for p in _logs():
        data = read_small(str(p), p.stat().st_size)
        if data is None:
            continue
        whole += 1
        assert data == p.read_bytes()
        got = scanner.scan_whole(data, p.name)
        want = scanner.scan(str(p), display=p.name)
        # field by field (pickle's bytes also differ when equal strings are shared or not)
        assert got == want, p
    assert whole >= 20  # the fixtures and the bundled examples hold many shard-sized logs


def test_what_the_reader_must_read_is_left_to_it(tmp_path):
    line = b"[2026-03-01 08:00:24,000][gen][INFO] - [shard 0] starting: 500 prompts\n"
    cases = {
        "plain.log": line * 3,
        "no-final-newline.log": line * 3 + b"tail without newline",
        "hole.log": b"\x00" * 64 + line,
        "packed.log": gzip.compress(line * 3),
        "named.log.gz": line * 3,
        "events.jsonl": b'{"msg": "x"}\n',
        "binary.log": bytes(range(256)) * 4 + b"\n",
        "big.log": line * (SMALL // len(line) + 1),
        "empty.log": b"",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    got = {name: read_small(str(tmp_path / name), len(data)) for name, data in cases.items()}
    assert got.pop("plain.log") == line * 3
    assert all(v is None for v in got.values()), [k for k, v in got.items() if v is not None]
    # a file that changed since its stat (the size given) is left to the reader too
    assert read_small(str(tmp_path / "plain.log"), len(line) * 2) is None
    assert read_small(str(tmp_path / "gone.log"), 10) is None
