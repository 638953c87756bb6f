"""Cluster events: what changed in the cluster, as the scheduling queue sees it.

A :class:`ClusterEvent` is a resource (``Node``, ``Pod``, ``PersistentVolume``, ...) plus
an :class:`ActionType` bit set. Plugins declare the events that may make a pod they
rejected schedulable (``events_to_register() -> tuple[ClusterEvent, ...]``); when such an
event happens, the queue moves the pods those plugins rejected from the unschedulable
pool back to activeQ/backoffQ.

Matching follows upstream's ``ClusterEvent.Match``: a *registered* event matches an
*incoming* one when the registered event is the wildcard, or the resources match (``Pod``
also covers the internal ``AssignedPod`` / ``UnschedulablePod``) and the action bits
intersect. An incoming wildcard event (``UnschedulableTimeout``, ``ForceActivate``) is
matched only by a registered wildcard; the queue treats it as "move everything" itself.

Labels (``NodeAdd``, ``AssignedPodUpdate``, ``UnschedulableTimeout``) are upstream's, so
``scheduler_queue_incoming_pods_total{event}`` reads the same as kube-scheduler's.

QueueingHints (SchedulerQueueingHints, GA and locked on in v1.35): a plugin registers
each event as a :class:`ClusterEventWithHint`, whose ``queueing_hint_fn(pod, old, new)``
looks at the changed object and answers :attr:`QueueingHint.QUEUE` (the change may make
``pod``, which the plugin rejected, schedulable) or :attr:`QueueingHint.QUEUE_SKIP`.
No function means always QUEUE; a function that raises counts as QUEUE, as upstream.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import reduce
from typing import Any

__all__ = [
    "ALL_CLUSTER_EVENT_LABELS",
    "BACKOFF_COMPLETE",
    "EVENT_ASSIGNED_POD_ADD",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_ASSIGNED_POD_UPDATE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_NODE_ADD",
    "EVENT_NODE_DELETE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EVENT_UNSCHEDULED_POD_ADD",
    "EVENT_UNSCHEDULED_POD_DELETE",
    "EVENT_UNSCHEDULED_POD_UPDATE",
    "EVENT_WILDCARD",
    "FORCE_ACTIVATE",
    "POP_FROM_BACKOFF_Q",
    "SCHEDULE_ATTEMPT_FAILURE",
    "UNSCHEDULABLE_TIMEOUT",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "EventResource",
    "QueueingHint",
    "QueueingHintFn",
    "match_any_cluster_event",
    "with_hint",
]


class ActionType(enum.IntFlag):
    """What happened to a resource; bits combine (``ADD | UPDATE_NODE_LABEL``).

    The ``UPDATE_NODE_*`` bits apply to nodes only and ``UPDATE_POD_*`` to pods only;
    registering a narrow bit instead of ``UPDATE`` means fewer useless requeues.
    """

    NONE = 0
    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    UPDATE_NODE_LABEL = enum.auto()
    #: node taints, or ``spec.unschedulable`` turned off
    UPDATE_NODE_TAINT = enum.auto()
    UPDATE_NODE_CONDITION = enum.auto()
    UPDATE_NODE_ANNOTATION = enum.auto()
    UPDATE_NODE_DECLARED_FEATURE = enum.auto()
    UPDATE_POD_LABEL = enum.auto()
    #: some resource request of the pod went down
    UPDATE_POD_SCALE_DOWN = enum.auto()
    #: a toleration was added (the API allows adding only)
    UPDATE_POD_TOLERATION = enum.auto()
    #: the last scheduling gate was removed
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = enum.auto()
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = enum.auto()
    #: any other change of a pod (annotations, ...): upstream's unexported
    #: ``updatePodOther``, matched only by plugins registering ``UPDATE`` as a whole
    UPDATE_POD_OTHER = enum.auto()
    #: Every update bit: use it when the specific part does not matter.
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_POD_OTHER
    )
    ALL = ADD | DELETE | UPDATE
    #: Older upstream spelling of UPDATE_POD_TOLERATION (an alias, same bit).
    UPDATE_POD_TOLERATIONS = UPDATE_POD_TOLERATION

    @property
    def label(self) -> str:
        """Upstream's ``ActionType.String()``: ``Add``, ``UpdateNodeLabel``, ``Update``.

        A combination without a name of its own (``ADD | DELETE``) has no upstream
        spelling either; it is rendered as its parts joined by ``|``.
        """
        name = _ACTION_LABELS.get(self)
        if name is not None:
            return name
        return "|".join(_ACTION_LABELS[bit] for bit in _SINGLE_BITS if bit & self)


_ACTION_LABELS: dict[ActionType, str] = {
    member: "".join(part.capitalize() for part in member.name.split("_"))
    for member in ActionType.__members__.values()
    if member.name is not None
}
_ACTION_LABELS[ActionType.UPDATE_POD_TOLERATION] = "UpdatePodToleration"
_ACTION_LABELS[ActionType.UPDATE_POD_OTHER] = "Update"  # upstream's String() for it
_SINGLE_BITS = tuple(bit for bit in ActionType if bit.value and (bit.value & (bit.value - 1)) == 0)


class EventResource(enum.StrEnum):
    """The kind of object an event is about; values are upstream's GVK short names."""

    POD = "Pod"
    #: A pod bound to a node (incoming events only; plugins register POD).
    ASSIGNED_POD = "AssignedPod"
    #: A pod not yet bound (incoming events only; plugins register POD).
    UNSCHEDULABLE_POD = "UnschedulablePod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    #: Matches every resource.
    WILDCARD = "*"

    def matches(self, incoming: EventResource) -> bool:
        """Registered resource ``self`` covers the ``incoming`` one."""
        return (
            self is EventResource.WILDCARD
            or self is incoming
            or (
                self is EventResource.POD
                and incoming in (EventResource.ASSIGNED_POD, EventResource.UNSCHEDULABLE_POD)
            )
        )


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change to the cluster: ``ClusterEvent(EventResource.NODE, ActionType.ADD)``.

    ``custom_label`` names special events (``UnschedulableTimeout``) in logs and
    metrics; it takes no part in matching.
    """

    resource: EventResource
    action_type: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        """``NodeAdd``, ``AssignedPodUpdate``, or the custom label."""
        if self.custom_label:
            return self.custom_label
        return f"{self.resource.value}{self.action_type.label}"

    def is_wildcard(self) -> bool:
        return self.resource is EventResource.WILDCARD and self.action_type == ActionType.ALL

    def matches(self, incoming: ClusterEvent) -> bool:
        """This *registered* event admits the ``incoming`` one (upstream ``Match``)."""
        return self.is_wildcard() or (
            self.resource.matches(incoming.resource)
            and bool(self.action_type & incoming.action_type)
        )

    def __str__(self) -> str:
        return self.label


class QueueingHint(enum.Enum):
    """A plugin's answer to "may this event make the pod I rejected schedulable?"."""

    #: The event cannot help: leave the pod where it waits.
    QUEUE_SKIP = 0
    #: The event may help: requeue the pod (after backoff, or at once for Pending).
    QUEUE = 1


