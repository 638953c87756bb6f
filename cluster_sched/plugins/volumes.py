"""The volume and DRA plugins of the default profile, for pods without volumes or claims.

cluster-sched does not model PersistentVolumes, CSI drivers or ResourceClaims. Upstream's
plugins Skip (PreFilter) for pods that use none of them; these do exactly that for every
pod, so profiles that name them load and behave as upstream does for such pods.
"""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.status import Status, skip
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.plugins import names


class _NoVolumes:
    name = ""

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        return None, skip()

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        return NodeVerdicts.passing(len(nodes))

    def events_to_register(self) -> tuple[()]:
        """They never reject a pod here, so no event needs to requeue one for them."""
        return ()


class VolumeRestrictions(_NoVolumes):
    name = names.VOLUME_RESTRICTIONS


class NodeVolumeLimits(_NoVolumes):
    name = names.NODE_VOLUME_LIMITS


class VolumeZone(_NoVolumes):
    name = names.VOLUME_ZONE


class VolumeBinding(_NoVolumes):
    """Upstream VolumeBinding also has PreScore/Score (storage capacity scoring) and
    Reserve/PreBind; with no claims all of them are no-ops or Skip."""

    name = names.VOLUME_BINDING

    def pre_score(self, state: CycleState, pod: Pod, snapshot: Any, feasible: Any) -> Status:
        return skip()

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> Any:
        import numpy as np

        return np.zeros(len(nodes), dtype=np.int64)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return Status()


class DynamicResources(_NoVolumes):
    name = names.DYNAMIC_RESOURCES


def new_volume_restrictions(args: Any, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions()


def new_node_volume_limits(args: Any, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits()


def new_volume_zone(args: Any, handle: Handle) -> VolumeZone:
    return VolumeZone()


def new_volume_binding(args: Any, handle: Handle) -> VolumeBinding:
    return VolumeBinding()


def new_dynamic_resources(args: Any, handle: Handle) -> DynamicResources:
    return DynamicResources()
