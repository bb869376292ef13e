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
- Ray relays a remote task's or an actor constructor's exception inside its own message:
  `ActorDiedError: The actor died because of an error raised in its creation task, ray::A.__init__() (...)` or
  `RayTaskError(ValueError): ray::f() (...)`, then the remote traceback and its exception line; an exception line
  below such a line is the cause.

A block whose only exception lines are the family's own (a bare `ActorDiedError`, an `EngineDeadError` whose root
is in another process's log) keeps the family.

Likewise srun's `task N: Killed` lines after Slurm began ending a step or a job (`Terminating StepId=...`,
`*** STEP ... CANCELLED AT ... ***`) are the teardown's kills, not host RAM running out (`teardown_kills`).
"""

from __future__ import annotations

from typing import Callable

from sigclass.ledger.signature import Signature
from sigclass.scan.shapes import RAY_RELAY, fault_line
from sigclass.text.lazyre import lazy

# an exception line of a program's own: `ValueError: ...`, `mod.sub.KeyError: ...`, `SomethingError` alone
# (not a warning, not KeyboardInterrupt or SystemExit: those are stops, not causes)
OWN_EXCEPTION = lazy(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\[[^\]]*\])?(?::|$)")

# never a cause: what a cascade raises in the processes it reaches (asyncio's cancellation of the waiting tasks),
# and a launcher's report that a child ended (torchelastic's summary, whose exit code lines say how)
_NOT_CAUSES = ("CancelledError", "ChildFailedError")

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
    relayed = False
    for i, ln in enumerate(lines):
        if i >= first and _RELAYS.search(ln) is not None:
            relayed = True  # the lines below it are the remote exception's
        s = ln.lstrip()
        if i < first and fault_line(s) and not any(matches(p, ln) for p in sig.any):
            return True
        if i == first or not OWN_EXCEPTION.match(s) or any(c in s.split(":", 1)[0] for c in _NOT_CAUSES):
            continue
        if (i < first or relayed) and not any(matches(p, ln) for p in sig.any):
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
