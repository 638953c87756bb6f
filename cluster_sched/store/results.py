"""What the store's operations return: watch events, apply results, binding outcomes.

These are values (frozen, slotted). ``obj`` fields hold plain manifest dicts as stored;
callers must treat them as read-only, because the store does not copy them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from cluster_sched.errors import StoreError

__all__ = [
    "ApplyAction",
    "ApplyResult",
    "BindOutcome",
    "BindResult",
    "Binding",
    "BindingRequest",
    "EventType",
    "ResourceExpiredError",
    "WatchEvent",
]


class EventType(StrEnum):
    """Watch event types, spelled as the API server's watch spells them."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    #: An entry the store did not write, or whose object is unreadable (upstream's
    #: watch.Error). ``obj`` is ``{"message": why}``; ``kind``, ``key`` and ``rv`` are
    #: what could be read ("" and 0 otherwise). Readers skip it and report it.
    ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One entry of the event stream: an object as it was right after a write.

    ``id`` is the Redis stream id to resume from; ``rv`` the resourceVersion the write got.
    resourceVersions of consecutive stream entries are consecutive integers (every write
    bumps the counter once and appends exactly one event), which is how a watcher notices
    events lost to trimming. For DELETED, ``obj`` is the last stored state (with the
    deletion's ``rv``); it is ``{}`` if that state was unreadable.
    """

    id: str
    type: EventType
    kind: str
    key: str
    obj: dict[str, Any] = field(compare=False, hash=False, repr=False)
    rv: int = 0


class ApplyAction(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    #: Nothing differed from the stored object: no write, no event, no new resourceVersion.
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """The outcome of writing one object. ``event_id`` is "" when nothing was written."""

    kind: str
    key: str
    action: ApplyAction
    rv: int
    obj: dict[str, Any] = field(compare=False, hash=False, repr=False)
    event_id: str = ""


class BindOutcome(IntEnum):
    """Why a binding did or did not happen; the codes ``bind.lua`` returns.

    Every outcome but BOUND is a conflict: nothing was written and no event was emitted,
    exactly as the API server's pods/binding subresource answers 409 Conflict.
    """

    BOUND = 0
    NOT_FOUND = 1
    #: The stored pod has another uid: it was deleted and re-created under the same name.
    UID_MISMATCH = 2
    ALREADY_BOUND = 3
    #: metadata.deletionTimestamp is set.
    TERMINATING = 4
    #: spec.schedulingGates is not empty.
    GATED = 5
    #: The stored bytes are not a msgpack map (only bind_many reports this; bind raises).
    UNREADABLE = 6
    #: The node's allocatable cannot hold the pod besides the pods bound there (the
    #: store's own check; an ``OverCommit`` Warning event is recorded with the refusal).
    OVER_COMMITTED = 7


#: bind.lua's reply codes, looked up without the enum's call per binding
_OUTCOMES = {int(o): o for o in BindOutcome}


def bind_envelope_item(
    b: BindingRequest, requests: Mapping[str, int], check_fit: bool
) -> tuple[Any, ...]:
    """One binding as bind.lua's ARGV[4] entry (requests and skips as plain msgpack
    types, copied only when they are not plain already)."""
    skips = b.fit_skips if check_fit else None
    return (
        b.pod_key,
        b.node_name,
        b.uid or "",
        requests if type(requests) is dict else dict(requests),
        skips if skips is None or type(skips) is list else list(skips),
    )


def bind_outcome(code: int) -> BindOutcome:
    """The BindOutcome of a bind.lua reply code."""
    found = _OUTCOMES.get(code)
    return found if found is not None else BindOutcome(int(code))


@dataclass(frozen=True, slots=True)
class BindingRequest:
    """One binding ``Store.bind_many`` is asked for."""

    pod_key: str
    node_name: str
    uid: str | None
    #: the pod's effective requests; None: read from the stored pod
    requests: Mapping[str, int] | None = None
    #: requested resources the over-commit check ignores (the profile's NodeResourcesFit
    #: ignoredResources); None: no check for this binding
    fit_skips: Sequence[str] | None = ()


#: A binding as callers pass it: (pod key, node, uid or None[, requests[, fit skips]]).
Binding = (
    tuple[str, str, str | None]
    | tuple[str, str, str | None, Mapping[str, int] | None]
    | tuple[str, str, str | None, Mapping[str, int] | None, Sequence[str] | None]
)


@dataclass(frozen=True, slots=True)
class BindResult:
    """The outcome of one binding. ``detail`` is the stored uid (UID_MISMATCH), the node the
    pod is already on (ALREADY_BOUND), the parse error (UNREADABLE) or the event id (BOUND)."""

    pod_key: str
    node_name: str
    outcome: BindOutcome
    rv: int = 0
    detail: str = ""
    uid: str | None = None
    #: the PodScheduled=True condition the binding wrote (None unless BOUND): with the
    #: node and ``rv`` it is all a watcher holding the pod needs to know the bound
    #: manifest without decoding its watch event (``scheduler/own_bindings.py``)
    condition: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def ok(self) -> bool:
        return self.outcome is BindOutcome.BOUND

    @property
    def message(self) -> str:
        """The API server's wording for the same outcome, for logs and FailedScheduling."""
        name = self.pod_key.rpartition("/")[2]
        match self.outcome:
            case BindOutcome.BOUND:
                return f"bound {self.pod_key} to {self.node_name}"
            case BindOutcome.NOT_FOUND:
                return f'pods "{name}" not found'
            case BindOutcome.UID_MISMATCH:
                return (
                    f"Precondition failed: UID in precondition: {self.uid}, "
                    f"UID in object meta: {self.detail}"
                )
            case BindOutcome.ALREADY_BOUND:
                return f'pod {name} is already assigned to node "{self.detail}"'
            case BindOutcome.TERMINATING:
                return f"pod {name} is being deleted, cannot be assigned to a host"
            case BindOutcome.GATED:
                return f"pod {name} has non-empty .spec.schedulingGates"
            case _:
                return f"stored Pod {self.pod_key} is unreadable: {self.detail}"


class ResourceExpiredError(StoreError):
    """A watch cannot continue because events it has not seen were trimmed from the stream.

    The API server answers 410 Gone here; an informer reacts by relisting
    (``Store.list_and_watch``) and watching again from the new snapshot.
    """
