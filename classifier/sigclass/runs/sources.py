"""Scanning one log source of a run into a small `SourceScan` (runs in worker processes)."""

from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
import re
import stat
from typing import Any, Sequence
import warnings

from sigclass.errors import InputError, SigclassError
from sigclass.ledger.context import fact_info
from sigclass.records import Finding, Verdict
from sigclass.runs.borrow import conditional
from sigclass.runs.discover import file_kind, os_reason
from sigclass.runs.layouts import identify, Identity, is_jsonl, Layout, norm_id
from sigclass.runs.smallfile import read_small
from sigclass.scan.blocks import Marker
from sigclass.text import safe
from sigclass.text.prefixes import CENSUS, CENSUS_GROUPS, NOT_A_WORKER
from sigclass.vocab import SignatureMode


# torch's rank prefix right after another prefix (a Ray actor's `(RayWorkerWrapper pid=2002) [rank1]: ...`)
_INNER_RANK = re.compile(rb"[ \t]*\[rank(\d+)\]:")

# torchelastic's failure summary names the rank that failed first; a rank killed outright prints nothing itself
_ROOT_CAUSE = re.compile(rb"Root Cause \(first observed failure\):")

_ROOT_CAUSE_RANK = re.compile(rb"\n[ \t]*+rank[ \t]*+:[ \t]*+(\d+)")  # a field line of the summary (linear)

ROOT_CAUSE_WINDOW = (40, 15)  # launcher findings this many lines before / after the summary belong to its rank

MAX_EVIDENCE = 3


@dataclass(frozen=True)
class ScanConfig:
    """What every scanning process needs to build the same scanner (hashable, picklable)."""

    ledger: tuple[str, ...] = ()
    signatures: str = SignatureMode.BOTH
    model: str | None = None


@dataclass(slots=True)
class SourceScan:
    """What one source yields, small enough to send between processes."""

    rel: str
    identity: Identity
    jsonl: bool
    findings: list[Finding]
    markers: list[Marker]
    kv_worker: str | None
    ranks: list[str]  # rank / Ray pid ids named by line prefixes (combined logs only)
    problems: list[str]
    root_causes: list[tuple[int, str]] = field(default_factory=list)  # (line, rank) of launcher failure summaries
    aliases: dict[str, str] = field(default_factory=dict)  # a Ray actor's pid -> the rank it prints under it
    first_time: str | None = None
    last_time: str | None = None
    readable: bool = False
    facts: dict[str, dict[str, str]] = field(default_factory=dict)  # worker ('' for any) -> fact -> value
    fact_lines: list[tuple[int, str, str, str]] = field(default_factory=list)  # unit-scope facts: (line, worker, fact, value)
    conditional: list = field(default_factory=list)  # families a finding misses for want of a fact (runs.borrow)
    verdict: Verdict | None = None  # the scanner's verdict on the whole source (cause, victims, independent)


_SCANNERS: dict[ScanConfig, Any] = {}

_LAST: list[Any] = []  # [config, scanner] of the latest call


def scanner_for(cfg: ScanConfig):
    """The scanner for a config, built once per process.

    A model named by the user was checked by the command before the batch
    (`sigclass.scan.factory.usable_model`: a bad one is reported and the batch
    carries on with regex signatures). The shipped model is checked against its pin now
    and loaded on the first failure block no regex explains (the policy is
    `sigclass.scan.factory.load_learned`).
    """
    last = _LAST
    if last and last[0] is cfg:
        return last[1]  # the same config object as the call before (every source of a batch): no hashing
    sc = _SCANNERS.get(cfg)
    if sc is not None:
        _LAST[:] = [cfg, sc]
        return sc
    from sigclass.ledger.pack import load_ledger
    from sigclass.scan.factory import load_learned
    from sigclass.scan.scanner import Scanner

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ledger = load_ledger(list(cfg.ledger))
        learned = load_learned(ledger, cfg.signatures, Path(cfg.model) if cfg.model else None)
    sc = Scanner(ledger, signatures=cfg.signatures, learned=learned)
    _SCANNERS[cfg] = sc
    _LAST[:] = [cfg, sc]
    return sc


