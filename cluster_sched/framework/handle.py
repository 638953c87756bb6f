"""What a plugin may reach beyond its own arguments: the framework handle.

Upstream's framework.Handle gives plugins the snapshot lister, the waiting-pods map, the
nominator (PodNominator), the preemption evaluator's helpers and the framework itself.
Here each is a typed member, filled by whoever assembles the scheduler
(``cluster_sched.scheduler.profile``); a plugin built outside a scheduler (explain, a
shard, a test) sees None where nothing is provided.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cluster_sched.api.objects import Pod
from cluster_sched.features import FeatureGates
from cluster_sched.framework.events import EVENT_WILDCARD, ClusterEvent
from cluster_sched.framework.extender import EXTENDER_NAME
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.framework.status import Status
from cluster_sched.framework.waiting_pods import WaitingPods

__all__ = ["Binder", "Handle", "NominatedPods", "PreemptionExecutor"]

#: Writes a binding to the store: (pod, node name) -> Status.
Binder = Callable[[Pod, str], Status]
#: node name -> pods nominated there (a live view: the nominator's).
NominatedPods = Mapping[str, Sequence[Pod]]


@runtime_checkable
class PreemptionExecutor(Protocol):
    """Carries out a preemption decision (upstream Evaluator.prepareCandidate)."""

    def prepare_candidate(self, pod: Pod, node_name: str, victims: Sequence[Pod]) -> Status:
        """Before ``pod`` is nominated to ``node_name``: reject victims waiting in Permit
        and delete the others, and clear the nominations of lower-priority pods nominated
        to ``node_name``. A non-success Status aborts the preemption; it is returned as
        PostFilter's status."""
        ...


@dataclass(slots=True)
class Handle:
    """Per-profile services handed to ``new(args, handle)``."""

    profile_name: str = "default-scheduler"
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    binder: Binder | None = None
    #: Seedable randomness (host selection ties, preemption offsets).
    rng: random.Random = field(default_factory=random.Random)
    #: The cluster this profile's cycles read; None outside a scheduler.
    snapshot: Snapshot | None = None
    #: The profile's own Framework (``runtime.Framework``; typed loosely because the
    #: runtime imports this module). DefaultPreemption runs Filter through it.
    framework: Any = None
    #: Acts on PostFilter's preemption decisions; None makes preemption a dry run.
    preemption_executor: PreemptionExecutor | None = None
    #: The nominator's view (node -> nominated pods); None: no nominations.
    nominated_pods: NominatedPods | None = None
    #: The scheduler's feature gates (v1.35 defaults unless the user switched them).
    features: FeatureGates = field(default_factory=FeatureGates)
    #: The scheduler's HTTP extenders (``framework.extender.HTTPExtender``), shared by
    #: every profile as upstream's Handle.Extenders(); empty without any.
    extenders: Sequence[Any] = ()

    def extender_events(self) -> dict[str, tuple[ClusterEvent, ...]]:
        """upstream NewFramework: extenders register no events, so a pod they rejected
        (filed under the ``Extender`` pseudo-plugin) is requeued by any cluster event."""
        return {EXTENDER_NAME: (EVENT_WILDCARD,)} if self.extenders else {}
