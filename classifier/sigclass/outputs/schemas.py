"""JSON Schemas (draft 2020-12) of what sigclass hands to programs.

One source of truth for `sigclass schema` and for the output schemas of the
MCP tools. Each schema is self-contained (its `$defs` travel with it), so a
validator with no registry can check a document against it.

Objects allow extra properties: a field added later must not break a client
that validates against an older schema. The tests check that every field the
code emits is described here, so the schemas cannot silently fall behind.
"""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import Any

from sigclass.problems import KIND_NAMES
from sigclass.vocab import Method, Role, Status, UnitRole, UnitStatus

DIALECT = "https://json-schema.org/draft/2020-12/schema"
VERSION = 1


def _values(vocab: type[StrEnum]) -> list[str]:
    """A closed vocabulary as a JSON Schema enum (from vocab.py, the one definition)."""
    return [v.value for v in vocab]


_STR_LIST = {"type": "array", "items": {"type": "string"}}
_NULL_STR = {"type": ["string", "null"]}
_PROBLEM = {
    "type": "object",
    "required": ["path", "kind", "message"],
    "properties": {
        "path": {**_NULL_STR, "description": "The file the problem is about (null: not about one file)."},
        "kind": {"enum": list(KIND_NAMES)},
        "message": {"type": "string", "description": "What happened and what was done, for people."},
    },
}
_SUPERSEDE = {
    "type": "object",
    "required": ["id", "note"],
    "properties": {"id": {"type": "string"}, "note": {"type": "string"}},
}

_FINDING_PROPS: dict[str, Any] = {
    "family": {"type": "string", "description": "Family id from the ledger, or 'unknown'."},
    "title": {"type": "string"},
    "role": {"enum": _values(Role),
             "description": "secondary: this failure follows a root fault (see 'root'); root otherwise."},
    "status": {"enum": _values(Status),
               "description": "The ledger status of the family; 'unknown' for a failure no family explains; "
                              "'recovered' for an error after which the same worker's progress went on."},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "method": {"enum": _values(Method)},
    "source": {"type": "string", "description": "The log file, or '<text>' for text given inline."},
    "line": {"type": "integer", "minimum": 0},
    "end_line": {"type": "integer", "minimum": 0},
    "time": {**_NULL_STR, "description": "ISO-8601 time of the failure, when the log shows one."},
    "worker": _NULL_STR,
    "workers": {**_STR_LIST, "description": "Every worker whose repeats are folded into this finding."},
    "evidence": {**_STR_LIST, "description": "The log lines that matched."},
    "fingerprint": {"type": "string", "description": "Stable hash of the masked key lines: repeats share it."},
    "count": {"type": "integer", "minimum": 1, "description": "Occurrences folded into this finding."},
    "lines": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    "mitigation": {"type": "string", "description": "What to do about it."},
    "probes": {**_STR_LIST, "description": "What to check first, before any code hunt."},
    "caveats": _STR_LIST,
    "supersedes": {"type": "array", "items": _SUPERSEDE},
    "superseded_by": {"type": "array", "items": _SUPERSEDE},
    "root": {
        "description": "For a secondary finding: the root fault it follows.",
        "oneOf": [
            {"type": "null"},
            {
                "type": "object",
                "required": ["source", "line", "family", "fingerprint"],
                "properties": {
                    "source": {"type": "string"},
                    "line": {"type": "integer"},
                    "family": {"type": "string"},
                    "fingerprint": {"type": "string"},
                    "worker": _NULL_STR,
                },
            },
        ],
    },
    "unit": _NULL_STR,
    "facts": {"type": "object", "additionalProperties": {"type": "string"},
              "description": "Context the log states (GPU model, engine version, ...)."},
}

FINDING: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": f"urn:sigclass:schema:finding:{VERSION}",
    "title": "sigclass finding",
    "description": "One failure in a log, classified against the gotcha ledger.",
    "type": "object",
    "required": list(_FINDING_PROPS),
    "properties": _FINDING_PROPS,
}

