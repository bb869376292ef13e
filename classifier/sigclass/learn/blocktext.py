"""What the learned model reads: a failure block as normalised, masked text.

Kept free of scikit-learn so that inference with the compact model (and the
scanner's lazy learned callback) never imports it.
"""

from __future__ import annotations

import re
from typing import Sequence

from sigclass.ledger.context import STATE_FACTS
from sigclass.text.lines import MASKS

ABSTAIN = ("clean", "unknown")

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line \d+, in (?P<fn>\S+)')
_SITE = re.compile(r"(?:site|dist)-packages/")
_CARET = re.compile(r"^[\s^~]*$")
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure))\b:?")
# headers the reader leaves on a body: vLLM's 'ERROR 12-01 10:00:00 engine.py:12]', Ray's '(Actor pid=1, ip=...)',
# torchrun's '[rank3]:' / '[default0]:' worker tags
_PREFIX = re.compile(r"^(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.-]+:\d+\] ?"
                     r"|\(\w+ pid=\d+(?:, ip=[\d.]+)?\) ?|\[(?:rank|default)\d+\]: ?)+")
# the chained cause: a traceback printed while another was handled, or the one that directly caused it
_CHAIN = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
# exit codes and signal numbers say what killed a process ('exitcode: -9', 'exit code 137'): kept, not masked
_EXIT = re.compile(r"\b(exit ?code|exit status|returncode|return code|signal)\s*[:=]?\s*(-?\d{1,3})\b", re.IGNORECASE)
# the shared masks, except that a digit glued to a name is part of the name ('urllib3', 'sm_90', 'H100')
_MASKS = tuple((rx, rep) for rx, rep in MASKS if rep != "<NUM>") + (
    (re.compile(r"(?<![A-Za-z_\d])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?"), "<NUM>"),)


def strip_prefix(line: str) -> str:
    """A line without the log headers the reader leaves on a body (vLLM's, Ray's, torchrun's)."""
    return _PREFIX.sub("", line)


def exception_match(line: str) -> re.Match[str] | None:
    """The exception type at the start of a line (`ValueError: ...`, `torch.OutOfMemoryError`), or None."""
    return _EXC.match(line)


def _frame_line(m: re.Match[str]) -> str:
    path = m["path"].replace("\\", "/")
    tail = _SITE.split(path)[-1]
    parts = [p for p in tail.split("/") if p and p != "."]
    mod = ".".join(parts[-3:]).removesuffix(".py") if parts else "PATH"
    return f"at {mod} in {m['fn']}"


# What killed a process, from the conventions every launcher follows: Python's subprocess and torchelastic
# report a death by signal N as exit code -N, a shell as 128+N ('exitcode: -9', 'exit code 137',
# 'Signal 11', 'SIGSEGV'). The same death prints differently per launcher; one token per signal unifies them.
_SIGNALS = {2: "INT", 6: "ABRT", 7: "BUS", 9: "KILL", 11: "SEGV", 15: "TERM"}
_SIGNAME = re.compile(r"\bSIG(INT|ABRT|BUS|KILL|SEGV|TERM)\b")


# ... or by the signal's description (C's strsignal): PyTorch's DataLoader says 'worker (pid N) is killed by
# signal: Bus error.', a shell 'Segmentation fault (core dumped)'
_STRSIGNAL = {"Killed": "KILL", "Segmentation fault": "SEGV", "Bus error": "BUS", "Terminated": "TERM", "Aborted": "ABRT"}
_BY_NAME = re.compile(r"\bby signal:? (Killed|Segmentation fault|Bus error|Terminated|Aborted)\b"
                      r"|(?<![\w])(Segmentation fault|Bus error|Aborted) \(core dumped\)")


def _signals(line: str) -> list[str]:
    out = []
    for m in _EXIT.finditer(line):
        n = int(m[2])
        if m[1].lower() == "signal" and n in _SIGNALS:
            out.append(_SIGNALS[n])
        elif n < 0 and -n in _SIGNALS:
            out.append(_SIGNALS[-n])
        elif n > 128 and n - 128 in _SIGNALS and m[1].lower() != "signal":
            out.append(_SIGNALS[n - 128])
    out.extend(_SIGNAME.findall(line))
    out.extend(_STRSIGNAL[m[1] or m[2]] for m in _BY_NAME.finditer(line))
    return out


