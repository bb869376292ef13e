"""The closed vocabularies, each defined once. `StrEnum`: members are their strings, so JSON output is unchanged."""

from __future__ import annotations

from enum import StrEnum


class UnitStatus(StrEnum):
    """What became of a unit of a run."""

    OK = "ok"
    FAILED = "failed"
    INCOMPLETE = "incomplete"


class UnitRole(StrEnum):
    """A failed unit's part in its run: the root fault, or a victim of one."""

    ROOT = "root"
    CASCADE = "cascade"


class Role(StrEnum):
    """A signature's (and its findings') role: a root fault, or an error that follows one."""

    ROOT = "root"
    SECONDARY = "secondary"


class Status(StrEnum):
    """A signature's status (a finding of no known family has the status `unknown`; an error after which
    the same worker's progress went on, `recovered`)."""

    ACTIVE = "active"
    RED_HERRING = "red-herring"
    RETIRED = "retired"
    UNKNOWN = "unknown"
    RECOVERED = "recovered"


class Method(StrEnum):
    """How a finding's family was decided."""

    REGEX = "regex"
    LEARNED = "learned"
    NONE = "none"


class SignatureMode(StrEnum):
    """Which signatures classify failures."""

    REGEX = "regex"
    LEARNED = "learned"
    BOTH = "both"


UNKNOWN = "unknown"  # the family of a failure no signature explains


class MarkerKind(StrEnum):
    """A shard marker line: a unit starting, succeeding or failing."""

    START = "start"
    OK = "ok"
    FAILED = "failed"


class ColourMode(StrEnum):
    """When text output is coloured (`--color`)."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


class CauseBasis(StrEnum):
    """What showed a verdict's cause: the worker's own lines, a launcher's summary of it, or an exit code alone."""

    OWN_LINES = "own lines"
    LAUNCHER_SUMMARY = "launcher summary"
    EXIT_CODE = "exit code"
