"""VolumeRestrictions: volumes that may not be shared.

- Inline disks: a GCE PD or an iSCSI target mounted by two pods of a node conflicts
  unless both mount it read-only; an AWS EBS volume always does; an RBD image conflicts
  when the two share a Ceph monitor, the pool and the image, unless both are read-only.
  Filter reads the node's volume references (``nodetable.volumes``) for the ones that
  conflict with the pod's: "node(s) had no available disk".
- ReadWriteOncePod claims: if any pod in the cluster already uses one of the pod's RWOP
  claims, every node is Unschedulable (preemption may free it; AddPod/RemovePod keep
  the count as upstream, by claim name).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cluster_sched.api.objects import (
    AWS_EBS_VOLUME,
    GCE_PD_VOLUME,
    ISCSI_VOLUME,
    PVC_VOLUME,
    RBD_VOLUME,
    Pod,
    Volume,
)
from cluster_sched.api.storage import READ_WRITE_ONCE_POD, PersistentVolumeClaim
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
from cluster_sched.framework.status import SUCCESS, Code, Status, error, skip, unresolvable
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.volumes import claim_ref, volume_refs
from cluster_sched.plugins import names
from cluster_sched.plugins._storage import not_found, pod_uses_claim

NAME = names.VOLUME_RESTRICTIONS
STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
_CHECKED = frozenset({GCE_PD_VOLUME, AWS_EBS_VOLUME, RBD_VOLUME, ISCSI_VOLUME})


@dataclass(frozen=True, slots=True)
class _State:
    #: names of the pod's claims with the ReadWriteOncePod access mode
    rwop_claims: tuple[str, ...] = ()
    #: how many pods already use one of them
    conflicts: int = 0
    #: volume references on a node that conflict with one of the pod's inline disks
    conflicting_refs: tuple[str, ...] = ()


def conflicting_refs(vol: Volume) -> tuple[str, ...]:
    """The references (``nodetable.volumes``) of volumes that conflict with ``vol``."""
    if vol.source == AWS_EBS_VOLUME:
        return (f"{vol.source}:{vol.volume_id}",)
    accesses = ("rw",) if vol.read_only else ("rw", "ro")
    if vol.source in (GCE_PD_VOLUME, ISCSI_VOLUME):
        return tuple(f"{vol.source}:{vol.volume_id}:{a}" for a in accesses)
    if vol.source == RBD_VOLUME:
        return tuple(
            f"rbd:{vol.pool}/{vol.volume_id}@{mon}:{a}" for mon in vol.monitors for a in accesses
        )
    return ()


def _claim_uses(pod: Pod, claims: tuple[str, ...]) -> int:
    """conflictingPVCRefCountForPod: the pod's PVC volumes naming one of ``claims``."""
    return sum(1 for v in pod.volumes if v.source == PVC_VOLUME and v.volume_id in claims)


class VolumeRestrictions:
    name = NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.volumes:
            return None, skip()
        refs: dict[str, None] = {}
        for vol in pod.volumes:
            if vol.source in _CHECKED:
                refs.update(dict.fromkeys(conflicting_refs(vol)))
        listers = snapshot.volumes
        rwop: dict[str, None] = {}
        for vol in pod.volumes:
            if vol.source != PVC_VOLUME:
                continue
            pvc = listers.pvc(pod.namespace, vol.volume_id)
            if pvc is None:
                return None, unresolvable(not_found("PersistentVolumeClaim", vol.volume_id))
            if READ_WRITE_ONCE_POD in pvc.access_modes:
                rwop[pvc.name] = None
        conflicts = 0
        for claim in rwop:
            ref = claim_ref(pod.namespace, claim)
            if any(t.volumes.used_anywhere(ref) for t in snapshot.tables):
                conflicts += 1
        has_disks = any(v.source in _CHECKED for v in pod.volumes)
        if not has_disks and conflicts == 0:
            return None, skip()
        state.write(STATE_KEY, _State(tuple(rwop), conflicts, tuple(refs)))
        return None, SUCCESS

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_name: str) -> Status:
        return self._update(state, pod_to_add, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_name: str) -> Status:
        return self._update(state, pod_to_remove, -1)

    def _update(self, state: CycleState, other: Pod, sign: int) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return error(f'cannot read "{STATE_KEY}" from cycleState')
        uses = _claim_uses(other, s.rwop_claims)
        if uses:
            state.write(STATE_KEY, replace(s, conflicts=s.conflicts + sign * uses))
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        s: _State | None = state.get(STATE_KEY)
        k = len(nodes)
        if s is None:
            return NodeVerdicts.missing_state(k, STATE_KEY)
        verdicts = NodeVerdicts.passing(k)
        if s.conflicting_refs:
            index = nodes.table.volumes
            disk = np.zeros(k, dtype=bool)
            for ref in s.conflicting_refs:
                col = index.column(ref)
                if col is not None:
                    disk |= nodes.take(col) > 0
            verdicts = NodeVerdicts.from_mask(disk, Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        if s.conflicts > 0:
            verdicts.merge_first_failure(
                NodeVerdicts.from_mask(
                    np.ones(k, dtype=bool), Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT
                )
            )
        return verdicts

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A deleted pod releasing a conflicting disk or a ReadWriteOncePod claim; a new
        node (no hint: any may be free); the pod's missing claim appearing (upstream,
        hints on: Node/Add only)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_persistent_volume_claim_added,
            ),
        )

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Queue when the deleted pod (of the pod's namespace, as upstream) held a disk
        conflicting with the pod's, or used one of its claims."""
        if old is None:
            return QueueingHint.QUEUE
        if old.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        held = set(volume_refs(old))
        for vol in pod.volumes:
            if held.intersection(conflicting_refs(vol)):
                return QueueingHint.QUEUE
            if vol.source == PVC_VOLUME and claim_ref(pod.namespace, vol.volume_id) in held:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_persistent_volume_claim_added(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> QueueingHint:
        return QueueingHint.QUEUE if pod_uses_claim(pod, new) else QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions()