# Where a path points says what failed when the message is the same: `No space left on device` under /dev/shm is
# shared memory, elsewhere a disk. The path is masked, but a system location at its start (the filesystem
# hierarchy's top folders, and the device or kernel folder under /dev, /proc, /sys) stays as a token
# (`pathin_dev_shm`); a user's or a project's folders say nothing about the failure and stay masked.
_SYS_PATH = re.compile(r"(?<![\w.~-])/(dev|proc|sys|tmp|var|run|mnt|usr|opt|home|root|etc|lib|data|scratch)\b(?:/([A-Za-z][\w-]*))?")
_SECOND = frozenset({"dev", "proc", "sys", "run", "var"})


def path_kinds(line: str) -> list[str]:
    """Tokens for the system locations a line's absolute paths start at ('/dev/shm/x' -> pathin_dev_shm)."""
    out = []
    for m in _SYS_PATH.finditer(line):
        top, sub = m[1], m[2]
        out.append(f"pathin_{top}_{sub.replace('-', '_')}" if sub and top in _SECOND else f"pathin_{top}")
    return list(dict.fromkeys(out))


# a count out of a total ('[Retry 1/5]', 'step 300/1000') is two numbers, not a number and a path
_RATIO = re.compile(r"(?<![\w./])\d+/\d+(?![\w/])")


def _mask(line: str, kinds: bool = False) -> str:
    """`sigclass.text.lines.mask` for the model: exit codes, signal numbers and digits of names kept (with
    ``kinds``, the system locations of its paths added as tokens, `path_kinds`, and a ratio read as numbers)."""
    extra = path_kinds(line) if kinds else []
    line = _EXIT.sub(lambda m: f"{m[1].lower().replace(' ', '')}_{m[2].replace('-', 'neg')}", line)
    if kinds:
        line = _RATIO.sub("<NUM>/<NUM>", line)
    for rx, rep in _MASKS:
        line = rx.sub(rep, line)
    return " ".join(line.split() + extra)


FACT_MARK = "\x1ffacts"


def block_input(bodies: Sequence[str], facts: dict[str, str] | None = None) -> str:
    """What the model reads for one block: its lines, then the source's facts as tokens on a marked line."""
    text = "\n".join(bodies)
    facts = {k: v for k, v in (facts or {}).items() if k not in STATE_FACTS}
    if facts:
        toks = []
        for name, value in sorted(facts.items()):
            toks.append(f"fact_{name}")
            toks.extend(f"fact_{name}_{w}" for w in re.findall(r"[A-Za-z0-9]+", str(value)) if not w.isdigit())
        text += f"\n{FACT_MARK} " + " ".join(toks)
    return text


# an identifier's words: CamelCase humps, acronyms and snake_case parts ('OutOfMemoryError' -> out of memory
# error, 'CUDA_ERROR_OUT_OF_MEMORY' -> cuda error out of memory, 'NCCLWatchdogTimeout' -> nccl watchdog timeout)
_IDENT = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b")
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def ident_words(line: str) -> str:
    """The words of a line's compound identifiers, lower-cased and space-separated ('' when it has none)."""
    out: list[str] = []
    for m in _IDENT.finditer(line):
        parts = [w.lower() for chunk in m[0].split("_") for w in _HUMP.findall(chunk) if not w.isdigit()]
        if len(parts) > 1:
            out.extend(parts)
    return " ".join(out)


