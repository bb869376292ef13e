"""JSON shapes from dataclass fields and type annotations: the keys a record writes, its JSON Schema, frozen copies.

A record's JSON fields are its dataclass fields in order, except those whose
field metadata says ``{"json": False}`` (internal state). Their annotations
say the JSON type: ``str``, ``int``, ``float``, ``bool``, a ``StrEnum`` of
`vocab` (an enum), ``X | None``, ``list[X]`` / ``tuple[X, ...]``,
``dict[str, X]`` / ``Mapping[str, X]``, a ``TypedDict`` (an object with its
own keys) or another dataclass. ``Annotated[T, J(...)]`` adds JSON Schema
keywords (a description, bounds, a pattern); ``J(required=False)`` leaves the
key out of the object's ``required`` list.

Annotations are read only when a schema or a frozen copy is asked for, so
importing a record module costs nothing more than the dataclass itself.
"""

from __future__ import annotations

import collections.abc
import dataclasses
from enum import Enum
import sys
import types
import typing
from typing import Any, Annotated, get_args, get_origin, Mapping, NotRequired, Sequence, Union

INTERNAL = {"json": False}  # field metadata: not part of the record's JSON

_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}


class J:
    """JSON Schema keywords attached to an annotation: ``Annotated[int, J(minimum=0, description=...)]``."""

    __slots__ = ("kw",)

    def __init__(self, **kw: Any) -> None:
        self.kw = kw

    def __hash__(self) -> int:  # typing may hash annotation arguments; identity is enough
        return id(self)

    def __repr__(self) -> str:
        return f"J({self.kw!r})"


def json_fields(cls: type) -> tuple[dataclasses.Field, ...]:
    """The fields of a record that its JSON carries, in output order."""
    return tuple(f for f in dataclasses.fields(cls) if f.metadata.get("json", True))


def json_keys(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in json_fields(cls))


def _json_hints(cls: type) -> dict[str, Any]:
    """The evaluated annotation of each JSON field (extras kept); internal fields' names need not resolve."""
    names = json_keys(cls)
    all_hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        anns = vars(klass).get("__annotations__", {})
        ns = {**vars(typing), **vars(sys.modules[klass.__module__])}
        for name in names:
            if name in anns:
                ann = anns[name]
                all_hints[name] = eval(ann, ns) if isinstance(ann, str) else ann  # noqa: S307
    return {n: all_hints[n] for n in names}


def _split(tp: Any) -> tuple[Any, dict[str, Any]]:
    """An annotation without its `Annotated` layers, and the keywords they carried."""
    kw: dict[str, Any] = {}
    while get_origin(tp) is Annotated:
        tp, *meta = get_args(tp)
        for m in meta:
            if isinstance(m, J):
                kw.update(m.kw)
    if get_origin(tp) is NotRequired:
        (tp,) = get_args(tp)
        kw.setdefault("required", False)
    return tp, kw


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema of one annotation."""
    tp, kw = _split(tp)
    kw.pop("required", None)
    schema = {"enum": kw.pop("enum")} if "enum" in kw else _bare_schema(tp)
    schema.update(kw)
    return schema


def _bare_schema(tp: Any) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    hook = getattr(tp, "__json_schema__", None)
    if hook is not None:
        return hook()
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"enum": [m.value for m in tp]}
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return {"oneOf": [type_schema(a) for a in args]}
        inner = type_schema(rest[0])
        if len(rest) == len(args):
            return inner
        if set(inner) == {"type"} and isinstance(inner["type"], str):
            return {"type": [inner["type"], "null"]}
        if set(inner) == {"enum"}:
            return {"enum": [*inner["enum"], None]}
        return {"oneOf": [{"type": "null"}, inner]}
    if origin in (list, tuple, collections.abc.Sequence, Sequence):
        return {"type": "array", "items": type_schema(get_args(tp)[0])}
    if origin in (dict, collections.abc.Mapping, Mapping):
        value = get_args(tp)[1]
        return {"type": "object"} if value is Any else {"type": "object", "additionalProperties": type_schema(value)}
    if typing.is_typeddict(tp):
        th = typing.get_type_hints(tp, include_extras=True)
        return _object({k: _split(v) for k, v in th.items()}, tp.__required_keys__)
    if dataclasses.is_dataclass(tp):
        return object_schema(tp)
    raise TypeError(f"no JSON Schema for the annotation {tp!r}")


def _object(parts: dict[str, tuple[Any, dict[str, Any]]], required: Any = None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    req: list[str] = []
    for name, (tp, kw) in parts.items():
        if kw.pop("required", True) and (required is None or name in required):
            req.append(name)
        props[name] = type_schema(Annotated[tp, J(**kw)]) if kw else type_schema(tp)
    return {"type": "object", "required": req, "properties": props}


def object_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of a record's JSON object: every JSON field a property, required unless marked otherwise."""
    return _object({name: _split(tp) for name, tp in _json_hints(cls).items()})


