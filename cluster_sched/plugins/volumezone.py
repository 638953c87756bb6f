"""VolumeZone: a pod's bound PersistentVolumes must be in the node's zone/region.

PreFilter (coordinator) resolves the pod's claims to their PVs and keeps the PVs'
topology labels (zone/region, beta and GA keys; a value ``a__b`` means several zones).
Filter is a label mask per topology: a node without any zone/region label passes (a
single-zone cluster); otherwise every PV topology must match the node's label, read
from the same key or, for a beta key the node lacks, its GA equivalent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import PVC_VOLUME, Pod
from cluster_sched.api.storage import (
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.status import SUCCESS, Code, Status, skip, unresolvable
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names
from cluster_sched.plugins._storage import not_found, pod_uses_claim

NAME = names.VOLUME_ZONE
STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
#: The PV labels read, in upstream's order.
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}


@dataclass(frozen=True, slots=True)
class _Topology:
    pv_name: str
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _State:
    topologies: tuple[_Topology, ...]


def label_zones(value: str) -> tuple[str, ...] | None:
    """LabelZonesToSet: ``a__b`` -> (a, b); None if a part is empty (label ignored)."""
    parts = [p.strip() for p in value.split("__")]
    if any(not p for p in parts):
        return None
    return tuple(sorted(set(parts)))


def pv_topologies(pv: PersistentVolume) -> list[_Topology]:
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.meta.labels.get(key)
        if value is not None:
            zones = label_zones(value)
            if zones is not None:
                out.append(_Topology(pv.name, key, zones))
    return out


class VolumeZone:
    name = NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.volumes:
            return None, skip()
        listers = snapshot.volumes
        topologies: list[_Topology] = []
        for vol in pod.volumes:
            if vol.source != PVC_VOLUME:
                continue
            pvc = listers.pvc(pod.namespace, vol.volume_id)
            if pvc is None:
                return None, unresolvable(not_found("PersistentVolumeClaim", vol.volume_id))
            if not pvc.volume_name:
                class_name = pvc.class_name
                if not class_name:
                    return None, unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                sc = listers.storage_class(class_name)
                if sc is None:
                    return None, unresolvable(not_found("StorageClass", class_name))
                if sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
                    continue  # unbound volumes are VolumeBinding's business
                return None, unresolvable("PersistentVolume had no name")
            pv = listers.pv(pvc.volume_name)
            if pv is None:
                return None, unresolvable(not_found("PersistentVolume", pvc.volume_name))
            topologies.extend(pv_topologies(pv))
        if not topologies:
            return None, skip()
        state.write(STATE_KEY, _State(tuple(topologies)))
        return None, SUCCESS

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return NodeVerdicts.missing_state(len(nodes), STATE_KEY)
        table = nodes.table
        fails = nodes.take(_conflict_mask(table, s.topologies))
        return NodeVerdicts.from_mask(
            fails, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT
        )

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A WaitForFirstConsumer class appearing, a node added / relabelled (no hint:
        any may carry the zone), a claim of the pod, a PV added or re-zoned (upstream,
        hints on: no node taint updates)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self.is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE
                ),
                self.is_schedulable_after_persistent_volume_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_persistent_volume_change,
            ),
        )

    def is_schedulable_after_storage_class_added(
        self, pod: Pod, old: StorageClass | None, new: StorageClass | None
    ) -> QueueingHint:
        if new is None or new.volume_binding_mode != BINDING_WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_persistent_volume_claim_change(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> QueueingHint:
        return QueueingHint.QUEUE if pod_uses_claim(pod, new) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_persistent_volume_change(
        self, pod: Pod, old: PersistentVolume | None, new: PersistentVolume | None
    ) -> QueueingHint:
        """A new PV, or one whose zone / region labels changed."""
        if old is None or new is None or pv_topologies(old) != pv_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _label_in(table: NodeTable, key: str, values: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(has the label, its value is one of ``values``), bool[cap] each."""
    col = table.labels.get(key)
    if col is None:
        none = np.zeros(table._cap, dtype=bool)
        return none, none
    codes = [c for c in (table.label_code(key, v) for v in values) if c >= 0]
    return col >= 0, np.isin(col, np.asarray(codes, dtype=col.dtype))


def _conflict_mask(table: NodeTable, topologies: tuple[_Topology, ...]) -> np.ndarray:
    """bool[cap]: rows some PV topology rules out."""

    def compute() -> np.ndarray:
        constrained = np.zeros(table._cap, dtype=bool)
        for key in TOPOLOGY_LABELS:
            col = table.labels.get(key)
            if col is not None:
                constrained |= col >= 0
        bad = np.zeros(table._cap, dtype=bool)
        for topo in topologies:
            has, match = _label_in(table, topo.key, topo.values)
            ga = _GA.get(topo.key)
            if ga is not None:
                has_ga, match_ga = _label_in(table, ga, topo.values)
                match = np.where(has, match, has_ga & match_ga)
            bad |= ~match
        return constrained & bad

    return table.memo(("volume-zone", topologies), compute)


def new(args: Any, handle: Handle) -> VolumeZone:
    return VolumeZone()