def normalise_block(text: str, *, max_lines: int = 160, repeat_exceptions: int = 1, facts: bool = True,
                    signals: bool = False, frames: str = "all", split_words: str = "none",
                    last_exception: int = 0, path_kinds: bool = False, code: str = "all") -> str:
    """One block (its lines joined by newlines) as masked text: frames shortened, volatile tokens masked.

    The exception lines (type and message) are repeated ``repeat_exceptions`` times for weight, and each
    exception type also becomes a token: ``exc_<Type>`` for the last one raised, ``cause_<Type>`` for one
    that led to it (a chained traceback), so a generic wrapper does not hide the error that caused it.
    ``frames``: traceback frames (shortened to ``at pkg.module in fn``) are kept ``all``, only the ``last``
    (innermost) one before each exception line, or ``none``; the source lines under them stay either way.
    With ``signals``, a process's death by a signal, however the launcher printed it, also becomes a token
    (``killsig_KILL`` for 'exitcode: -9', 'exit code 137', 'Signal 9' or 'SIGKILL').
    ``split_words``: the words of compound identifiers (`ident_words`) are added on a line of their own, for
    the exception lines (``exc``), every line (``all``) or ``none``: the same nouns carry across stacks that
    spell them `OutOfMemoryError`, `out of memory` or `CUDA_ERROR_OUT_OF_MEMORY`. ``last_exception``: the
    last exception line of the block (the end of a chain, the error itself) is repeated that many more times.
    ``path_kinds``: the system locations that paths start at become tokens (`path_kinds`).
    ``code``: the source lines a traceback prints under its frames are kept ``all``, only the innermost one
    of each traceback (the statement that raised, ``last``), or ``none``.
    """
    out: list[str] = []
    sigs: dict[str, None] = {}
    frame_at: list[int] = []  # where frame lines are in `out`
    code_at: list[int] = []  # where the source lines under frames are in `out`
    outer: set[int] = set()  # ... those followed by another frame (not the innermost of their traceback)
    after_frame = False
    keep: set[int] = set()  # with frames="last", the innermost frame of each exception
    exc: list[str] = []
    types: list[str] = []
    fact_line = ""
    lines = text.splitlines()
    if lines and lines[-1].startswith(FACT_MARK):
        fact_line = lines.pop()[len(FACT_MARK):].strip()
    if len(lines) > max_lines:
        half = max_lines // 2
        lines = lines[:half] + lines[-half:]
    for raw in lines:
        raw = _PREFIX.sub("", raw[:1000])
        if not raw.strip() or _CARET.match(raw):
            continue
        m = _FRAME.match(raw)
        if m:
            if code_at and code_at[-1] == len(out) - 1:
                outer.add(code_at[-1])
            after_frame = True
            if frames != "none":
                frame_at.append(len(out))
                out.append(_mask(_frame_line(m)))
            continue
        s = _mask(raw, path_kinds)
        if after_frame and raw[:1] in (" ", "\t") and not _EXC.match(raw.strip()):
            code_at.append(len(out))
        after_frame = False
        out.append(s)
        if signals:
            sigs.update(dict.fromkeys(_signals(raw)))
        if _CHAIN.match(raw):
            out.append("chained_exception")
        e = _EXC.match(raw.strip()) if raw[:1] not in (" ", "\t") else None
        if e:
            exc.append(s)
            types.append(e["type"].rsplit(".", 1)[-1])
            if frame_at and frames == "last":
                keep.add(frame_at[-1])
    drop = set(frame_at) - keep if frames == "last" else set()
    if code != "all":
        drop |= outer if code == "last" else set(code_at)
    if drop:
        out = [x for i, x in enumerate(out) if i not in drop]
    if repeat_exceptions and exc:
        out.extend(exc[-3:] * repeat_exceptions)
    if last_exception and exc:
        out.extend(exc[-1:] * last_exception)
    if split_words != "none":
        words = [ident_words(x) for x in (exc if split_words == "exc" else out)]
        if any(words):
            out.append("idw " + " ".join(w for w in words if w))
    if types:
        out.append(" ".join([f"cause_{t}" for t in dict.fromkeys(types[:-1]) if t != types[-1]] + [f"exc_{types[-1]}"]))
    if sigs:
        out.append(" ".join(f"killsig_{x}" for x in sigs))
    if facts and fact_line:
        out.append(fact_line)
    return "\n".join(out)


def exception_view(doc: str) -> str:
    """The exception lines of a normalised block (type and message, and the exc_/cause_ token line): what
    the character n-grams of the exception features read. A block that raised nothing reads as a whole."""
    lines = [x for x in doc.split("\n") if _EXC.match(x) or x.startswith(("exc_", "cause_"))]
    return "\n".join(lines) if lines else doc


# huggingface_hub's http_backoff (utils/_http.py) logs "Retrying in {sleep_time}s [Retry {nb_tries}/{max_retries}]."
# after a failed request and raises the error itself only once the retries are spent: a block that ends with
# the announcement is a request still being retried, which may yet succeed, not the failure
_RETRY_PENDING = re.compile(r"Retrying in \d+(?:\.\d+)?s \[Retry \d+/\d+\]\.?\s*$")


def retry_pending(text: str) -> bool:
    """Whether a block (as `block_input` gives it) ends with a library's announcement that it will retry."""
    last = next((x for x in reversed(text.splitlines()) if x.strip() and not x.startswith(FACT_MARK)), "")
    return bool(_RETRY_PENDING.search(last[-200:]))


def decide(proba_row, classes: Sequence[str], threshold: float) -> tuple[str, float] | None:
    """The family for one row of probabilities, or None to abstain (an abstain label, or below threshold)."""
    k = int(proba_row.argmax())
    label, p = str(classes[k]), float(proba_row[k])
    if label in ABSTAIN or p < threshold:
        return None
    return label, p
