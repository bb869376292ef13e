"""One small exception tree, split by who has to act.

The library raises these; only the CLI turns them into one-line messages and
exit codes.
"""

from __future__ import annotations


class SigclassError(Exception):
    """Root of every error sigclass raises on purpose."""


class SignatureError(SigclassError):
    """A ledger file is wrong: the pack author has to act."""


class InputError(SigclassError):
    """A log, run directory or path cannot be read as asked: the user has to act."""


class ModelError(SigclassError):
    """The learned model is missing, corrupt, stale or not trusted."""
