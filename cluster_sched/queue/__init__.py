"""The scheduling queue and the nominator, kept in Redis.

``SchedulingQueue`` holds pods waiting to be scheduled (activeQ, backoffQ, the
unschedulable pool, in-flight pods); ``Nominator`` the nodes preemption nominated pods
to. Both are shared by every process using the same Redis and key prefix.
"""

from cluster_sched.queue.keys import DEFAULT_PREFIX, NominatorKeys, QueueKeys
from cluster_sched.queue.nominator import Nominator
from cluster_sched.queue.requeueing import Strategy
from cluster_sched.queue.scheduling_queue import (
    DEFAULT_BACKOFF_FLUSH_INTERVAL,
    DEFAULT_LEFTOVER_FLUSH_INTERVAL,
    IncomingHook,
    SchedulingQueue,
)
from cluster_sched.queue.types import (
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS,
    Location,
    Popped,
    PreEnqueue,
    QueuedPodInfo,
    SortKey,
    backoff_duration,
    priority_sort_key,
)

__all__ = [
    "DEFAULT_BACKOFF_FLUSH_INTERVAL",
    "DEFAULT_LEFTOVER_FLUSH_INTERVAL",
    "DEFAULT_POD_INITIAL_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS",
    "DEFAULT_PREFIX",
    "IncomingHook",
    "Location",
    "Nominator",
    "NominatorKeys",
    "Popped",
    "PreEnqueue",
    "QueueKeys",
    "QueuedPodInfo",
    "SchedulingQueue",
    "SortKey",
    "Strategy",
    "backoff_duration",
    "priority_sort_key",
]
