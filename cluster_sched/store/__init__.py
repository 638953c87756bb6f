"""The cluster-object store: Kubernetes objects in Redis plus the watch event stream.

``Store`` plays the API server for the scheduler: ``apply``/``delete`` objects,
``bind`` pods (the binding subresource), update pod status, record Kubernetes Events,
and ``list_and_watch``/``watch`` for informers. See ``store.store`` for the Redis layout.
"""

from cluster_sched.store.admission import PriorityClassInfo, PriorityTable, admit_pod
from cluster_sched.store.kinds import (
    CLUSTER_SCOPED_KINDS,
    DEFAULT_NAMESPACE,
    KINDS,
    NAMESPACED_KINDS,
    StoreKeys,
    object_key,
)
from cluster_sched.store.podstatus import (
    POD_SCHEDULED,
    scheduled_condition,
    unschedulable_condition,
    update_pod_condition,
)
from cluster_sched.store.results import (
    ApplyAction,
    ApplyResult,
    BindOutcome,
    BindResult,
    EventType,
    ResourceExpiredError,
    WatchEvent,
)
from cluster_sched.store.store import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_EVENTS_MAXLEN,
    DEFAULT_PREFIX,
    Store,
)
from cluster_sched.store.streams import DEFAULT_BLOCK_MS, DEFAULT_READ_COUNT

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_BLOCK_MS",
    "DEFAULT_EVENTS_MAXLEN",
    "DEFAULT_NAMESPACE",
    "DEFAULT_PREFIX",
    "DEFAULT_READ_COUNT",
    "KINDS",
    "NAMESPACED_KINDS",
    "POD_SCHEDULED",
    "ApplyAction",
    "ApplyResult",
    "BindOutcome",
    "BindResult",
    "EventType",
    "PriorityClassInfo",
    "PriorityTable",
    "ResourceExpiredError",
    "Store",
    "StoreKeys",
    "WatchEvent",
    "admit_pod",
    "object_key",
    "scheduled_condition",
    "unschedulable_condition",
    "update_pod_condition",
]
