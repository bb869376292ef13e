"""The verdict over one whole source, once it has ended: what the findings mean together.

- Supersedes at work: a family whose ledger entry supersedes another (tokenizer-reload-per-call over
  vllm-engine-hang) makes that family's findings in the same source its symptoms: secondary, pointing
  at it, with the superseding note as a caveat.
- Late roots: a sibling stopped from outside (process-killed-by-signal), a dead Ray worker
  (ray-actor-died) or a dead vLLM engine (vllm-engine-dead) printed before the root fault it follows (torchelastic sends SIGTERM to the siblings before printing the summary that names the failed
  rank) becomes a victim of the first root within LATE_ROOT_LINES below it; of the failures no family
  explains, only a launcher's report of the failed worker (scan/shapes.py), the traceback torchelastic's summary
  prints for a failed rank, or, after a dead Ray worker, the exception its task raised or a fatal line of the
  worker's own (a C++ unhandled exception) can be that root.
- Launcher reports: a launcher's report that a child failed, with no family of its own (torchelastic's
  ChildFailedError under torchrun or accelerate, a wrapper's `returned non-zero exit status 1`), below a root of
  that child's worker (or of no worker) tells that root's failure again: its victim. So does a relay of a remote
  task's exception (Ray's `RayTaskError(KeyError)` in the driver) below the root whose exception it repeats, and a
  failure no prefix names that repeats, word for word, the exception a worker raised just above it (vLLM's
  EngineCore re-raising a worker's error before it prefixed its lines), and one whose own words send the reader to
  the root cause above it (`Worker failed with error '...', please check the stack trace above for the root
  cause`).
- Recurrence (as findings are published): the same failure back after a quiet spell is a new episode.
- Recovered: an error (a traceback or exception line, or a log record of an error no family explains) after which
  the same worker's progress lines go on is `recovered`: shown with that status, not a failure of the run. So is
  a step report of a non-finite value (one `loss=nan` step that a loss scaler skipped) after which the worker's
  steps go on.
- Tree kills: the shell's bare `Killed` below SGLang's `Received sigquit from a child process` or Lightning's
  `Forcefully terminating all other processes to avoid zombies` (each SIGKILLs its own process tree when a child
  failed) is that teardown's kill, a victim, not the OOM killer's.
- Refused requests: an error no family names that the server answered at once with a 4xx (the request handler
  logged it, the access log's next line answered the request) is `recovered`: the server refused one request.
- Got past: a family's warning (no error line) below which one of the family's recovery rules matched (the
  engine's `init engine ... took` after shared-memory broadcast waits during a long compile) is `recovered`.
- Outlived warnings: a finding printed as a warning (a Python warning, a `WARNING` log line, a C++ library's
  warning or error record; no exception) after which the same process printed more and was then killed for
  memory is `recovered` too: the process went on past the warning, and the kill is what ended it.

Nothing already printed is withdrawn: on a live pipe these verdicts reach the final summary and the
structured outputs, which are written at the end.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from sigclass.ledger.pack import Ledger
from sigclass.records import Finding
from sigclass.scan.attribution import abort_only
from sigclass.scan.explained import startup_report_only
from sigclass.scan.overtime import quiet_spell
from sigclass.scan.shapes import bare_kill, fault_line, is_report, RAY_RELAY, request_error
from sigclass.scan.triggers import EXC_LINE, LAUNCHER_REPORT
from sigclass.text.lazyre import lazy
from sigclass.text.lines import fingerprint
from sigclass.vocab import Method, Role, Status, UNKNOWN


LATE_ROOT_LINES = 200

# victims that may be printed before the root fault they follow: a launcher stops the siblings first and
# names the failed rank after; Ray's raylet reports a dead worker before the worker's own traceback reaches
# the driver; a vLLM front end's EngineDeadError can reach the log before the EngineCore process's own traceback
# (other victim families, a watchdog timeout say, come after their root)
LATE_VICTIMS = frozenset({"process-killed-by-signal", "ray-actor-died", "vllm-engine-dead"})
# ... of which these give way only to a root the ledger named or one with an error line of its own (_telling)
LATE_ONLY_IF_TELLING = frozenset({"vllm-engine-dead"})

# torchelastic's ChildFailedError summary (`_FAILURE_FORMAT_TEMPLATE`): a failed rank's `traceback :` field holds the
# traceback of its error file when the rank recorded one (`@record`), else a signal's or the docs' hint
SUMMARY_TRACEBACK = lazy(r"^\s*traceback\s*: Traceback \(most recent call last\):")

RECOVERED_AFTER = 2  # progress lines of the same worker after an error that make it recovered

# a line of a warning: Python's warnings (`cextension.py:34: UserWarning: ...` and the source line under it),
# a logger's WARNING level, glog's W lines (`W0614 10:11:12.123456 ...`)
_WARNING = lazy(r"(?:^|[^A-Za-z])[A-Z][A-Za-z]*Warning: |^\s+(?:warnings\.)?warn\(|(?<![A-Za-z])WARNING(?![A-Za-z])"
                r"|^W\d{4} \d\d:\d\d:\d\d")
# ... and the warnings module's record alone, at a line's start (`warnings.formatwarning`: `path:lineno: category: message`)
_PY_WARNING = lazy(r"\S*\.py:\d+: [A-Za-z_][\w.]*Warning: ")
# a C++ library's log record at warning or error level that is no exception (absl's and TensorFlow's
# `2023-05-10 12:03:17.602190: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: ...`, glog's
# `E0510 12:03:17.602190 4431 file.cc:271] ...`): the library reports and goes on
_LOGGED = lazy(r"(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)?(?:: )?[WE] [\w./-]+\.(?:cc|cpp|h):\d+\] "
              r"|[WE]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+\.(?:cc|cpp|h):\d+\] ")
# the families of a kill that ends a process from outside (what a warning's process died of, not what it warned of)
_KILLS = frozenset({"host-oom-killed"})
# errors a program often catches, prints as a bare message (no exception line) and goes on past: an optional module
# it cannot import, a hub it retries, a batch size it halves after an OOM, a port it tries again
_CAUGHT_AND_PRINTED = frozenset({"import-error", "hf-hub-unreachable", "cuda-oom", "dist-port-in-use"})

# a NaN/inf value standing alone in a report line (`loss=nan`, `Loss: -inf`, `"loss": NaN`)
_NONFINITE = lazy(r"(?<![^ \t=:(\[\'\"])[-+]?(nan|NaN|NAN|inf|Inf|INF|Infinity)(?![A-Za-z0-9_.])")


def _error_end(f: Finding) -> int | None:
    """The line of the finding's last traceback or exception line (a block may run on over later lines), or None
    when its block has none (a NaN loss line or a kill is no error a run can step over)."""
    last = None
    for i, b in enumerate(f.block):
        if "Traceback (most recent call last)" in b or EXC_LINE.match(b.lstrip()):
            last = i
    # a JSON-lines record's message is one line number however many lines it holds
    return None if last is None else min(f.line + last, max(f.end_line, f.line))


def _value_report_end(f: Finding) -> int | None:
    """The line of a finding that is a step's report of a non-finite value (a match on its first line, no
    over-time rule, no error line in its block), or of the last of the steps that reported one: steps that go on
    after it make it a step the run stepped over."""
    if f.facts.get("over_time_rule") or not f.block or not _NONFINITE.search(f.block[0]):
        return None
    return max(f.line, *f.lines)  # the last step that reported one (a record of each step joins the first's finding)


def _victim_of(f: Finding, root: Finding, note: str | None = None) -> None:
    f.role = Role.SECONDARY
    f.root = root.pointer()
    if note:
        f.caveats = [note, *f.caveats]


def settle(findings: list[Finding], ledger: Ledger, progress_after: Callable[[str | None, int], int],
           recovered_after: Callable[[str, int], bool] | None = None, refused: Iterable[int] = (),
           tree_kills: Iterable[int] = ()) -> None:
    """Apply the source-wide verdicts to findings in place (they stay in line order). `refused`: the lines of a
    server's access log that answered a request with a client error (4xx); `tree_kills`: the lines of launchers' exit
    lines that say they SIGKILL their own process tree."""
    if not findings:
        return
    _supersedes(findings, ledger)
    _late_roots(findings)
    _abort_before_its_error(findings)
    _launcher_reports(findings)
    _tree_kills(findings, tree_kills)
    _refused(findings, refused)
    _recovered(findings, progress_after)
    if recovered_after is not None:
        _got_past(findings, recovered_after)
    _outlived(findings)
    _thread_outlived(findings)


def _thread_outlived(findings: list[Finding]) -> None:
    """A thread's death (threading's `Exception in thread NAME:` above its traceback) below which the same
    stream goes on to a failure of a root family is `recovered`: the process outlived the thread (Ray's log
    printer dying in restore_tqdm, then the driver's real error), and that later failure is what ended it."""
    for f in findings:
        if not f.facts.get("thread") or f.role == Role.SECONDARY or f.status == Status.RECOVERED:
            continue
        end = max(f.line, f.end_line)
        # a later failure of a root family (not a stop's report, nor an error no family explains: the main thread's
        # own error may be what the thread's death caused)
        if any(g is not f and g.line > end and g.stream == f.stream and g.role != Role.SECONDARY
               and g.family_role == Role.ROOT and g.family != UNKNOWN and g.status != Status.RECOVERED
               and not g.facts.get("thread") for g in findings):
            f.status = Status.RECOVERED


# a launcher that SIGKILLs its own process tree, itself included, once a child failed, so that the shell then prints
# `Killed`: SGLang's SIGQUIT handler (`kill_process_tree(os.getpid())`) and Lightning's child-process observer
# (`_terminate_all`: SIGKILL to every child and to the main process)
TREE_KILL = lazy(r"Received sigquit from a child proc|Forcefully terminating all other processes to avoid zombies")


def _tree_kills(findings: list[Finding], told: Iterable[int] = ()) -> None:
    """The shell's bare `Killed` below a launcher's word that it tears its process tree down (in a finding's block,
    or on the launcher's exit line: `told`) is that teardown's kill, not the OOM killer's: a victim of the failure
    the teardown follows (or, with none found, of nothing: the launcher's exit line names the worker that failed)."""
    tellers = [f for f in findings if any(TREE_KILL.search(b) for b in f.block)]
    lines = [*told, *(f.line for f in tellers)]
    if not lines:
        return
    first = min(lines)
    told_by = {id(g) for g in tellers}
    for f in findings:
        if f.line <= first or f.role == Role.SECONDARY or not bare_kill(f):
            continue
        above = [g for g in reversed(findings) if g.line < f.line and g is not f and g.status != Status.RECOVERED]
        root = next((g for g in above if g.role == Role.ROOT), None)
        teller = next((g for g in above if id(g) in told_by), None)
        f.role = Role.SECONDARY
        if teller is not None and teller.role == Role.SECONDARY and teller.root:
            f.root = teller.root
        elif root is not None:
            f.root = root.pointer()
        else:
            f.root = None


REFUSED_WITHIN = 3  # lines: a request's answer follows the handler's logged error at once


def _refused(findings: Iterable[Finding], refused: Iterable[int]) -> None:
    """An error no family names that the server answered at once with a client error (its handler logged the
    ValueError of an over-long prompt, then `"POST /v1/chat/completions HTTP/1.1" 400 Bad Request`): a request it
    refused, after which it goes on serving. `recovered`, not a failure of the run."""
    answered = sorted(set(refused))
    if not answered:
        return
    for f in findings:
        if f.family != UNKNOWN or f.role == Role.SECONDARY or f.status == Status.RECOVERED:
            continue
        if _error_end(f) is not None:
            end = max(f.line, f.end_line)
        elif f.block and request_error(f.block[0]):
            # llama.cpp's record of the request's error (`send_error: task id = 5, error: the request exceeds the
            # available context size`), whatever lines its block ran on over
            end = f.line
        else:
            continue
        if any(end < a <= end + REFUSED_WITHIN for a in answered):
            f.status = Status.RECOVERED


def _got_past(findings: Iterable[Finding], recovered_after: Callable[[str, int], bool]) -> None:
    """A family's warning (no error line, no over-time rule of its own) below which a recovery rule of the family
    matched (the engine reported its start-up done after waiting through a long compile) is `recovered`."""
    for f in findings:
        if f.role == Role.SECONDARY or f.status == Status.RECOVERED or f.facts.get("over_time_rule"):
            continue
        if _error_end(f) is None and recovered_after(f.family, max(f.line, f.end_line)):
            f.status = Status.RECOVERED


def recurrence(seen: dict[tuple, list], f: Finding) -> None:
    """A failure that comes back after a quiet spell (QUIET_SECONDS by the log's timestamps) is a new
    episode: its fingerprint says so, so that every output shows it as a finding of its own rather than
    as a repeat of the first."""
    key = (f.family, f.fingerprint, f.worker)
    last = seen.get(key)
    if last is None:
        seen[key] = [f.time, 1]
        return
    if quiet_spell(last[0], f.time):
        last[1] += 1
        f.fingerprint = fingerprint([f.fingerprint, f"episode {last[1]}"])
    last[0] = f.time or last[0]


def _supersedes(findings: list[Finding], ledger: Ledger) -> None:
    by_family: dict[str, list[Finding]] = {}
    for f in findings:
        by_family.setdefault(f.family, []).append(f)
    for fam, mine in by_family.items():
        sig = ledger.signatures.get(fam)
        if sig is None or not mine:
            continue
        root = next((f for f in mine if f.role != Role.SECONDARY), None)
        if root is None:
            continue
        for s in sig.supersedes:
            for victim in by_family.get(s.id, ()):
                if victim.role == Role.SECONDARY and victim.root and victim.root.get("family") == fam:
                    continue
                note = f"symptom of {fam} (superseded): {s.note}" if s.note else f"symptom of {fam} (superseded)"
                _victim_of(victim, root, note)
                victim.facts = {**victim.facts, "symptom_of": fam}
        # the supersede note says which explanation was the red herring: the root carries it
        for s in sig.supersedes:
            if s.id in by_family and s.note and s.note not in root.caveats:
                root.caveats = [*root.caveats, f"supersedes {s.id}: {s.note}"]


def _late_roots(findings: list[Finding]) -> None:
    for i, f in enumerate(findings):
        if f.family not in LATE_VICTIMS or f.role == Role.SECONDARY:
            continue
        nxt = next((g for g in findings[i + 1:] if g.family_role == Role.ROOT and _names_root(f, g)
                    and g.role != Role.SECONDARY and _after(f, g) and _telling(f, g)), None)
        if nxt is not None:
            _victim_of(f, nxt)


ABORT_ERROR_LINES = 10  # how far below an abort the error that caused it may be printed


def _abort_before_its_error(findings: list[Finding]) -> None:
    """An abort no family explains (its lines say only that the process aborted), with a root family's error printed
    just below it in the same second: the error that aborted the process, printed after the abort's report (another
    stream, or the C++ error of a thread the interpreter's fault handler beat to the terminal). The abort is its
    victim."""
    for i, f in enumerate(findings):
        if f.family != UNKNOWN or f.role == Role.SECONDARY or f.status == Status.RECOVERED or not f.evidence:
            continue
        if not abort_only(f.evidence):  # its lines say only that the process aborted (scan/attribution.py)
            continue
        end = max(f.line, f.end_line)
        g = next((g for g in findings[i + 1:] if 0 <= g.line - end <= ABORT_ERROR_LINES), None)
        if (g is not None and g.family_role == Role.ROOT and g.family != UNKNOWN and g.role != Role.SECONDARY
                and f.time is not None and g.time is not None and f.time[:19] == g.time[:19]):
            _victim_of(f, g)


def _launcher_report(f: Finding) -> bool:
    return f.family == UNKNOWN and any(LAUNCHER_REPORT.search(b) for b in f.block)


def _back(findings: list[Finding], i: int) -> Iterator[Finding]:
    """The findings above the i-th, nearest first (no copy of the list)."""
    return (findings[j] for j in range(i - 1, -1, -1))


# an exception's own words wherever a log header puts them (`ERROR 03-01 12:04:11 [core.py:517] RuntimeError: ...`)
_EXC_AT = lazy(r"(?:^|\s)((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\([\w.]*\))?: \S.*)$")

# a failure's words that its root cause is printed above it
_ROOT_CAUSE_ABOVE = lazy(r"(?i)check the stack trace above for the root cause|see root cause above")

RETOLD_WITHIN = 200  # lines: how far below a worker's failure a copy of it without a worker may come


def _exceptions(f: Finding) -> list[str]:
    return [m.group(1).strip() for m in map(_EXC_AT.search, f.block) if m]


def _last_exception(f: Finding) -> str | None:
    got = _exceptions(f)
    return got[-1] if got else None


def _relay(f: Finding) -> bool:
    return f.family == UNKNOWN and any(RAY_RELAY.match(b.lstrip()) for b in f.block)


def _launcher_reports(findings: list[Finding]) -> None:
    """A launcher's report of a failed child (no family of its own) below a root of that child's worker, or of no
    worker, tells that root's failure again: its victim. So does a relay of a remote task's exception (Ray's
    `RayTaskError(KeyError): ray::_Inner.train()` in the driver) below the root whose exception line it repeats.
    Victims that pointed at such a finding then point at the root it tells of."""
    moved: dict[int, Finding] = {}
    for i, f in enumerate(findings):
        if f.role == Role.SECONDARY:
            continue
        roots = (g for g in _back(findings, i) if g.role == Role.ROOT and g.status != Status.RECOVERED and g.line < f.line)
        root = None
        if _launcher_report(f):
            root = next((g for g in roots if not _launcher_report(g)
                         and (f.worker is None or g.worker is None or g.worker == f.worker)), None)
        elif _relay(f):
            told = set(_exceptions(f))
            root = next((g for g in roots if g.worker != f.worker and not _relay(g) and _last_exception(g) in told), None)
        elif any(_ROOT_CAUSE_ABOVE.search(b) for b in f.block[-8:]):
            # its own words send the reader to the failure above it (vLLM's EngineCore: `Worker failed with error
            # '...', please check the stack trace above for the root cause`): that failure's, the same family first
            above = list(roots)
            root = next((g for g in above if g.family == f.family), above[0] if above else None)
        elif f.worker is None and (told := set(_exceptions(f))):
            # a process no prefix names re-raising a worker's exception word for word (vLLM's EngineCore before it
            # prefixed its lines: `EngineCore encountered a fatal error.` then the worker's RuntimeError): a copy
            root = next((g for g in roots if g.worker is not None and f.line <= g.end_line + RETOLD_WITHIN
                         and g.family == f.family and _last_exception(g) in told), None)
        if root is not None:
            _victim_of(f, root)
            moved[f.line] = root
    if moved:
        for f in findings:
            if f.role == Role.SECONDARY and f.root and f.root.get("line") in moved \
                    and f.root.get("source") == f.source and f.root.get("fingerprint") != f.fingerprint:
                f.root = moved[f.root["line"]].pointer()


def _telling(f: Finding, g: Finding) -> bool:
    """Whether root g below victim f takes f's role away. A dead engine's line says its root is above it: a fault
    below takes it only when the ledger named it, or the model did from an error line of its own (not from a
    traceback cut short)."""
    if f.family not in LATE_ONLY_IF_TELLING or g.method != Method.LEARNED:
        return True
    return any(EXC_LINE.match(b.lstrip()) for b in g.block)


def _names_root(f: Finding, g: Finding) -> bool:
    """Whether g may be the root a late victim f follows: a family's fault; of the failures no family explains,
    a launcher's report of the worker that failed (scan/shapes.py), the traceback torchelastic's summary prints as
    a failed rank's error (its `traceback :` field, read from the rank's error file: the exception the rank
    raised), after a vLLM front end's report that its engine did not start the exception the engine raised, and after a dead Ray worker the error its task raised or a fatal line of the worker's own (a C++
    unhandled exception, a failed check: shapes.FAULTS)."""
    if g.family != UNKNOWN:
        return True
    if f.family == "process-killed-by-signal" and _child_failed(g.block):
        return True  # the launcher's ChildFailedError: a child failed, and the SIGTERM lines above stopped its siblings
    if g.block and SUMMARY_TRACEBACK.match(g.block[0]) and any(EXC_LINE.match(b.lstrip()) for b in g.block[1:]):
        return True
    if startup_report_only(f) and any(EXC_LINE.match(b.lstrip()) for b in g.block):
        return True  # the engine's own start-up error, printed after its front end's report that it did not start
    if f.family == "vllm-engine-dead" and _engine_error_at_once(f, g):
        return True
    return is_report(g) or (f.family == "ray-actor-died"
                             and any(EXC_LINE.match(b.lstrip()) or RAY_RELAY.match(b.lstrip()) or fault_line(b)
                                     for b in g.block))


# an exception as its repr (`ValueError('Sampling parameters are missing for a CompletionRequest.')`): what vLLM's
# engine and its client log as they die (`logger.exception(repr(e))`), its traceback under it
_EXC_REPR = lazy(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\((?:'|\"|\))")
ENGINE_ERROR_WITHIN = 10  # lines below the dead engine's line


def _engine_error_at_once(f: Finding, g: Finding) -> bool:
    """Whether g is the engine's own error logged in the second its front end said the engine was dead, just below
    that line (the front end's `MQLLMEngine is already dead` may come first): the fault the dead engine follows."""
    return bool(f.time and g.time and f.time[:19] == g.time[:19] and g.block
                and 0 <= g.line - max(f.line, f.end_line) <= ENGINE_ERROR_WITHIN and _EXC_REPR.match(g.block[0].lstrip()))


# torchelastic's agent raises ChildFailedError when a worker failed, after sending SIGTERM to the others; a worker
# stopped from outside shows as a stop signal in its row of the table (exitcode -15, `Signal 15 (SIGTERM)`)
_CHILD_FAILED = lazy(r"(?:^|[.\s])ChildFailedError:")
_STOPPED_CHILD = lazy(r"exitcode *: -(?:1|2|15) |Signal (?:1|2|15) \(SIG")


def _child_failed(block: list[str]) -> bool:
    """Whether a block is a launcher's ChildFailedError for a worker that failed of itself (not one stopped)."""
    return any(_CHILD_FAILED.search(b) for b in block) and not any(_STOPPED_CHILD.search(b) for b in block)


def _after(f: Finding, g: Finding) -> bool:
    """Whether root g comes after victim f: within LATE_ROOT_LINES below it, or in one block that holds both
    (the launcher's SIGTERM lines and its summary naming the failed rank, printed without line prefixes, or
    under a reporter's own indent, where the SIGTERM block runs on over the summary's line)."""
    return (0 <= g.line - f.end_line <= LATE_ROOT_LINES or g.line <= f.line <= f.end_line <= g.end_line
            or f.line < g.line <= f.end_line)


def _recovered(findings: Iterable[Finding], progress_after: Callable[[str | None, int], int]) -> None:
    for f in findings:
        if f.role == Role.SECONDARY:
            continue
        end = _error_end(f)
        if end is None:
            end = _value_report_end(f)
        if end is None and (f.family == UNKNOWN or f.family in _CAUGHT_AND_PRINTED) and not f.facts.get("over_time_rule"):
            # an error a log record reports with no exception line (a request a server refused; a module a trainer
            # could not import, caught and printed before its epochs went on)
            end = max(f.line, f.end_line)
        if end is None and f.block and _PY_WARNING.match(f.block[0].lstrip()) and not f.facts.get("over_time_rule"):
            # a Python warning (`.../torch/cuda/__init__.py:104: UserWarning: NVIDIA A10 with CUDA capability sm_86 is
            # not compatible with the current PyTorch installation.`): no error, and steps after it went on (the
            # record is its line; what the block ran on over is no part of it)
            end = f.line
        if end is None:
            continue
        if progress_after(f.worker, end) >= RECOVERED_AFTER:
            f.status = Status.RECOVERED


def _outlived(findings: list[Finding]) -> None:
    """A warning the process went on past (more lines after its block) before a kill ended it is `recovered`; so is
    a C++ library's warning or error record that is no exception (TensorFlow on a node without a GPU: `Could not load
    dynamic library 'libcudart.so.11.0'`, `failed call to cuInit: CUDA_ERROR_NO_DEVICE`, then CPU work, then the OOM
    killer)."""
    kills = [g for g in findings if g.family in _KILLS and g.role != Role.SECONDARY]
    if not kills:
        return
    for f in findings:
        if f.family in _KILLS or f.role == Role.SECONDARY or f.status == Status.RECOVERED or not f.block:
            continue
        if f.facts.get("over_time_rule") or _error_end(f) is not None:
            continue  # what a run does over time, or an error: no warning
        if not any(_WARNING.search(b) or _LOGGED.match(b) for b in f.block):
            continue
        end = max(f.line, f.end_line)
        if any(g.worker == f.worker and g.line > end + 1 for g in kills):
            f.status = Status.RECOVERED
