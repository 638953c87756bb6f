"""``dataclasses.replace`` for the frozen, slotted dataclasses copied on the hot path.

A pod is copied several times per scheduling attempt (assumed with its node, bound on
the watch, its queue entry stamped or gated). ``dataclasses.replace`` re-reads the
class's fields and calls ``__init__`` with every field as a keyword: 5.5 µs for a Pod
on the development machine. :func:`evolve` copies the slots as they are (with a
function generated per class, one statement per slot), sets the
changed ones and runs ``__post_init__`` (which for these classes derives or checks
fields from the others): the same object, 2.7 µs. Fields with ``init=False`` are copied
as they are and then re-derived by ``__post_init__``, as ``replace`` leaves them to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

__all__ = ["evolve"]

_T = TypeVar("_T")
_set = object.__setattr__


class _Plan(NamedTuple):
    slots: tuple[str, ...]
    #: copies every slot of the first object onto the second (see _cloner)
    clone: Callable[[Any, Any], None]
    settable: frozenset[str]
    post_init: Callable[[Any], None] | None


def _cloner(slots: tuple[str, ...]) -> Callable[[Any, Any], None]:
    """A function copying ``slots`` from one object to another, one statement per slot:
    half the time of a loop over the names (no tuple of values, no iteration), which
    matters for a Pod's 25 slots copied several times per pod."""
    body = "".join(f"    _set(new, {s!r}, old.{s})\n" for s in slots)
    namespace: dict[str, Any] = {"_set": _set}
    exec(f"def clone(old, new):\n{body}", namespace)
    return namespace["clone"]  # type: ignore[no-any-return]


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    slots = tuple(getattr(cls, "__slots__", ()))
    fields = dataclasses.fields(cls)
    if (
        not slots
        or len(slots) != len(fields)
        or set(slots) != {f.name for f in fields}
        or any(s.startswith("__") for s in slots)  # mangled: not readable as old.<name>
    ):
        raise TypeError(f"evolve needs a slotted dataclass with no other slots: {cls.__name__}")
    plan = _Plan(
        slots,
        _cloner(slots),
        frozenset(f.name for f in fields if f.init),
        getattr(cls, "__post_init__", None),
    )
    _PLANS[cls] = plan
    return plan


def evolve(obj: _T, /, **changes: Any) -> _T:
    """A copy of ``obj`` with ``changes`` applied, as ``dataclasses.replace(obj,
    **changes)`` gives it (and the same error types for a name that is not a field, or
    a field with ``init=False``)."""
    cls = type(obj)
    plan = _PLANS.get(cls) or _plan(cls)
    unknown = changes.keys() - plan.settable
    if unknown:
        name = sorted(unknown)[0]
        if name in plan.slots:  # replace's own errors, so callers cannot tell the two apart
            raise ValueError(f"field {name} is declared with init=False, it cannot be evolved")
        raise TypeError(f"{cls.__name__} got an unexpected keyword argument {name!r}")
    new = object.__new__(cls)
    plan.clone(obj, new)
    for name, value in changes.items():
        _set(new, name, value)
    if plan.post_init is not None:
        plan.post_init(new)
    return new
