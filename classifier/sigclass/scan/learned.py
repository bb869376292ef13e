"""What the scanner asks of a learned model: the `LearnedModel` protocol, and an adapter for a bare function."""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

Guess = tuple[str, float]  # (family or abstain label, probability)


@runtime_checkable
class LearnedModel(Protocol):
    """The learned callback: failure-block bodies (and, when it wants them, the worker's facts) -> a guess or None."""

    wants_facts: bool  # pass the source's facts (gpu model, engine flags) along with each block

    def set_mode(self, signatures: str) -> None:
        """The scanner's signature mode (a model may keep one abstain threshold per mode)."""

    def __call__(self, bodies: list[str], facts: dict[str, str] | None = None) -> Guess | None: ...


class PlainCallback:
    """A bare function as a `LearnedModel`: no modes; facts only when the function carries ``wants_facts = True``."""

    def __init__(self, fn: Callable[..., Guess | None]) -> None:
        self.fn = fn
        self.wants_facts = bool(getattr(fn, "wants_facts", False))

    def set_mode(self, signatures: str) -> None:
        pass

    def __call__(self, bodies: list[str], facts: dict[str, str] | None = None) -> Guess | None:
        return self.fn(bodies, facts) if self.wants_facts else self.fn(bodies)


def as_learned(obj: Any) -> LearnedModel | None:
    """The callback as a `LearnedModel` (None stays None)."""
    if obj is None or isinstance(obj, LearnedModel):
        return obj
    return PlainCallback(obj)