def scan_source(cfg: ScanConfig, layout: Layout, run_path: str, rel: str) -> SourceScan:
    """Scan one log source of a run. Never raises for a bad input: what went wrong is a problem."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _scan_one(cfg, layout, run_path, rel)


def scan_all(cfg: ScanConfig, layout: Layout, run_path: str, rels: Sequence[str]) -> list[SourceScan]:
    """`scan_source` for several sources of one run (the warning filters set once for all of them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [_scan_one(cfg, layout, run_path, rel) for rel in rels]


def _scan_one(cfg: ScanConfig, layout: Layout, run_path: str, rel: str) -> SourceScan:
    unit_rx, worker_rx = layout.compiled()
    path = os.path.join(run_path, rel)
    rel = safe.name(rel)  # from here on, the name as it is shown (the file is opened by `path`)
    ident = identify(rel, unit_rx, worker_rx)
    jsonl = is_jsonl(rel)
    out = SourceScan(rel, ident, jsonl, [], [], None, [], [])
    try:
        st = os.stat(path)
    except FileNotFoundError:
        out.problems.append(f"{rel}: vanished before it could be read; skipped")
        return out
    except OSError as exc:
        out.problems.append(f"{rel}: cannot read ({os_reason(exc)}); skipped")
        return out
    if not stat.S_ISREG(st.st_mode):  # never open a FIFO or a device: it could block forever
        out.problems.append(f"{rel}: {file_kind(st.st_mode)}, not a regular file; not opened")
        return out
    scanner = scanner_for(cfg)
    whole = read_small(path, st.st_size)  # a shard log read in one call; None: through the reader
    try:  # warnings are off here (`scan_source`, `scan_all`)
        res = scanner.scan(path, display=rel) if whole is None else scanner.scan_whole(whole, rel)
    except InputError as exc:
        msg = str(exc)
        if "no such file" in msg:
            msg = f"{rel}: vanished before it could be read; skipped"
        out.problems.append(msg.replace(safe.name(path), rel))
        return out
    except MemoryError:
        out.problems.append(f"{rel}: out of memory while scanning; skipped")
        return out
    except Exception as exc:  # a reader or decoder failure must not stop the batch
        out.problems.append(f"{rel}: could not be scanned ({type(exc).__name__}: {exc}); skipped")
        return out
    out.problems.extend(res.problems)
    binary = any("binary data" in p for p in res.problems)
    if res.bytes == 0 and not res.problems:
        out.problems.append(f"{rel}: empty file; nothing to read")
    out.readable = res.bytes > 0 and not binary
    out.first_time, out.last_time = res.first_time, res.last_time
    out.verdict = res.verdict
    kv = res.workers_kv
    raw_kv = kv.get("worker") or kv.get("rank") or kv.get("gpu")
    out.kv_worker = norm_id(raw_kv) if raw_kv else None
    out.facts = {k: dict(v) for k, v in res.facts.items()}
    out.fact_lines = [t for t in res.fact_lines if fact_info(t[2]).scope == "unit"]
    out.conditional = conditional(scanner, res.findings, res.facts)
    for f in res.findings:
        f.block = []
        f.facts = {}
        f.evidence = [e[:400] for e in f.evidence[-MAX_EVIDENCE:]]
        out.findings.append(f)
    out.markers = list(res.markers)
    if ident.kind == "none" and not jsonl and out.readable:
        out.ranks, out.root_causes, out.aliases = _prefix_census(path, rel)
    return out


def _prefix_census(path: str, rel: str) -> tuple[list[str], list[tuple[int, str]], dict[str, str]]:
    """Every rank / Ray pid named by a line prefix of a combined log (a pid that prints a rank's prefix after its
    own counts as that rank), the rank each launcher failure summary names with its line, and those pids' ranks
    (one cheap pass over raw bytes)."""
    from sigclass.scan.reader import open_source

    seen: dict[str, None] = {}
    alias: dict[str, str] = {}  # a prefix's id -> the rank a prefix after it names on the same line
    causes: list[tuple[int, str]] = []
    lines = 0

    def take(buf: bytes) -> None:
        nonlocal lines
        for m in _ROOT_CAUSE.finditer(buf):
            r = _ROOT_CAUSE_RANK.search(buf, m.end(), m.end() + 2000)
            if r:
                causes.append((lines + buf.count(b"\n", 0, m.start()) + 1, norm_id(r.group(1).decode())))
        lines += buf.count(b"\n")
        for m in CENSUS.finditer(buf):
            for wi, ni in CENSUS_GROUPS:
                val = m.group(wi)
                if val is None:
                    continue
                if ni is None or not (m.group(ni) or b"").decode("ascii", "replace").startswith(NOT_A_WORKER):
                    wid = norm_id(val.decode())
                    inner = _INNER_RANK.match(buf, m.end())
                    if inner is not None and wid not in alias:  # a Ray actor's pid, then the rank it runs
                        alias[wid] = norm_id(inner.group(1).decode())
                    seen.setdefault(wid, None)
                break

    tail = b""
    skip = False  # inside an over-long line whose head was already looked at
    try:
        stream = open_source(path)
    except (OSError, SigclassError):
        return [], [], {}
    try:
        while True:
            data = stream.read(4 << 20)
            if not data:
                break
            if skip:
                nl = data.find(b"\n")
                if nl == -1:
                    continue
                data, skip = data[nl + 1:], False
            buf = tail + data
            cut = buf.rfind(b"\n") + 1
            take(buf[:cut])
            tail = buf[cut:]
            if len(tail) > 65536:  # a prefix sits at a line's start: the head of a long line is enough
                take(tail[:256] + b"\n")
                tail, skip = b"", True
    except Exception:  # a truncated or corrupt stream: the scan reports it; keep what was read
        pass
    finally:
        try:
            stream.close()
        except Exception:
            pass
    if tail:
        take(tail)
    # one worker, not two: `(RayWorkerWrapper pid=2002) INFO ...` and `(RayWorkerWrapper pid=2002) [rank1]: ...`
    return list(dict.fromkeys(alias.get(w, w) for w in seen)), causes, alias
