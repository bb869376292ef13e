"""A secondary family's block whose own exception says why: the failure is that exception's, not the family's.

A secondary family (a stop from outside, a dead Ray actor, a dead vLLM engine, a watchdog timeout) is what a
process prints *because* something else failed. When the same block holds the exception that failed first, that
exception is the failure, and when no family's pattern names it the block is `unknown`:

- Python prints a chain's cause first: `KeyError: 'pixel'`, then `The above exception was the direct cause of the
  following exception:`, then Ray Train's `TrainingFailedError`; an exception line above the family's first line
  of evidence is the cause;
- a fault line printed without a Python exception (shapes.FAULTS: a CUDA check macro's `Failed: Cuda error
  f.cuh:164 'invalid argument'`, a failed `Check failed:`, a C++ `terminate called`) above the family's first line of
  evidence is the cause likewise: vLLM's EngineCore then says `Worker proc VllmWorker-0 died unexpectedly`;
- the family's line printed into a traceback already under way (the traceback's header above it, the line itself
  neither a frame nor an exception line: another process's `Received SIGTERM` between the frames of a rank's
  traceback) gives way to that traceback's exception below it;
- Ray relays a remote task's or an actor constructor's exception inside its own message:
  `ActorDiedError: The actor died because of an error raised in its creation task, ray::A.__init__() (...)` or
  `RayTaskError(ValueError): ray::f() (...)`, then the remote traceback and its exception line; an exception line
  below such a line is the cause.

A block whose only exception lines are the family's own (a bare `ActorDiedError`, an `EngineDeadError` whose root
is in another process's log) keeps the family.

A vLLM V1 front end's word that its engine never started (`RuntimeError: Engine core initialization failed. See root
cause above. Failed core proc(s): {}`) points at a root printed above it;
when nothing above it (or below it, printed late) is a failure, the log does not say why the engine did not start:
the failure is `unknown`, not a dead engine (vllm-engine-dead is what requests print once a running engine died).
Such a finding is held back when it is published and decided when the source ends (`startup_report_only`).

Likewise srun's `task N: Killed` lines after Slurm began ending a step or a job (`Terminating StepId=...`,
`*** STEP ... CANCELLED AT ... ***`) are the teardown's kills, not host RAM running out (`teardown_kills`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from sigclass.ledger.signature import Signature
from sigclass.records import Finding
from sigclass.scan.shapes import RAY_RELAY, fault_line
from sigclass.text.lazyre import lazy
from sigclass.text.lines import fingerprint
from sigclass.vocab import Method, Role, Status, UNKNOWN

# an exception line of a program's own: `ValueError: ...`, `mod.sub.KeyError: ...`, `SomethingError` alone
# (not a warning, not KeyboardInterrupt or SystemExit: those are stops, not causes)
OWN_EXCEPTION = lazy(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\[[^\]]*\])?(?::|$)")

# never a cause: what a cascade raises in the processes it reaches (asyncio's cancellation of the waiting tasks),
# and a launcher's report that a child ended (torchelastic's summary, whose exit code lines say how)
_NOT_CAUSES = ("CancelledError", "ChildFailedError")

_TRACEBACK = "Traceback (most recent call last)"

# Ray's line that relays a remote exception inside its own message
_RELAYS = lazy(r"error raised in its creation task|" + RAY_RELAY.pattern.lstrip("^"))


def own_cause(sig: Signature, lines: list[str], matches: Callable[[object, str], object]) -> bool:
    """Whether a block the secondary family `sig` names holds an exception that explains it (see the module
    docstring). `lines` are the block's lines without their prefixes; `matches(pattern, line)` is the scanner's
    guarded search."""
    first = None
    for i, ln in enumerate(lines):
        if any(matches(p, ln) for p in sig.any):
            first = i
            break
    if first is None:
        return False
    # the family's line printed into a traceback already under way (another process's line between its frames):
    # the traceback's exception below it is the failure
    lead = lines[first]
    interleaved = (not lead[:1].isspace() and not OWN_EXCEPTION.match(lead) and _TRACEBACK not in lead
                   and any(_TRACEBACK in x for x in lines[:first]))
    relayed = False
    for i, ln in enumerate(lines):
        if i >= first and _RELAYS.search(ln) is not None:
            relayed = True  # the lines below it are the remote exception's
        if i > first and _TRACEBACK in ln:
            interleaved = False  # a traceback of its own below the family's line: not the one it was printed into
        s = ln.lstrip()
        if i < first and fault_line(s) and not any(matches(p, ln) for p in sig.any):
            return True
        if i == first or not OWN_EXCEPTION.match(s) or any(c in s.split(":", 1)[0] for c in _NOT_CAUSES):
            continue
        if (i < first or relayed or interleaved) and not any(matches(p, ln) for p in sig.any):
            return True
    return False


# srun's word that it killed a task (SIGKILL), and Slurm ending the step or the job before it (after a failed task,
# at a time limit, on a cancel): once the step is being ended, the tasks still running are killed by it, not by the
# OOM killer
SRUN_KILLED = lazy(r"srun: error: \S+: tasks? [\d,-]+: Killed *$")
SLURM_ENDING = lazy(r"\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED AT |Terminating StepId=|srun: forcing job termination"
                          r"|srun: Job step aborted")


def teardown_kills(sig: Signature, lines: list[str], matches: Callable[[object, str], object]) -> bool:
    """Whether a block the host-oom-killed family names holds only srun's `task N: Killed` lines printed after
    Slurm began ending the step (no OOM killer's own word, no exit code 137): the kills are the step's teardown."""
    if sig.id != "host-oom-killed":
        return False
    # both are needed for a True answer; checked first, they spare the family's patterns on every line of a block
    # that has no srun kill line or no Slurm ending (almost every block)
    if not any("Killed" in ln and SRUN_KILLED.search(ln) for ln in lines) or not any(SLURM_ENDING.search(ln) for ln in lines):
        return False
    ev = [i for i, ln in enumerate(lines) if any(matches(p, ln) for p in sig.any)]
    if not ev or not all(SRUN_KILLED.search(lines[i]) for i in ev):
        return False
    return any(SLURM_ENDING.search(ln) for ln in lines[:ev[0]])


# the V1 front end's report that the engine process never got ready (`wait_for_engine_startup`)
_STARTUP_REPORT = lazy(r"Engine core initialization failed")
UNEXPLAINED_TITLE = "Failure no signature explains"


def startup_report_only(f: Finding) -> bool:
    """Whether a vllm-engine-dead finding says only that the engine did not start (every line of its evidence)."""
    return f.family == "vllm-engine-dead" and bool(f.evidence) and all(_STARTUP_REPORT.search(e) for e in f.evidence)


def as_unknown(f: Finding) -> Finding:
    """The finding as a failure no family explains: the same lines, its own fingerprint."""
    return replace(f, family=UNKNOWN, title=UNEXPLAINED_TITLE, role=Role.ROOT, status=Status.UNKNOWN, confidence=0.0,
                   method=Method.NONE, fingerprint=fingerprint([UNKNOWN, *f.evidence[-2:]]), mitigation="", probes=[],
                   caveats=[], supersedes=[], superseded_by=[], root=None, family_role=Role.ROOT)
