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
from types import MemberDescriptorType
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
    #: each settable field's slot writer (``_setters``)
    setters: dict[str, Callable[[Any, Any], None]]


def _setters(cls: type, slots: tuple[str, ...]) -> dict[str, Callable[[Any, Any], None]]:
    """Per slot, a function writing it on an instance: the slot's own descriptor's
    ``__set__`` (a frozen dataclass' ``__setattr__`` refuses; ``object.__setattr__``
    looks the name up in the type on every call, the descriptor's setter does not:
    a third less per slot), or ``object.__setattr__`` bound to the name for a slot whose
    descriptor is not the class' own."""
    out: dict[str, Callable[[Any, Any], None]] = {}
    for s in slots:
        desc = cls.__dict__.get(s)
        if type(desc) is MemberDescriptorType:
            out[s] = desc.__set__
        else:
            out[s] = _named_setter(s)
    return out


def _named_setter(name: str) -> Callable[[Any, Any], None]:
    """``object.__setattr__`` of ``name``, for a slot ``_setters`` finds no descriptor
    of the class' own for."""

    def write(obj: Any, value: Any) -> None:
        _set(obj, name, value)

    return write


def _cloner(
    slots: tuple[str, ...], setters: dict[str, Callable[[Any, Any], None]]
) -> Callable[[Any, Any], None]:
    """A function copying ``slots`` from one object to another, one statement per slot:
    half the time of a loop over the names (no tuple of values, no iteration), which
    matters for a Pod's 25 slots copied several times per pod; each slot written by its
    setter (``_setters``), bound once as a default argument."""
    params = "".join(f", _s{i}=_w[{s!r}]" for i, s in enumerate(slots))
    body = "".join(f"    _s{i}(new, old.{s})\n" for i, s in enumerate(slots))
    namespace: dict[str, Any] = {"_w": setters}
    exec(f"def clone(old, new{params}):\n{body}", namespace)
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
    setters = _setters(cls, slots)
    plan = _Plan(
        slots,
        _cloner(slots, setters),
        frozenset(f.name for f in fields if f.init),
        getattr(cls, "__post_init__", None),
        setters,
    )
    _PLANS[cls] = plan
    return plan


def evolve(obj: _T, /, **changes: Any) -> _T:
    """A copy of ``obj`` with ``changes`` applied, as ``dataclasses.replace(obj,
    **changes)`` gives it (and the same error types for a name that is not a field, or
    a field with ``init=False``)."""
    cls = type(obj)
    plan = _PLANS.get(cls) or _plan(cls)
    if not changes.keys() <= plan.settable:  # a comparison: no set built when all are
        name = sorted(changes.keys() - plan.settable)[0]
        if name in plan.slots:  # replace's own errors, so callers cannot tell the two apart
            raise ValueError(f"field {name} is declared with init=False, it cannot be evolved")
        raise TypeError(f"{cls.__name__} got an unexpected keyword argument {name!r}")
    new = object.__new__(cls)
    plan.clone(obj, new)
    setters = plan.setters
    for name, value in changes.items():
        setters[name](new, value)
    if plan.post_init is not None:
        plan.post_init(new)
    return new
