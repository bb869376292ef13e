"""The JSON Schema of a comparison (`sigclass compare --format json`, the `compare_runs` tool)."""

from __future__ import annotations

from typing import Any

_STR_OR_NULL = {"type": ["string", "null"]}

COMPARISON: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:sigclass:schema:comparison:1",
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
        "problems": {"type": "array", "items": {"type": "string"}},
    },
}