# --------------------------------------------------------------------------- frozen copies and plain JSON

def _frozen_type(tp: Any) -> Any:
    """The annotation an immutable copy holds: lists become tuples, dicts mappings, records their frozen copies."""
    base, _ = _split(tp)
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        return Union[tuple(_frozen_type(a) for a in get_args(base))]
    if origin in (list, tuple, collections.abc.Sequence, Sequence):
        return tuple[_frozen_type(get_args(base)[0]), ...]
    if origin in (dict, collections.abc.Mapping, Mapping) or typing.is_typeddict(base):
        return Mapping[str, Any]
    return _FROZEN.get(base, base)


def frozen_copy(record: type, name: str, *, optional: Sequence[str] = (), module: str | None = None) -> type:
    """A frozen dataclass of the record's JSON fields (lists as tuples), with `to_dict` / `from_dict` (`Plain`).

    Its JSON Schema is the record's: the API's result and the record it copies write one shape.
    """
    cls = dataclasses.make_dataclass(f"{name}Fields", frozen_fields(record, optional=optional), bases=(Plain,),
                                     frozen=True, namespace={"_record": record,
                                                             "__json_schema__": classmethod(lambda c: object_schema(record))})
    if module is not None:
        cls.__module__ = module
    return cls


def frozen_fields(record: type, *, optional: Sequence[str] = ()) -> list[tuple[str, Any, Any]]:
    """`dataclasses.make_dataclass` fields mirroring a record's JSON fields, immutable; `optional` ones get a default."""
    out = []
    for name, tp in _json_hints(record).items():
        ftp = _frozen_type(tp)
        if name in optional:
            if get_origin(ftp) is tuple:
                out.append((name, ftp, dataclasses.field(default=())))
            elif get_origin(ftp) is Mapping:
                out.append((name, ftp, dataclasses.field(default_factory=dict)))
            else:
                out.append((name, ftp, dataclasses.field(default=None)))
        else:
            out.append((name, ftp))
    return out


_SCALARS = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """A value as plain JSON: records by their `to_dict()` (else their JSON fields), sequences as lists, mappings as dicts."""
    tp = type(value)
    if tp in _SCALARS:  # the common case first: a run's JSON is mostly strings (no attribute or ABC checks)
        return value
    if tp is dict:
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in json_fields(type(value))}
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def frozen_value(tp: Any, value: Any) -> Any:
    """A plain JSON value as the frozen annotation `tp` holds it (tuples, dicts, numbers, nested records)."""
    base, _ = _split(tp)
    if value is None:
        return None
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        rest = [a for a in get_args(base) if a is not type(None)]
        return frozen_value(rest[0], value) if len(rest) == 1 else value
    if origin is tuple:
        return tuple(frozen_value(get_args(base)[0], v) for v in value)
    if origin in (dict, collections.abc.Mapping, Mapping):
        return {k: frozen_value(get_args(base)[1], v) if isinstance(v, (list, Mapping)) else v
                for k, v in value.items()}
    if typing.is_typeddict(base):
        th = typing.get_type_hints(base)
        return {k: frozen_value(th.get(k, Any), v) for k, v in value.items()}
    if base is int and not isinstance(value, bool):
        return int(value)
    if base is float:
        return float(value)
    from_dict = getattr(base, "from_dict", None)
    if from_dict is not None and isinstance(base, type) and not isinstance(value, base):
        return from_dict(value)
    return value


_FROZEN: dict[type, type] = {}  # record -> the frozen class that copies it (the last subclass defined)


class Plain:
    """`to_dict()` / `from_dict()` of a frozen dataclass, from its fields and annotations."""

    __slots__ = ()
    noun = ""  # what an error calls one (else the class name)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        record = getattr(cls, "_record", None)
        if record is not None:
            _FROZEN[record] = cls

    def to_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]):
        from sigclass.errors import InputError

        fields = dataclasses.fields(cls)
        noun = cls.noun or cls.__name__
        if not isinstance(d, Mapping):
            raise InputError(f"not a {noun}: expected a JSON object, got {type(d).__name__}")
        required = [f.name for f in fields
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [k for k in required if k not in d]
        if missing:
            raise InputError(f"not a {noun}: missing {', '.join(missing)}")
        th = typing.get_type_hints(cls)
        return cls(**{f.name: frozen_value(th[f.name], d[f.name]) for f in fields if f.name in d})
