"""Reading log sources as newline-aligned blocks of bytes, in constant memory.

Plain files, .gz and .zst, stdin and pipes. Lines longer than ``MAX_LINE``
are cut (the head is kept) so that a 200 MB line costs no more memory than a
short one. A pipe that goes quiet yields ``IDLE`` so the scanner can close a
failure block that has ended while the writer still holds the pipe open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import gzip
import io
import os
import select
import stat
from typing import BinaryIO, Iterator
import zlib

from sigclass.errors import InputError
from sigclass.text.lazyre import lazy
from sigclass.text.safe import name as _shown
from sigclass.text.prefixes import jsonl_prefix

BLOCK = 4 << 20  # bytes per block handed to the prefilter
MAX_LINE = 64 << 10  # longest line kept; the rest of a longer line is dropped
# decompressed bytes with no line break after which a compressed file is read no further: a log's longest lines are
# megabytes, while a decompression bomb (a few MB of gzip of NUL bytes) inflates to terabytes of one "line"
NO_BREAK_LIMIT = 1 << 30
IDLE_SECONDS = 0.3
LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".jsonl")
COMPRESSED = (".gz", ".zst")


class Idle:
    """Sentinel: nothing arrived on a live pipe for IDLE_SECONDS."""


IDLE = Idle()


@dataclass
class SourceState:
    """What the reader learnt about a source while reading it."""

    name: str
    problems: list[str] = field(default_factory=list)
    cut_lines: int = 0
    binary: bool = False
    bytes_read: int = 0
    live: bool = False


def is_log_name(name: str) -> bool:
    base = name
    for suf in COMPRESSED:
        if base.endswith(suf):
            base = base[: -len(suf)]
            break
    return base.endswith(LOG_SUFFIXES)


def _open_raw(path: str) -> BinaryIO:
    if path == "-":
        return os.fdopen(os.dup(0), "rb", buffering=0)
    p = path
    path = _shown(path)  # for messages
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; check the path") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied; make it readable") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc}); check the path") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory; use `sigclass runs {path}` for a run directory")
    try:
        return open(p, "rb", buffering=0)
    except PermissionError:
        raise InputError(f"{path}: permission denied; make it readable") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None


class _ZstdFrames:
    """Follows the frame and block headers of a zstd stream as its bytes go by (the layout of RFC 8878),
    so that a stream which stops inside a frame is known to be truncated. Block contents are skipped by
    length, so the work is per block (at most 128 KiB of output each), not per byte."""

    ZSTD_MAGIC = 0xFD2FB528

    def __init__(self) -> None:
        self.state = "magic"  # magic | skippable | fhd | fheader | block
        self.want = 4  # header bytes the state needs
        self.head = b""
        self.skip = 0  # content bytes still to pass over
        self.after_skip = "magic"
        self.checksum = False
        self.lost = False  # not a zstd stream: the decompressor reports it

    @property
    def complete(self) -> bool:
        """True when the bytes so far end at a frame boundary."""
        return self.lost or (self.state == "magic" and not self.head and not self.skip)

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n and not self.lost:
            if self.skip:
                k = min(self.skip, n - i)
                self.skip -= k
                i += k
                if not self.skip:
                    self.state, self.want = self.after_skip, 4 if self.after_skip == "magic" else 3
                continue
            take = min(self.want - len(self.head), n - i)
            self.head += data[i:i + take]
            i += take
            if len(self.head) == self.want:
                head, self.head = self.head, b""
                self._step(head)

    def _step(self, h: bytes) -> None:
        if self.state == "magic":
            magic = int.from_bytes(h, "little")
            if magic == self.ZSTD_MAGIC:
                self.state, self.want = "fhd", 1
            elif magic & 0xFFFFFFF0 == 0x184D2A50:
                self.state, self.want = "skippable", 4
            else:
                self.lost = True
        elif self.state == "skippable":
            self._skip(int.from_bytes(h, "little"), "magic")
        elif self.state == "fhd":
            fhd = h[0]
            single = (fhd >> 5) & 1
            self.checksum = bool((fhd >> 2) & 1)
            rest = (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fhd >> 6]
            self.state, self.want = ("fheader", rest) if rest else ("block", 3)
        elif self.state == "fheader":
            self.state, self.want = "block", 3
        elif self.state == "block":
            hdr = int.from_bytes(h, "little")
            last, kind, size = hdr & 1, (hdr >> 1) & 3, hdr >> 3
            if kind == 3:
                self.lost = True
                return
            nxt = ("checksum" if self.checksum else "magic") if last else "block"
            if nxt == "checksum":
                # the 4-byte checksum is content to pass over as well
                self._skip((1 if kind == 1 else size) + 4, "magic")
            else:
                self._skip(1 if kind == 1 else size, nxt)

    def _skip(self, n: int, then: str) -> None:
        self.after_skip = then
        if n:
            self.skip = n
        else:
            self.state, self.want = then, 4 if then == "magic" else 3


class _Tee:
    """A binary reader that shows every byte it reads to a callback."""

    def __init__(self, raw: BinaryIO, see) -> None:
        self._raw, self._see = raw, see

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        if data:
            self._see(data)
        return data


class _Zstd(io.RawIOBase):
    """Streaming zstd across frames in bounded memory: each read decompresses at most what it returns
    (zstandard's stream reader), and a stream that stops inside a frame raises EOFError, like gzip."""

    def __init__(self, raw: BinaryIO) -> None:
        import zstandard

        self._frames = _ZstdFrames()
        self._reader = zstandard.ZstdDecompressor().stream_reader(
            _Tee(raw, self._frames.feed), read_size=1 << 17, read_across_frames=True, closefd=False)

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        out = self._reader.read(n if n and n > 0 else 1 << 16)
        if not out and not self._frames.complete:
            raise EOFError("zstd frame is truncated")
        return out

    read = read1

    def close(self) -> None:
        self._reader.close()
        super().close()


class _Owning(io.RawIOBase):
    """A decompressing reader that also closes the file under it."""

    def __init__(self, inner, raw: BinaryIO) -> None:
        self._inner, self._raw = inner, raw

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        return self._inner.read(n)

    def read1(self, n: int = -1) -> bytes:
        r1 = getattr(self._inner, "read1", None)
        return r1(n) if r1 is not None else self._inner.read(n)

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()
        super().close()


def open_source(path: str) -> BinaryIO:
    """A binary stream of the decompressed content of a path ('-' is stdin)."""
    raw = _open_raw(path)
    name = path.lower()
    head = b""
    if path != "-":
        try:
            head = os.pread(raw.fileno(), 4, 0)
        except OSError:
            head = b""
    # the first bytes say whether a file is compressed; its name only when they cannot be read (a plain log
    # renamed x.log.gz is read as plain text)
    if head[:2] == b"\x1f\x8b" or (not head and name.endswith(".gz")):
        return _Owning(gzip.GzipFile(fileobj=raw, mode="rb"), raw)  # type: ignore[return-value]
    if head == b"\x28\xb5\x2f\xfd" or (not head and name.endswith(".zst")):
        return _Owning(_Zstd(raw), raw)  # type: ignore[return-value]
    return raw


def decompressed_over(path: str, limit: int) -> bool:
    """True when a compressed file holds more than `limit` bytes once decompressed. Reads at most limit + 1
    bytes of output, in bounded memory; a plain file, or one that cannot be decompressed, is False (the
    scan reports what is wrong with it)."""
    try:
        stream = open_source(path)
    except InputError:
        return False
    try:
        if isinstance(stream, io.FileIO):
            return False
        total = 0
        while total <= limit:
            piece = stream.read1(min(1 << 20, limit + 1 - total))
            if not piece:
                return False
            total += len(piece)
        return True
    except Exception:  # noqa: BLE001 - a broken stream is the scan's to report
        return False
    finally:
        stream.close()


_NUL_RUN = lazy(rb"\x00{32,}")
_NOT_CONTROL = bytes(range(32, 256)) + bytes((9, 10, 12, 13, 27))


def looks_binary(sample: bytes) -> bool:
    """True for content that is not text: NUL bytes, many control characters, or mostly bytes that are not
    UTF-8 (compressed or random data under a log's name)."""
    if not sample:
        return False
    if sample.count(b"\x00") > max(1, len(sample) // 1000):
        # NUL bytes in long runs are a hole in a text file (the unwritten blocks a node's crash leaves at the end of
        # its log, a logrotate copytruncate), not binary content: the text around them decides
        rest = _NUL_RUN.sub(b"", sample)
        if not rest or rest.count(b"\x00") > max(1, len(rest) // 1000):
            return True
        sample = rest
    head = sample[:4096]
    ctrl = len(head.translate(None, _NOT_CONTROL))  # control bytes other than tab, newline, form feed, CR, ESC
    if ctrl > len(head) * 0.1:
        return True
    if head.isascii():
        return False
    not_utf8 = len(head) - len(head.decode("utf-8", "ignore").encode("utf-8"))
    return not_utf8 > len(head) * 0.3


def _is_pipe(stream: BinaryIO) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _regular_size(stream: BinaryIO) -> int | None:
    """The size of a plain regular file being read (None for pipes, devices and decompressed streams)."""
    if not isinstance(stream, io.FileIO):
        return None
    try:
        st = os.fstat(stream.fileno())
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _check_shrink(stream: BinaryIO, state: SourceState, size0: int | None) -> None:
    """Say so when a plain file ended before the size it had when it was opened (it was cut while read)."""
    if size0 is None or state.bytes_read >= size0:
        return
    now = _regular_size(stream)
    state.problems.append(f"{state.name}: the file shrank while it was read ({size0} bytes when opened, "
                          f"{state.bytes_read if now is None else now} now); findings after the cut are missing")


def _raw_reads(stream: BinaryIO, state: SourceState, live: bool) -> Iterator[bytes | Idle]:
    fd = stream.fileno() if live else -1
    size0 = None if live else _regular_size(stream)
    while True:
        if live:
            ready, _, _ = select.select([fd], [], [], IDLE_SECONDS)
            if not ready:
                yield IDLE
                continue
            data = os.read(fd, BLOCK)
            while data and len(data) < BLOCK and select.select([fd], [], [], 0)[0]:
                more = os.read(fd, BLOCK - len(data))
                if not more:
                    yield data
                    return
                data += more
        else:
            data, fault = _read_block(stream)
            if fault:
                if data:
                    state.bytes_read += len(data)
                    yield data
                state.problems.append(f"{state.name}: {fault}")
                return
        if not data:
            _check_shrink(stream, state, size0)
            return
        state.bytes_read += len(data)
        yield data


def _read_block(stream: BinaryIO) -> tuple[bytes, str | None]:
    """Up to BLOCK bytes; on a broken stream, what was read before the break and why it broke."""
    if isinstance(stream, io.FileIO):
        try:
            return stream.read(BLOCK) or b"", None
        except OSError as exc:
            return b"", f"read failed ({exc.strerror or exc}); findings before it are kept"
    parts: list[bytes] = []
    size = 0
    read = getattr(stream, "read1", None) or stream.read
    try:
        while size < BLOCK:
            piece = read(min(1 << 16, BLOCK - size))
            if not piece:
                break
            parts.append(piece)
            size += len(piece)
    except EOFError:
        return b"".join(parts), "compressed stream is truncated; findings before the cut are kept"
    except (OSError, zlib.error) as exc:
        return b"".join(parts), f"read failed ({exc or type(exc).__name__}); findings before it are kept"
    except Exception as exc:  # zstandard.ZstdError, MemoryError and friends
        return b"".join(parts), f"cannot decompress ({exc or type(exc).__name__}); findings before it are kept"
    return b"".join(parts), None


def blocks(path: str, state: SourceState, *, live: bool | None = None) -> Iterator[Span | Idle]:
    """Newline-aligned blocks of a source. The last block may lack a final newline.

    JSON-lines sources are turned into plain lines with an internal prefix that
    carries each record's worker, unit, time and source line.
    """
    base = path.lower()
    for suf in COMPRESSED:
        if base.endswith(suf):
            base = base[: -len(suf)]
    if base.endswith(".jsonl"):
        return _jsonl_blocks(_plain_blocks(path, state, live=live))
    return _plain_blocks(path, state, live=live)


Span = tuple  # (data: bytes, start: int, end: int): process data[start:end], newline-aligned


def _plain_blocks(path: str, state: SourceState, *, live: bool | None = None) -> Iterator[Span | Idle]:
    """Spans of whole lines. Each read is handed over without copying it: the partial
    line at its head (joined with the previous read's tail) goes out as a small span of
    its own, the whole lines after it as a span of the read itself."""
    stream = open_source(path)
    try:
        if live is None:
            live = path == "-" and _is_pipe(stream) and isinstance(stream, io.FileIO)
        state.live = bool(live)
        carry = b""
        cutting = False  # inside an over-long line whose rest is being dropped
        first = True
        hole = 0  # NUL bytes before the first text
        compressed = not isinstance(stream, io.FileIO)
        since_nl = 0  # decompressed bytes since the last line break (compressed files only)
        for data in _raw_reads(stream, state, live):
            if compressed and data is not IDLE:
                nl_at = data.rfind(b"\n")
                since_nl = since_nl + len(data) if nl_at == -1 else len(data) - nl_at - 1
                if since_nl > NO_BREAK_LIMIT:
                    state.problems.append(f"{state.name}: over {NO_BREAK_LIMIT >> 30} GiB of decompressed data without "
                                          "a line break (a decompression bomb or binary data); the rest was not read, "
                                          "findings before it are kept")
                    if first and hole:
                        state.binary = True
                    return
            if data is IDLE:
                if carry and not cutting:
                    # a partial line has waited a while: hand it over (live pipes only)
                    line = carry + b"\n"
                    yield (line, 0, len(line))
                    carry = b""
                yield IDLE
                continue
            assert isinstance(data, bytes)
            if first:
                # a log cut by logrotate's copytruncate while its writer went on starts with a hole of NUL bytes
                text = data.lstrip(b"\x00")
                hole += len(data) - len(text)
                if not text:
                    continue
                data = text
                first = False
                if looks_binary(data[:8192]):
                    state.binary = True
                    state.problems.append(f"{state.name}: binary data, not a text log; skipped")
                    return
                if hole:
                    state.problems.append(f"{state.name}: starts with {hole} NUL bytes (a log emptied by logrotate "
                                          "copytruncate while its writer went on); they were skipped")
            if b"\x00" in data:
                data = data.replace(b"\x00", b"")  # a hole of NUL bytes (a crashed node's unwritten blocks) is no text
            start = 0
            if cutting:
                nl = data.find(b"\n")
                if nl == -1:
                    continue
                start = nl + 1
                cutting = False
            first_nl = data.find(b"\n", start)
            if first_nl == -1:
                if len(carry) + len(data) - start > MAX_LINE:
                    state.cut_lines += 1
                    line = (carry + data[start : start + MAX_LINE])[:MAX_LINE] + b"\n"
                    yield (line, 0, len(line))
                    carry = b""
                    cutting = True
                else:
                    carry += data[start:]
                continue
            if carry:
                line = carry + data[start : first_nl + 1]
                if len(line) > MAX_LINE + 1:
                    state.cut_lines += 1
                    line = line[:MAX_LINE] + b"\n"
                yield (line, 0, len(line))
                carry = b""
                start = first_nl + 1
            last_nl = data.rfind(b"\n")
            if last_nl + 1 > start:
                if last_nl + 1 - start > MAX_LINE // 2 and _may_have_long_line(data, start, last_nl + 1):
                    body = _cut_long_lines(data[start : last_nl + 1], state)
                    yield (body, 0, len(body))
                else:
                    yield (data, start, last_nl + 1)
            tail = data[last_nl + 1 :]
            if len(tail) > MAX_LINE:
                state.cut_lines += 1
                line = tail[:MAX_LINE] + b"\n"
                yield (line, 0, len(line))
                cutting = True
            else:
                carry = tail
        if carry and not cutting:
            yield (carry, 0, len(carry))
        if first and hole:
            state.binary = True
            state.problems.append(f"{state.name}: binary data ({hole} NUL bytes and no text), not a text log; skipped")
    finally:
        try:
            stream.close()
        except Exception:
            pass


def _may_have_long_line(data: bytes, start: int, end: int) -> bool:
    """True when some aligned window of MAX_LINE/2 bytes holds no newline (a line that
    long may exceed MAX_LINE); a handful of finds per block, stopping at the first newline."""
    w = MAX_LINE // 2
    for i in range(start, end - w + 1, w):
        if data.find(b"\n", i, i + w) == -1:
            return True
    return False


def _cut_long_lines(body: bytes, state: SourceState) -> bytes:
    out = []
    for line in body.split(b"\n"):
        if len(line) > MAX_LINE:
            state.cut_lines += 1
            line = line[:MAX_LINE]
        out.append(line)
    return b"\n".join(out)


_MSG_KEYS = ("msg", "message", "log")
_TIME_KEYS = ("ts", "time", "timestamp")
_WORKER_KEYS = ("worker", "rank", "gpu")
_UNIT_KEYS = ("shard", "unit")


def _clean_field(v: object) -> str:
    if v is None:
        return ""
    return " ".join(str(v).replace(";", ",").replace("]", ")").splitlines())[:80]  # one line, always


def _json_time(v: object) -> str:
    from sigclass.text.lines import parse_time

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        from datetime import datetime, timezone

        try:
            return datetime.fromtimestamp(float(v), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        except (OverflowError, OSError, ValueError):
            return ""
    if isinstance(v, str):
        return parse_time(v) or ""
    return ""


def _jsonl_blocks(source: Iterator[Span | Idle]) -> Iterator[Span | Idle]:
    import json

    lineno = 0
    for item in source:
        if item is IDLE:
            yield item
            continue
        data, a, b = item  # type: ignore[misc]
        buf = data[a:b]
        out: list[bytes] = []
        for raw in buf.split(b"\n"):
            if not raw and lineno and buf.endswith(b"\n"):
                continue
            lineno += 1
            rec = None
            if raw[:1] == b"{":
                try:
                    rec = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    rec = None
            if not isinstance(rec, dict):
                out.append(jsonl_prefix("", "", "", lineno) + raw)
                continue
            msg = next((rec[k] for k in _MSG_KEYS if isinstance(rec.get(k), str)), None)
            if msg is None:
                continue
            w = next((rec[k] for k in _WORKER_KEYS if rec.get(k) is not None), None)
            u = next((rec[k] for k in _UNIT_KEYS if rec.get(k) is not None), None)
            t = next((_json_time(rec[k]) for k in _TIME_KEYS if rec.get(k) is not None), "")
            pre = jsonl_prefix(_clean_field(w), _clean_field(u), t, lineno)
            proc = rec.get("process")
            if isinstance(proc, str) and "pid=" in proc:
                pre += f"({_clean_field(proc)}) ".encode("utf-8", "replace")
            for part in msg.rstrip("\n").split("\n"):
                out.append(pre + part.encode("utf-8", "replace"))
        if out:
            joined = b"\n".join(out) + b"\n"
            yield (joined, 0, len(joined))
