"""Records, their JSON Schemas and the API's frozen results come from one set of dataclass fields."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Annotated, NotRequired, TypedDict

from jsonschema import Draft202012Validator
import pytest

from sigclass import records, results
from sigclass.errors import InputError
from sigclass.typeschema import frozen_copy, INTERNAL, J, json_keys, object_schema, type_schema
from sigclass.vocab import UnitStatus


class Link(TypedDict):
    id: str
    note: NotRequired[str]


@dataclasses.dataclass
class Part:
    name: str
    size: Annotated[int, J(minimum=0, description="bytes")]


@dataclasses.dataclass
class Record:
    id: str
    status: UnitStatus
    owner: str | None
    role: UnitStatus | None
    tags: list[str]
    links: list[Link]
    parts: list[Part]
    counts: dict[str, int]
    extra: Annotated[str | None, J(required=False)] = None
    cache: dict = dataclasses.field(default_factory=dict, metadata=INTERNAL)


class Frozen(frozen_copy(Record, "Frozen", optional=("extra",), module=__name__)):
    __slots__ = ()


def test_the_schema_follows_the_annotations():
    s = object_schema(Record)
    assert s["required"] == ["id", "status", "owner", "role", "tags", "links", "parts", "counts"]
    p = s["properties"]
    assert "cache" not in p and json_keys(Record)[-1] == "extra"
    assert p["id"] == {"type": "string"}
    assert p["status"] == {"enum": ["ok", "failed", "incomplete"]}
    assert p["owner"] == {"type": ["string", "null"]}
    assert p["role"] == {"enum": ["ok", "failed", "incomplete", None]}
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["links"]["items"] == {"type": "object", "required": ["id"],
                                   "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}
    assert p["parts"]["items"]["properties"]["size"] == {"type": "integer", "minimum": 0, "description": "bytes"}
    assert p["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    Draft202012Validator.check_schema(s)


def test_a_type_without_a_json_shape_is_refused_when_the_schema_is_built():
    with pytest.raises(TypeError, match="no JSON Schema"):
        type_schema(complex)


def test_the_frozen_copy_round_trips_and_refuses_what_is_missing():
    rec = Record("a", UnitStatus.OK, None, None, ["x"], [{"id": "b", "note": "n"}], [Part("p", 3)], {"k": 1})
    d = {f: records.plain(getattr(rec, f)) for f in json_keys(Record)}
    fr = Frozen.from_dict(d)
    assert fr.tags == ("x",) and fr.parts[0] == {"name": "p", "size": 3} and fr.extra is None
    assert Frozen.from_dict(fr.to_dict()) == fr
    with pytest.raises(dataclasses.FrozenInstanceError):
        fr.id = "b"
    with pytest.raises(InputError, match="not a Frozen: missing status, owner"):
        Frozen.from_dict({"id": "a"})
    with pytest.raises(InputError, match="expected a JSON object"):
        Frozen.from_dict(["a"])


def test_records_and_results_share_their_fields():
    pairs = [(records.Finding, results.FindingRecord), (records.Unit, results.RunUnit),
             (records.RootFault, results.RootFault), (records.Systematic, results.SystematicFault),
             (records.Run, results.RunAnalysis)]
    for record, result in pairs:
        assert [f.name for f in dataclasses.fields(result)] == list(json_keys(record)), result.__name__
        assert result.__dataclass_params__.frozen
    assert json_keys(records.Unit) == records.UNIT_KEYS
    assert "stream" not in records.FINDING_KEYS and "block" not in records.FINDING_KEYS


def test_the_scan_path_imports_no_schema_or_template_library():
    code = ("import sys, sigclass.scan.scanner, sigclass.records, sigclass.results; "
            "print(sorted(m for m in ('pydantic', 'jsonschema', 'jinja2', 'platformdirs') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
