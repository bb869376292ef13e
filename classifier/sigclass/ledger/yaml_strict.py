"""YAML for signature files: safe loading that rejects duplicate keys and records the line of every value."""

from __future__ import annotations

from typing import Any

import yaml

from sigclass.errors import Problem, SignatureError


_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_Base):  # type: ignore[misc,valid-type]
    """SafeLoader (the C one where available) that refuses duplicate keys."""


def construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)


def line_map(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Map each key path (('match', 'any', 0), ...) to its 1-based line."""
    out = {} if out is None else out
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            out[path + (key,)] = k.start_mark.line + 1
            line_map(v, path + (key,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            line_map(v, path + (i,), out)
    return out


def refuse_aliases(text: str, name: str) -> None:
    """A signature file has no use for anchors and aliases, and an alias of an alias of ... (the "billion
    laughs") expands exponentially in the line map and in the data: refuse the first alias, from the
    parser's events alone, before anything is built."""
    for event in yaml.parse(text, Loader=StrictLoader):
        if isinstance(event, yaml.AliasEvent):
            raise SignatureError(Problem(f"{name}:{event.start_mark.line + 1}",
                                         f"YAML alias *{event.anchor} is not allowed in a signature file; "
                                         "write the value out in full"))


def load_yaml(text: str, name: str) -> tuple[Any, dict[tuple, int]]:
    try:
        refuse_aliases(text, name)
        node = yaml.compose(text, Loader=StrictLoader)
        data = yaml.load(text, Loader=StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise SignatureError(Problem(f"{name}:{line}", f"YAML error: {exc.problem or exc}")) from None
    except yaml.YAMLError as exc:
        raise SignatureError(Problem(f"{name}:1", f"YAML error: {exc}")) from None
    return data, (line_map(node) if node is not None else {})
