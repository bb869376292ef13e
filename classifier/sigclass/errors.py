"""One small exception tree, split by who has to act.

The library raises these; only the CLI turns them into one-line messages and
exit codes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """What is wrong and where (``file:line``); printed as ``file:line: message``."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class SigclassError(Exception):
    """Root of every error sigclass raises on purpose."""


class SignatureError(SigclassError):
    """A ledger file is wrong: the pack author has to act. `problems` holds each one with its location."""

    def __init__(self, *problems: Problem) -> None:
        self.problems: tuple[Problem, ...] = problems
        super().__init__("\n".join(map(str, problems)))


class InputError(SigclassError):
    """A log, run directory or path cannot be read as asked: the user has to act."""


class ModelError(SigclassError):
    """The learned model is missing, corrupt, stale or not trusted."""