_GOTCHA_PROPS: dict[str, Any] = {
    "id": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
    "title": {"type": "string"},
    "role": {"enum": _values(Role)},
    "status": {"enum": [Status.ACTIVE.value, Status.RED_HERRING.value, Status.RETIRED.value]},  # a signature's own
    "priority": {"type": "integer"},
    "match": {
        "type": "object",
        "required": ["any", "all", "none", "multiline"],
        "properties": {k: _STR_LIST for k in ("any", "all", "none", "multiline")},
    },
    "min_count": {"type": "integer", "minimum": 1},
    "pattern_min_count": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
    "facts": {
        "type": "array",
        "items": {"type": "object", "required": ["name", "pattern"],
                  "properties": {"name": {"type": "string"}, "pattern": {"type": "string"}}},
    },
    "conditions": {
        "type": "object",
        "required": ["require", "prefer"],
        "properties": {k: {"type": "object", "additionalProperties": {"type": "string"}}
                       for k in ("require", "prefer")},
    },
    "mitigation": {"type": "string"},
    "probes": _STR_LIST,
    "caveats": _STR_LIST,
    "supersedes": {"type": "array", "items": _SUPERSEDE},
    "superseded_by": {"type": "array", "items": _SUPERSEDE},
    "references": _STR_LIST,
    "path": {"type": "string", "description": "The signature file the entry was loaded from."},
    "over_time": {
        "type": "array", "description": "Rules read from what the log does over time (metric, storm, stall, rate).",
        "items": {"type": "object", "required": ["kind", "name"],
                  "properties": {"kind": {"enum": ["metric", "storm", "stall", "rate"]}, "name": {"type": "string"}}},
    },
}

GOTCHA: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": f"urn:sigclass:schema:gotcha:{VERSION}",
    "title": "sigclass gotcha",
    "description": "A whole ledger entry: how a known failure is recognised and what to do about it.",
    "type": "object",
    "required": list(_GOTCHA_PROPS),
    "properties": _GOTCHA_PROPS,
}

_SUMMARY_PROPS = {k: _GOTCHA_PROPS[k] for k in ("id", "title", "role", "status")}

GOTCHA_LIST: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": f"urn:sigclass:schema:gotcha-list:{VERSION}",
    "title": "sigclass gotcha list",
    "type": "object",
    "required": ["gotchas"],
    "properties": {
        "gotchas": {
            "type": "array",
            "items": {"type": "object", "required": list(_SUMMARY_PROPS), "properties": _SUMMARY_PROPS},
        },
    },
}

CLASSIFICATION: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": f"urn:sigclass:schema:classification:{VERSION}",
    "title": "sigclass classification",
    "description": "The findings of one log (repeats folded), with what got in the way of reading it.",
    "type": "object",
    "required": ["source", "findings", "problems"],
    "properties": {
        "source": {"type": "string"},
        "findings": {"type": "array", "items": {"$ref": "#/$defs/finding"}},
        "problems": {"type": "array", "items": _PROBLEM},
    },
    "$defs": {"finding": {k: v for k, v in FINDING.items() if not k.startswith("$")}},
}

# The run object: one element of `sigclass runs --format json`'s "runs".
_UNIT_PROPS: dict[str, Any] = {
    "unit": {"type": "string"},
    "worker": _NULL_STR,
    "status": {"enum": _values(UnitStatus)},
    "family": {**_NULL_STR, "description": "The family of the error the unit printed itself (null: none seen)."},
    "role": {"enum": [*_values(UnitRole), None], "description": "cascade: a victim of the root fault named in 'root'."},
    "root": {**_NULL_STR, "description": "For a cascade victim: the unit of its root fault."},
    "time": _NULL_STR,
    "fingerprint": _NULL_STR,
    "evidence": _STR_LIST,
    "source": _NULL_STR,
    "line": {"type": ["integer", "null"]},
}
_ROOT_PROPS: dict[str, Any] = {
    "unit": {"type": "string"},
    "worker": _NULL_STR,
    "family": {"type": "string"},
    "time": _NULL_STR,
    "fingerprint": _NULL_STR,
    "victims": {**_STR_LIST, "description": "Units lost in this root fault's blast radius."},
    "evidence": _STR_LIST,
    "source": _NULL_STR,
    "line": {"type": ["integer", "null"]},
    "mitigation": {"type": "string"},
    "probes": _STR_LIST,
    "notes": {**_STR_LIST, "description": "Red-herring and superseded-by notes from the ledger."},
    "caveats": {**_STR_LIST, "description": "The ledger's caveats of the family, whole."},
    "superseded_by": {"type": "array", "items": _SUPERSEDE, "description": "Fixes to try first, with why."},
}
_RUN_PROPS: dict[str, Any] = {
    "run": {"type": "string", "description": "The run's name (its directory's base name)."},
    "path": {"type": "string", "description": "The run directory."},
    "units": {"type": "array", "items": {"$ref": "#/$defs/unit"}},
    "roots": {"type": "array", "items": {"$ref": "#/$defs/root"}},
    "systematic": {
        "type": "array",
        "description": "One family striking several workers separately.",
        "items": {"$ref": "#/$defs/systematic"},
    },
    "problems": {"type": "array", "items": _PROBLEM, "description": "Files that could not be read, and why."},
    "summary": {"type": "string", "description": "One-line headline of the run."},
}

