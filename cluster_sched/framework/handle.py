"""What a plugin may reach beyond its own arguments: the framework handle."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cluster_sched.api.objects import Pod
from cluster_sched.framework.status import Status
from cluster_sched.framework.waiting_pods import WaitingPods


class SnapshotView(Protocol):
    """Cluster-wide facts a plugin may read during a cycle (upstream SharedLister).

    With sharded execution these are the coordinator's reductions over every shard, so a
    shard-local plugin call still sees cluster-wide numbers.
    """

    @property
    def num_nodes(self) -> int: ...

    def image_state(self, name: str) -> tuple[int, int] | None:
        """(size in bytes as first reported, number of nodes holding it) or None."""
        ...


#: Writes a binding to the store: (pod, node name) -> Status.
Binder = Callable[[Pod, str], Status]


@dataclass(slots=True)
class Handle:
    """Per-profile services handed to ``new(args, handle)``."""

    profile_name: str = "default-scheduler"
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    binder: Binder | None = None
    #: Seedable randomness (host selection ties, preemption offsets).
    rng: random.Random = field(default_factory=random.Random)
    #: Filled by the scheduler: cache, nominator, store... (what later plugins need).
    services: dict[str, Any] = field(default_factory=dict)
