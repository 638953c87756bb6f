"""DynamicResources' per-pod cycle data (upstream's stateData), kept apart from the plugin.

What travels in the CycleState must be small and encodable (``state_codec``): a
``Token`` naming the pod, and Reserve's frozen decision (``Reserved``) for PreBind. The
bulky per-cycle data (claims, allocator, per-node allocations) stays in the plugin as a
``PodCycle`` keyed by pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cluster_sched.dra.allocator import Allocator
from cluster_sched.dra.objects import AllocationResult, ResourceClaim

__all__ = ["PodCycle", "Reserved", "Token"]


@dataclass(frozen=True, slots=True)
class Token:
    """What CycleState holds: the pod the plugin's own cycle entry belongs to."""

    pod_key: str
    has_claims: bool
    #: for a shard (no cycle entry of its own): one-request claims' free-device column,
    #: node -> free devices of the class, and how many the pod needs
    free: Mapping[str, int] | None = None
    want: int = 0
    #: some claim to allocate has a prioritized list: the only case Score is not 0
    scores: bool = False


@dataclass(frozen=True, slots=True)
class Reserved:
    """Reserve's decision, for PreBind (travels to the binder): claim key -> allocation
    (None: already allocated, only the reservation is added)."""

    claims: tuple[tuple[str, AllocationResult | None], ...] = ()


@dataclass(slots=True)
class PodCycle:
    claims: list[ResourceClaim]
    to_allocate: list[int]
    allocator: Allocator | None = None
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    #: the pre-check (every slice node-local): free devices each class needs per node
    need: dict[str, int] | None = None
    #: the count check alone decides Filter (``podclaims.is_simple``)
    simple: bool = False
    #: seconds an allocator run in Filter may take per node; 0: no limit
    filter_timeout: float = 0.0
