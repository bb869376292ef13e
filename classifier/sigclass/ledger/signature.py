"""One signature (a gotcha family): its fields, patterns and supersede links."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sigclass.ledger.patterns import Pattern
from sigclass.ledger.probes import Probe
from sigclass.vocab import Role, Status


ROLES = tuple(Role)

STATUSES = (Status.ACTIVE, Status.RED_HERRING, Status.RETIRED)


@dataclass(frozen=True)
class Supersede:
    id: str
    note: str


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    role: str
    status: str
    priority: int
    any: tuple[Pattern, ...]
    all: tuple[Pattern, ...]
    none: tuple[Pattern, ...]
    multiline: tuple[Pattern, ...]
    facts: tuple[Pattern, ...]
    require: tuple[tuple[str, Any], ...]
    prefer: tuple[tuple[str, Any], ...]
    mitigation: str
    probes: tuple[str, ...]
    caveats: tuple[str, ...]
    supersedes: tuple[Supersede, ...]
    superseded_by: tuple[Supersede, ...]
    references: tuple[str, ...]
    min_count: int
    path: str
    line_of: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    raw: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    probe_decls: tuple[Probe, ...] = field(default=(), compare=False, repr=False)  # the probes as data, beside `probes`
    over_time: tuple = ()  # TimeRule: signatures read from what the log does over time (ledger/overtime.py)

    @property
    def active(self) -> bool:
        return self.status != Status.RETIRED

    def location(self, *key: Any) -> str:
        return f"{self.path}:{self.line_of.get(tuple(key), self.line_of.get((), 1))}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "role": self.role,
            "status": self.status,
            "priority": self.priority,
            "match": {
                "any": [p.source for p in self.any],
                "all": [p.source for p in self.all],
                "none": [p.source for p in self.none],
                "multiline": [p.source for p in self.multiline],
            },
            "min_count": self.min_count,
            "pattern_min_count": {p.source: p.min_count for p in self.any if p.min_count > 1},
            "facts": [{"name": p.fact, "pattern": p.source} for p in self.facts],
            "conditions": {
                "require": {k: v.pattern for k, v in self.require},
                "prefer": {k: v.pattern for k, v in self.prefer},
            },
            "mitigation": self.mitigation,
            "probes": list(self.probes),
            "caveats": list(self.caveats),
            "supersedes": [{"id": s.id, "note": s.note} for s in self.supersedes],
            "superseded_by": [{"id": s.id, "note": s.note} for s in self.superseded_by],
            "references": list(self.references),
            "over_time": [r.to_dict() for r in self.over_time],
            "path": self.path,
        }


def replace_fields(sig: Signature, **changes: Any) -> Signature:
    import dataclasses

    return dataclasses.replace(sig, **changes)
