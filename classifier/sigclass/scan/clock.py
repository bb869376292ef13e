"""Times for findings: a line's own timestamp, else the nearest above it, else the last seen; the year from the log."""

from __future__ import annotations

from sigclass.scan.blocks import year_in
from sigclass.text.lines import Line, parse_time, split_line


class SourceClock:
    """Timestamps of one source (a part of `ScanState`)."""

    # ------------------------------------------------------------------ time
    def time_of(self, buf: bytes, ls: int, ln: Line) -> str | None:
        """The line's own timestamp, else the nearest one above it, else the last one seen."""
        if ln.time_override:
            return ln.time_override
        t = parse_time(ln.content, self.year)
        if t is not None:
            y = year_in(ln.content)
            if y:
                self.year = y
        else:
            t = self._look_back_time(buf, ls)
        if t is not None:
            self.last_time = t
        return t

    def _cur_time(self) -> str | None:
        assert self._cur is not None
        buf, ls, ln = self._cur
        return self.time_of(buf, ls, ln)

    def _look_back_time(self, buf: bytes, ls: int) -> str | None:
        end = ls - 1
        lo = self._lo
        for _ in range(30):
            if end <= lo:
                break
            start = max(buf.rfind(b"\n", lo, end) + 1, lo)
            text = buf[start:end].decode("utf-8", "replace")[:200]
            t = parse_time(text, self.year)
            if t is not None:
                y = year_in(text)
                if y:
                    self.year = y
                return t
            end = start - 1
        return self.last_time

    def _first_time_from_head(self, buf: bytes, lo: int, end: int) -> None:
        pos = lo
        for _ in range(50):
            if pos >= end:
                return
            nl = buf.find(b"\n", pos, end)
            nl = end if nl == -1 else nl
            ln = split_line(buf[pos:nl].decode("utf-8", "replace")[:300])
            t = ln.time_override or parse_time(ln.content, self.year)
            if t is not None:
                self.year = year_in(ln.content) or self.year
                self.first_time = t
                return
            pos = nl + 1

    def _update_time_from_tail(self, buf: bytes, lo: int, end: int) -> None:
        for _ in range(10):
            if end <= lo:
                return
            start = max(buf.rfind(b"\n", lo, end - 1) + 1, lo)
            text = buf[start:end].decode("utf-8", "replace")[:200]
            t = parse_time(text, self.year)
            if t is not None:
                self.year = year_in(text) or self.year
                self.last_time = t
                if self.first_time is None:
                    self.first_time = t
                return
            end = start