RUN: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": f"urn:sigclass:schema:run:{VERSION}",
    "title": "sigclass run",
    "description": "The post-mortem of one run directory: units, root faults with their victims, "
                   "systematic faults, problems and a headline.",
    "type": "object",
    "required": ["run", "units", "roots", "systematic", "problems", "summary"],
    "properties": _RUN_PROPS,
    "$defs": {
        "unit": {"type": "object", "required": ["unit", "worker", "status", "family", "role"],
                 "properties": _UNIT_PROPS},
        "root": {"type": "object", "required": ["unit", "worker", "family", "victims"], "properties": _ROOT_PROPS},
        "systematic": {
            "type": "object",
            "required": ["family", "workers"],
            "properties": {
                "family": {"type": "string"},
                "workers": {"type": "integer", "minimum": 2},
                "fingerprint": {"type": "string", "description": "Only for 'unknown': repeats group by fingerprint."},
            },
        },
    },
}

_STR_OR_NULL = {"type": ["string", "null"]}

COMPARISON: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": f"urn:sigclass:schema:comparison:{VERSION}",
    "title": "sigclass comparison of runs",
    "type": "object",
    "required": ["runs", "units", "discriminating", "probes", "verdicts", "not_comparable"],
    "properties": {
        "runs": {"type": "array", "items": {"type": "string"}},
        "units": {"type": "integer", "minimum": 0},
        "discriminating": {"type": "array", "items": {
            "type": "object", "required": ["fact", "values", "p"],
            "properties": {
                "fact": {"type": "string"},
                "values": {"type": "array", "items": {
                    "type": "object", "required": ["value", "failed", "total"],
                    "properties": {"value": {"type": "string"}, "failed": {"type": "integer"}, "total": {"type": "integer"}},
                }},
                "p": {"type": "number", "minimum": 0, "maximum": 1},
                "same_split": {"type": "array", "items": {"type": "string"}},
            },
        }},
        "probes": {"type": "array", "items": {
            "type": "object", "required": ["family", "probe", "status", "runs"],
            "properties": {
                "family": {"type": "string"}, "probe": {"type": "string"},
                "status": {"enum": ["supports", "refutes", "not-run"]},
                "runs": {"type": "array", "items": {"type": "string"}},
                "declared": {"type": "boolean"}, "cost": {"type": "integer"}, "points_to": {"type": "string"},
            },
        }},
        "verdicts": {"type": "array", "items": {
            "type": "object", "required": ["family", "status", "points_to", "why"],
            "properties": {
                "family": {"type": "string"},
                "status": {"enum": ["confirmed", "refuted", "open"]},
                "points_to": _STR_OR_NULL, "why": {"type": "string"}, "next": _STR_OR_NULL,
            },
        }},
        "not_comparable": {"type": "array", "items": {
            "type": "object", "required": ["fact", "values"],
            "properties": {"fact": {"type": "string"}, "values": {"type": "array", "items": {"type": "string"}},
                           "runs": {"type": "array", "items": {"type": "string"}}},
        }},
        "problems": {"type": "array", "items": _PROBLEM},
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "finding": FINDING,
    "run": RUN,
    "gotcha": GOTCHA,
    "classification": CLASSIFICATION,
    "gotcha-list": GOTCHA_LIST,
    "comparison": COMPARISON,
}


def schema(name: str) -> dict[str, Any]:
    """A copy of the schema called `name` (finding, run, gotcha, classification, gotcha-list)."""
    try:
        return copy.deepcopy(SCHEMAS[name])
    except KeyError:
        from sigclass.errors import InputError

        raise InputError(f"no schema {name!r}; choose one of {', '.join(SCHEMAS)}") from None
