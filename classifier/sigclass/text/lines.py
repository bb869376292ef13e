"""Line normalisation: ANSI and carriage returns, worker prefixes, log headers,
timestamps, and the masking that turns a failure block into a template.

Everything here runs only on lines the prefilter picked (and the few lines
around them), never on every line of a log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
import hashlib
import re

from sigclass.text.lazyre import lazy
from sigclass.text.prefixes import LEAD, LINE_PREFIXES, RANK_KINDS, RAY_WORKER_NAME, Stream

# Every pattern on log text takes time linear in the line (lines are kept up to 64 KiB): possessive repeats
# (`*+`, `++`) where backtracking could only retry the same characters, and no two repeats next to each other
# that can eat the same characters. tests/fuzz_sigclass.py looks for inputs that break this.
# An OSC title ends at BEL or ST (ESC \); stopping at the next ESC keeps an unterminated one linear.
_ANSI = lazy(r"\x1b\[[0-9;?]*+[A-Za-z]|\x1b\][^\x07\x1b]*+(?:\x07|\x1b\\)")


def _by_first_char(table):
    """The prefixes that can match a line starting with a given character, in table order: a line is tried
    only against those (most lines have no prefix, and most prefixes start with `[` or `(`)."""
    digits = "0123456789"
    out: dict[str, list] = {}
    anything = []
    for kind, rx in table:
        src = re.sub(r"^\(\?P<\w+>", "", rx.pattern)
        firsts = ("[" if src.startswith("\\[") else "(" if src.startswith("\\(") else digits if src.startswith("\\d")
                  else " " if src.startswith("(?=[ ") else None)
        if firsts is None:
            anything.append((kind, rx))
            for key in out:
                out[key].append((kind, rx))
            continue
        for ch in firsts:
            out.setdefault(ch, list(anything)).append((kind, rx))
    return {k: tuple(v) for k, v in out.items()}, tuple(anything)


_PREFIX_BY_FIRST, _PREFIX_ANY = _by_first_char(LINE_PREFIXES)


def _guard(table):
    """One pattern that matches where any prefix of `table` does (their alternation, groups unnamed): most lines
    have no prefix, and one failed match costs less than a failed match per prefix."""
    srcs = [rx.pattern for _, rx in table]
    if not srcs or any("(?P=" in s or "(?(" in s for s in srcs) or len({rx.flags for _, rx in table}) != 1:
        return None
    return lazy("|".join(f"(?:{re.sub(r'[(][?]P<[A-Za-z_][A-Za-z0-9_]*>', '(?:', s)})" for s in srcs),
                table[0][1].flags)


_GUARD_BY_FIRST = {ch: _guard(table) for ch, table in _PREFIX_BY_FIRST.items()}
_GUARD_ANY = _guard(_PREFIX_ANY)


_TS_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("iso", lazy(r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<f>\d+))?(?P<z>Z|[+-]\d\d:?\d\d)?")),
    ("vllm", lazy(r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|WARN) (?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<f>\d+))?")),
    ("glog", lazy(r"\[?[IWEF](?P<mo>\d\d?)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<f>\d+))?")),
)

_HMS = lazy(r"\d\d:\d\d:\d\d")

# A log header at the start of the content: timestamp and/or level and/or a [file:line] tag.
_HEADER = lazy(
    r"(?:"
    # vLLM: `ERROR 03-06 06:49:30 [core.py:123] `, and before 0.8 `ERROR 03-13 16:32:15 worker_base.py:574] `; a CI
    # runner's, `docker logs -t`'s or `kubectl logs --timestamps`' time may stand before it (`[2025-05-20T10:47:04Z] `)
    r"(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]? )?"
    r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:\[[^\]]*\]|[\w.]+:\d+\]) ?"
    r"|\[?[IWEF]\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)? +\d+ [^\]]*\] ?"  # glog / torch
    r"|\[NeMo [DIWEC] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [\w.]+:\d+\] ?"  # NeMo: `[NeMo W 2024-05-01 10:00:00 nemo_logging:349] `
    r"|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?:\s*(?:\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\]?)(?:\s*\[[^\]]*\])?(?:\s+[\w.]+:)?)? ?"
    # loguru's `2026-04-16 14:23:34.047 | ERROR    | xinference.core.worker:launch:12 - `, FastChat's
    # `2024-02-08 09:56:23 | ERROR | stderr | ` and a collector's bare `2026-04-16 14:23:34.047 | ` before each line
    r"(?:\| (?:(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL) *\| (?:[\w.<>]+:[\w.<>]+:\d+ - |[\w.<>-]+ *\| )?)?)?"
    r")"
)
_TAG = lazy(r"\[[^\]]*\]")
_LEAD = lazy(LEAD)
# the rank a process prefix names: `(VllmWorker rank=2 pid=5)`, and vLLM's title by tensor-parallel rank alone
# `(VllmWorker TP1 pid=721)`, where the TP rank is the worker's rank (a title that joins ranks, `VllmWorker PP1_TP0`,
# `Worker_TP1`, is named by its pid)
_RANK_IN_PREFIX = lazy(r"[ (,](?:rank=|TP)(\d+)[ ,]")


@dataclass(slots=True)
class Line:
    """One log line, split into its parts."""

    raw: str  # after ANSI / \r handling
    content: str  # after worker prefix removal (still with the log header)
    body: str  # after the log header too
    stream: Stream | None  # reassembly key: lines of one stream belong together (None: no prefix)
    worker: str | None
    header: str  # the log header text ('' when none)
    prefix_kind: str | None
    unit: str | None = None
    time_override: str | None = None
    line_override: int | None = None


# Colour codes as a paste keeps them: written in caret notation (`^[[0;36m`, what `cat -v` and `less` show), or
# without their ESC byte (`[2m[36m(RayTrainWorker pid=5)[0m `, a web page drops the control character). The caret
# form is unambiguous; a bare one is read as colour only at a line's start (after a bracketed timestamp at most),
# where it stands before a worker prefix, and then every bare code on that line is colour
_CARET_ESC = "^[["
# ... or as syslog escapes a control character (rsyslog's `#033`, journald forwarded to a file): `#033[1;36m(VllmWorker
# TP2 pid=415)#033[0;0m ERROR ...`
_SYSLOG_ESC = "#033["
_BARE_SGR_AT_START = lazy(r"(?:\[[^\]\n]{1,40}+\] ?)?\[[0-9;]{0,16}+m(?!\])")
_BARE_SGR = lazy(r"\[[0-9;]{0,16}+m(?!\])")


def clean(raw: str) -> str:
    """Remove ANSI escapes and keep what a terminal shows after carriage returns."""
    if _CARET_ESC in raw:
        raw = raw.replace(_CARET_ESC, "\x1b[")
    if _SYSLOG_ESC in raw:
        raw = raw.replace(_SYSLOG_ESC, "\x1b[")
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    elif raw[:1] == "[" and _BARE_SGR_AT_START.match(raw):
        raw = _BARE_SGR.sub("", raw)
    raw = raw.rstrip("\r")
    if raw.endswith("#015"):  # syslog's escape of the carriage return a line ended with
        raw = raw[:-4]
    if "\r" in raw:
        parts = [p for p in raw.split("\r") if p.strip()]
        raw = parts[-1] if parts else ""
    return raw


# split_line's answers for recent lines: a log repeats its failures' lines word for word (a traceback's frames,
# `Traceback (most recent call last):`), and a Line is never changed once made, so one Line serves every copy
_SPLIT_MEMO: dict[str, Line] = {}
_SPLIT_MEMO_MAX = 2048  # lines kept (then the memo starts again empty)
_SPLIT_MEMO_LEN = 400  # longer lines are not kept


def split_line(raw: str) -> Line:
    """A line split into its parts: colour codes and carriage returns handled, worker prefix and log header
    taken off (Line)."""
    got = _SPLIT_MEMO.get(raw)
    if got is not None:
        return got
    ln = _split_line(raw)
    if len(raw) <= _SPLIT_MEMO_LEN:
        if len(_SPLIT_MEMO) >= _SPLIT_MEMO_MAX:
            _SPLIT_MEMO.clear()
        _SPLIT_MEMO[raw] = ln
    return ln


def _split_line(raw: str) -> Line:
    text = clean(raw)
    content = text
    stream: Stream | None = None
    worker: str | None = None
    kind: str | None = None
    unit = tov = None
    lov: int | None = None
    if "[" in content or "pid=" in content:
        lead = _LEAD.match(content)
        if lead is not None:  # a timestamp, a host or a paste's line number before a rank prefix
            content = content[lead.end():]
            tov = parse_time(lead.group(0))
    for _ in range(2):
        first = content[:1]
        guard = _GUARD_BY_FIRST.get(first, _GUARD_ANY)
        if guard is not None and guard.match(content) is None:
            break  # no prefix starts this line
        for k, rx in _PREFIX_BY_FIRST.get(first, _PREFIX_ANY):
            m = rx.match(content)
            if not m:
                continue
            if k == "jsonl":
                worker = m["w"] or None
                unit = m["u"] or None
                tov = m["t"] or None
                lov = int(m["l"])
                stream = Stream("w", worker) if worker else None
            elif kind == "jsonl":
                # a prefix inside a JSON record's message: a sub-stream of the record's worker
                parent = stream or Stream("", "")
                stream = Stream(parent.kind, parent.id, (m.groupdict().get("name") or k, m["w"]))
            elif k == "ray" and m.groupdict().get("name"):
                # a Ray actor's pid names a worker, and so does a vLLM worker's rank (`VllmWorker rank=2 pid=5`);
                # a helper process of one worker (vLLM's EngineCore, a DataLoader) is only a stream of its own
                stream = Stream(m["name"], m["w"])
                rank = _RANK_IN_PREFIX.search(m.group(0))
                worker = rank.group(1) if rank else m["w"] if RAY_WORKER_NAME.search(m["name"]) else None
            elif kind == "ray" and stream is not None:
                # a rank prefix inside a Ray actor's or a vLLM process's (`(RayTrainWorker pid=5) [rank0]:`): the
                # rank names the worker, the lines stay the process's own stream
                stream = Stream(stream.kind, stream.id, (k, m["w"]))
                rank = _RANK_IN_PREFIX.search(m.group(0)) if k == "ray" else None
                worker = rank.group(1) if rank else m["w"]
            elif k == "host" and kind in RANK_KINDS:
                pass  # a process's own prefix inside a rank's (`[1,3]<stdout>:node01:2345:2400 [3] NCCL INFO`,
                # `[rank0]:[node01:04211] Signal: ...`): the rank names the worker
            elif m.groupdict().get("host"):
                worker = f"{m['host']}:{m['w']}"
                stream = Stream(k, worker)
            else:
                stream = Stream(k, m["w"])
                worker = m["w"]
            kind = kind or k
            content = content[m.end():]
            break
        else:
            break
    hm = _HEADER.match(content)
    header = hm.group(0) if hm else ""
    body = content[len(header):] if header else content
    return Line(text, content, body, stream, worker, header, kind, unit, tov, lov)


def header_tag(header: str) -> str:
    """The part of a header that stays the same for every line of one multi-line record."""
    if not header:
        return ""
    tags = _TAG.findall(header)
    return tags[-1] if tags else ""


def parse_time(text: str, year: int | None = None) -> str | None:
    """The first timestamp in a line as ISO-8601 UTC, or None."""
    c = text.find(":")
    if c < 0 or text.find(":", c + 1) < 0 or not _HMS.search(text):
        return None  # every timestamp form has its hh:mm:ss (two colons: a substring test before the search)
    for kind, rx in _TS_PATTERNS:
        m = rx.search(text)
        if not m:
            continue
        g = m.groupdict()
        try:
            y = int(g["y"]) if g.get("y") else (year or datetime.now(timezone.utc).year)
            frac = (g.get("f") or "0")[:6].ljust(6, "0")
            dt = datetime(y, int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"]), int(frac))
        except (ValueError, TypeError):
            continue
        z = g.get("z")
        if z and z != "Z":
            sign = 1 if z[0] == "+" else -1
            hh, mm = int(z[1:3]), int(z[-2:])
            from datetime import timedelta

            dt = dt - sign * timedelta(hours=hh, minutes=mm)
        # what dt.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" writes, without strftime's cost
        return (f"{dt.year}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}."
                f"{dt.microsecond // 1000:03d}Z")
    return None


# --------------------------------------------------------------------------- masking

# Ordered masking rules, Drain3 style: (regex, mask). Earlier rules win.
MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy(r"\d{4}-\d\d-\d\d[T _]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<TIME>"),
    (lazy(r"\d\d:\d\d:\d\d(?:\.\d+)?"), "<TIME>"),
    (lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"), "<UUID>"),
    (lazy(r"0x[0-9a-fA-F]+"), "<HEX>"),
    (lazy(r"(?:[A-Za-z]:)?(?:/[\w.@+~-]+)+/?|(?:[A-Za-z]:\\[\w.\\ -]+)"), "<PATH>"),
    (lazy(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?"), "<IP>"),
    (lazy(r"[0-9a-fA-F]{12,}"), "<HEX>"),
    (lazy(r"(?:pid|PID|rank|Rank|RANK|tid|worker|gpu|GPU|device|cuda)[ =:_]?\d+"), "<ID>"),
    (lazy(r"[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?"), "<NUM>"),
)


# For each rule of MASKS, strings one of which any text it changes holds (None: no such test): a rule whose
# strings the text lacks is not run (same result, without a regex pass)
_MASK_NEEDS: tuple[tuple[str, ...] | None, ...] = ((":",), (":",), ("-",), ("0x",), ("/", "\\"), (".",), None, None, None)


def mask(text: str) -> str:
    for (rx, rep), needs in zip(MASKS, _MASK_NEEDS):
        if needs is None or any(n in text for n in needs):
            text = rx.sub(rep, text)
    return " ".join(text.split())


_MASKED: dict[str, str] = {}  # mask() of recent key lines: a repeated failure's key line is often word for word the same
_MASKED_KEEP = 4096  # lines of at most _SPLIT_MEMO_LEN characters (3 MB at most): a storm's key lines fit


def _masked(line: str) -> str:
    got = _MASKED.get(line)
    if got is None:
        got = mask(line)
        if len(line) <= _SPLIT_MEMO_LEN:
            if len(_MASKED) >= _MASKED_KEEP:
                _MASKED.clear()
            _MASKED[line] = got
    return got


def fingerprint(lines: list[str]) -> str:
    """A stable hash of masked key lines: repeats of one failure share it."""
    template = "\n".join(_masked(x) for x in lines if x.strip())
    return hashlib.sha1(template.encode("utf-8", "replace")).hexdigest()[:12]
