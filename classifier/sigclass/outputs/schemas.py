"""JSON Schemas (draft 2020-12) of what sigclass hands to programs.

One source of truth for `sigclass schema` and for the output schemas of the
MCP tools. The record schemas are derived from the dataclasses that write
the records (`records.py`, `results.py`) by `sigclass.typeschema`: a field,
its type and its description are declared once, beside the code that fills
it. Each schema is self-contained (nested objects inline), so a validator
with no registry can check a document against it.

Objects allow extra properties: a field added later must not break a client
that validates against an older schema. The tests check that every field the
code emits is described here, so the schemas cannot silently fall behind.
"""

from __future__ import annotations

import copy
from typing import Any

from sigclass.problems import ProblemLine
from sigclass.records import Finding, Run
from sigclass.results import Classification, FINDING_DESCRIPTION, Gotcha, GotchaSummary
from sigclass.typeschema import object_schema, type_schema

DIALECT = "https://json-schema.org/draft/2020-12/schema"
VERSION = 1


def _document(name: str, title: str, body: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    head: dict[str, Any] = {"$schema": DIALECT, "$id": f"urn:sigclass:schema:{name}:{VERSION}", "title": title}
    if description:
        head["description"] = description
    return {**head, **body}


# Derived from the records' fields and annotations (records.py, results.py): a field is declared once.
FINDING = _document("finding", "sigclass finding", object_schema(Finding), FINDING_DESCRIPTION)

GOTCHA = _document("gotcha", "sigclass gotcha", object_schema(Gotcha),
                   "A whole ledger entry: how a known failure is recognised and what to do about it.")

GOTCHA_LIST = _document("gotcha-list", "sigclass gotcha list", {
    "type": "object", "required": ["gotchas"], "properties": {"gotchas": type_schema(list[GotchaSummary])}})

CLASSIFICATION = _document("classification", "sigclass classification", object_schema(Classification),
                           "The findings of one log (repeats folded), its verdict, and what got in the way of reading it.")

# The run object: one element of `sigclass runs --format json`'s "runs".
RUN = _document("run", "sigclass run", object_schema(Run),
                "The post-mortem of one run directory: units, root faults with their victims, "
                "systematic faults, problems and a headline.")

_PROBLEM = ProblemLine.__json_schema__()

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