#: ``hint(pod, old, new)``: ``pod`` is the waiting pod the plugin rejected; ``old`` /
#: ``new`` the changed object before and after (None for an add / a delete).
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event and the function that filters it per pod (upstream
    ``ClusterEventWithHint``); ``queueing_hint_fn=None`` always queues."""

    event: ClusterEvent
    queueing_hint_fn: QueueingHintFn | None = None

    @property
    def resource(self) -> EventResource:
        return self.event.resource

    @property
    def action_type(self) -> ActionType:
        return self.event.action_type

    def matches(self, incoming: ClusterEvent) -> bool:
        return self.event.matches(incoming)


def with_hint(registered: ClusterEvent | ClusterEventWithHint) -> ClusterEventWithHint:
    """A registration as ClusterEventWithHint (a plain event queues on every match)."""
    if isinstance(registered, ClusterEventWithHint):
        return registered
    return ClusterEventWithHint(registered)


def match_any_cluster_event(
    incoming: ClusterEvent, registered: Iterable[ClusterEvent | ClusterEventWithHint]
) -> bool:
    """Some event in ``registered`` admits ``incoming``."""
    return any(event.matches(incoming) for event in registered)


# --- labels of queue movements that are not cluster events (metrics ``event`` label) ---

#: A scheduling attempt failed and the pod went back to the queue.
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
#: A pod's backoff expired and it moved from backoffQ to activeQ.
BACKOFF_COMPLETE = "BackoffComplete"
#: A pod was popped from backoffQ because activeQ was empty.
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
#: A plugin asked to activate a pod (moved from unschedulable/backoff to activeQ).
FORCE_ACTIVATE = "ForceActivate"
#: A pod stayed in the unschedulable pool longer than podMaxInUnschedulablePodsDuration.
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"

# --- named events the queue and the event handlers use ---

EVENT_ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(EventResource.UNSCHEDULABLE_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(EventResource.UNSCHEDULABLE_POD, ActionType.DELETE)
EVENT_NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
EVENT_NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE)
#: Registering this admits every incoming event.
EVENT_WILDCARD = ClusterEvent(EventResource.WILDCARD, ActionType.ALL)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(
    EventResource.WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT
)
EVENT_FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, FORCE_ACTIVATE)


def _all_labels() -> tuple[str, ...]:
    basic = (ActionType.ADD, ActionType.DELETE, ActionType.UPDATE)
    pod_only: tuple[ActionType, ...] = tuple(
        a
        for a in _SINGLE_BITS
        if a.name and a.name.startswith("UPDATE_POD_") and a is not ActionType.UPDATE_POD_OTHER
    )
    node_only: tuple[ActionType, ...] = tuple(
        a for a in _SINGLE_BITS if a.name and a.name.startswith("UPDATE_NODE_")
    )
    labels = [UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE]
    for resource in EventResource:
        if resource is EventResource.WILDCARD:
            continue
        extra = pod_only if resource is EventResource.POD else ()
        extra = node_only if resource is EventResource.NODE else extra
        labels.extend(ClusterEvent(resource, action).label for action in basic + extra)
    return tuple(labels)


#: Every ``event`` label a cluster event can give the queue metrics (upstream
#: ``AllClusterEventLabels``), for pre-registering metric series.
ALL_CLUSTER_EVENT_LABELS: tuple[str, ...] = _all_labels()

# Keep the flags honest: UPDATE is exactly the update bits, ALL every bit.
assert reduce(lambda a, b: a | b, _SINGLE_BITS, ActionType.NONE) == ActionType.ALL
