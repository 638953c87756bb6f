"""Upstream VolumeBinding (PVC binding, storage capacity scoring): a stub that Skips."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import Status, skip
from cluster_sched.plugins import names
from cluster_sched.plugins._novolumes import NoVolumes


class VolumeBinding(NoVolumes):
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


def new(args: Any, handle: Handle) -> VolumeBinding:
    return VolumeBinding()
