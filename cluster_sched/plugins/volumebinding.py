"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable on the node.

- PreFilter (coordinator) checks every claim exists (and is not lost, being deleted, or
  someone else's ephemeral claim), rejects pods with unbound Immediate claims, narrows
  the nodes to those local PVs of bound claims pin (GetEligibleNodes), and prepares
  what Filter needs (``_volumematch.ClaimsState``).
- Filter runs FindPodVolumes vectorised over the rows (``_volumematch``).
- Score, when ``shape`` is configured (upstream's StorageCapacityScoring), scores how
  full the statically matched PVs would be, per storage class.
- Reserve assumes the chosen PVs and provisioning in memory, so later pods do not take
  them; Unreserve forgets that. PreBind writes the bindings to the store (``_volumebind``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import CSI_VOLUME, Pod
from cluster_sched.api.storage import (
    ANN_MIGRATED_PLUGINS,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSIDriver,
    CSINode,
    PersistentVolumeClaim,
    StorageClass,
)
from cluster_sched.config.plugin_args import MAX_CUSTOM_PRIORITY_SCORE, VolumeBindingArgs
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import MAX_NODE_SCORE, NodeSlice, PreFilterResult
from cluster_sched.framework.status import SUCCESS, Code, Status, error, skip, unresolvable
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.framework.volume_listers import VolumeListers
from cluster_sched.plugins import names
from cluster_sched.plugins._storage import not_found, pod_claims, pod_uses_claim, volume_is_for_pod
from cluster_sched.plugins._volumebind import bind_volumes
from cluster_sched.plugins._volumematch import (
    REASONS,
    BoundClaim,
    ClaimsState,
    UnboundClaim,
    candidates_for,
    find_pod_volumes,
    is_delay_binding,
    local_node_names,
    provisioner_of,
)
from cluster_sched.plugins.noderesources.scorers import broken_linear

NAME = names.VOLUME_BINDING
STATE_KEY = NAME
BINDINGS_KEY = NAME + "/bindings"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(frozen=True, slots=True)
class _Bindings:
    """What Reserve decided for the chosen node, for PreBind (it travels to the binder)."""

    all_bound: bool
    node: str = ""
    #: (PV name, claim key) pairs to bind
    static: tuple[tuple[str, str], ...] = ()
    #: claim keys to provision on ``node``
    provisions: tuple[str, ...] = ()


#: Reserve's decision for a pod with nothing to bind: one frozen object for every such pod
#: (its encoding for the binder is remembered by identity, see state_codec)
_ALL_BOUND = _Bindings(all_bound=True)


class VolumeBinding:
    name = NAME

    def __init__(self, args: VolumeBindingArgs, handle: Handle) -> None:
        self._handle = handle
        self._timeout = float(args.bind_timeout_seconds)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self._shape = (
            tuple((p.utilization, p.score * scale) for p in args.shape) if args.shape else None
        )
        # The assume cache (upstream's PV/PVC assume caches): Reserve's decisions, until
        # the watch shows them or Unreserve drops them.
        self._assumed_pvs: dict[str, ClaimRef] = {}
        self._assumed_claims: dict[str, str] = {}
        self._pruned_at = -1

    # -- prefilter

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.volumes:
            return None, skip()
        listers: VolumeListers = snapshot.volumes
        self._prune(listers)
        uses = list(pod_claims(pod))
        if not uses:
            return None, skip()
        bound: list[BoundClaim] = []
        unbound: list[UnboundClaim] = []
        immediate = False
        for use in uses:
            pvc = listers.pvc(pod.namespace, use.claim)
            if pvc is None:
                if use.ephemeral:
                    return None, unresolvable(
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{use.claim}"'
                    )
                return None, unresolvable(not_found("PersistentVolumeClaim", use.claim))
            if pvc.phase == "Lost":
                return None, unresolvable(
                    f'persistentvolumeclaim "{pvc.name}" bound to non-existent '
                    f'persistentvolume "{pvc.volume_name}"'
                )
            if pvc.meta.deletion_timestamp is not None:
                return None, unresolvable(f'persistentvolumeclaim "{pvc.name}" is being deleted')
            if use.ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    return None, unresolvable(problem)
            if pvc.fully_bound:
                pv = listers.pv(pvc.volume_name)
                affinity = pv.node_affinity if pv is not None else None
                bound.append(BoundClaim(pvc.key, pvc.volume_name, pv is not None, affinity))
            elif is_delay_binding(listers, pvc) and not pvc.volume_name:
                provisioner, topologies = provisioner_of(listers, pvc)
                selected = pvc.meta.annotations.get(ANN_SELECTED_NODE)
                if selected is None:
                    selected = self._assumed_claims.get(pvc.key)
                unbound.append(
                    UnboundClaim(
                        claim=pvc.key,
                        uid=pvc.meta.uid,
                        request=pvc.request,
                        class_name=pvc.class_name,
                        selected_node=selected,
                        candidates=candidates_for(listers, pvc, self._assumed_pvs),  # type: ignore[arg-type]
                        provisioner=provisioner,
                        allowed_topologies=topologies,
                    )
                )
            else:
                immediate = True
        if immediate:
            return None, unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, ClaimsState(tuple(bound), tuple(unbound)))
        eligible = _eligible_nodes(listers, bound)
        return (PreFilterResult(frozenset(eligible)) if eligible is not None else None), SUCCESS

    def pre_filter_extensions(self) -> None:
        return None

    def _prune(self, listers: VolumeListers) -> None:
        """Forget assumptions the watch has caught up with (or that lost their object)."""
        if self._pruned_at == listers.generation:
            return
        self._pruned_at = listers.generation
        for name in list(self._assumed_pvs):
            pv = listers.pv(name)
            if pv is None or pv.claim_ref is not None:
                del self._assumed_pvs[name]
        for key in list(self._assumed_claims):
            pvc = listers.pvcs.get(key)
            if pvc is None or pvc.volume_name or ANN_SELECTED_NODE in pvc.meta.annotations:
                del self._assumed_claims[key]

    # -- filter

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        s: ClaimsState | None = state.get(STATE_KEY)
        if s is None:
            return NodeVerdicts.missing_state(len(nodes), STATE_KEY)
        bits = find_pod_volumes(nodes, s).reasons
        return _verdicts(bits)

    # -- score

    def pre_score(self, state: CycleState, pod: Pod, snapshot: Any, feasible: Any) -> Status:
        if self._shape is None or state.get(STATE_KEY) is None:
            return skip()
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        s: ClaimsState | None = state.get(STATE_KEY)
        k = len(nodes)
        if s is None or self._shape is None or not s.unbound:
            return np.zeros(k, dtype=np.int64)
        found = find_pod_volumes(nodes, s)
        total = np.zeros(k, dtype=np.int64)
        classes = np.zeros(k, dtype=np.int64)
        for class_name in sorted({c.class_name for c in s.unbound}):
            requested = np.zeros(k, dtype=np.int64)
            capacity = np.zeros(k, dtype=np.int64)
            present = np.zeros(k, dtype=bool)
            for i, c in enumerate(s.unbound):
                if c.class_name != class_name or not c.candidates:
                    continue
                pick = found.chosen[i]
                hit = pick >= 0
                caps = np.asarray([cand.capacity for cand in c.candidates], dtype=np.int64)
                requested += np.where(hit, c.request, 0)
                capacity += np.where(hit, caps[np.maximum(pick, 0)], 0)
                present |= hit
            over = (capacity == 0) | (requested > capacity)
            util = np.where(over, 100, requested * 100 // np.maximum(capacity, 1))
            total += np.where(present, broken_linear(self._shape, util), 0)
            classes += present
        # math.Round of the mean over classes (non-negative: half away from zero)
        return np.where(classes > 0, (2 * total + classes) // np.maximum(2 * classes, 1), 0)

    # -- reserve / prebind

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        s: ClaimsState | None = state.get(STATE_KEY)
        if s is None or not s.unbound:
            state.write(BINDINGS_KEY, _ALL_BOUND)
            return SUCCESS
        slice_ = _node_slice(self._handle, node_name)
        if slice_ is None:
            return error(f'node "{node_name}" not found')
        found = find_pod_volumes(slice_, s)
        if found.reasons[0]:
            return error(f"no volumes for pod {pod.key} on node {node_name!r} any more")
        static = []
        provisions = []
        for i, c in enumerate(s.unbound):
            j = int(found.chosen[i][0])
            if j >= 0:
                pv = c.candidates[j].pv_name
                static.append((pv, c.claim))
                ns, name = c.claim.split("/", 1)
                self._assumed_pvs[pv] = ClaimRef(ns, name, c.uid)
            elif found.provision[i][0]:
                provisions.append(c.claim)
                self._assumed_claims[c.claim] = node_name
        state.write(BINDINGS_KEY, _Bindings(False, node_name, tuple(static), tuple(provisions)))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        b: _Bindings | None = state.get(BINDINGS_KEY)
        if b is None or b.all_bound:
            return
        for pv, claim in b.static:
            ref = self._assumed_pvs.get(pv)
            if ref is not None and f"{ref.namespace}/{ref.name}" == claim:
                del self._assumed_pvs[pv]
        for claim in b.provisions:
            if self._assumed_claims.get(claim) == b.node:
                del self._assumed_claims[claim]

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """upstream PreBindPreFlight: Skip when PreBind has nothing to bind (no claims,
        or all bound), so NominatedNodeNameForExpectation sets no nomination for it."""
        b: _Bindings | None = state.get(BINDINGS_KEY)
        if b is None or b.all_bound:
            return skip()
        return SUCCESS

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        b: _Bindings | None = state.get(BINDINGS_KEY)
        if b is None or b.all_bound:
            return SUCCESS
        store = getattr(self._handle.binder, "store", None)
        if store is None:
            return error("no store to bind the pod's volumes in")
        return bind_volumes(store, pod, node_name, b.static, b.provisions, self._timeout)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's registrations with hints on (no node taint updates): PVs and nodes
        without hints (any may bind / carry the topology), the rest filtered per pod."""
        add_update = ActionType.ADD | ActionType.UPDATE
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, add_update),
                self.is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_update),
                self.is_schedulable_after_persistent_volume_claim_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, add_update)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, add_update),
                self.is_schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE),
                self.is_schedulable_after_csi_driver_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, add_update)),
        )

    def is_schedulable_after_storage_class_change(
        self, pod: Pod, old: StorageClass | None, new: StorageClass | None
    ) -> QueueingHint:
        """Any new class; an update only if its allowedTopologies changed."""
        if old is None or new is None or old.allowed_topologies != new.allowed_topologies:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_persistent_volume_claim_change(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> QueueingHint:
        return QueueingHint.QUEUE if pod_uses_claim(pod, new) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_change(
        self, pod: Pod, old: CSINode | None, new: CSINode | None
    ) -> QueueingHint:
        """A new CSINode, or a change of its migrated-plugins annotation."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        key = ANN_MIGRATED_PLUGINS
        if old.meta.annotations.get(key) != new.meta.annotations.get(key):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_driver_change(
        self, pod: Pod, old: CSIDriver | None, new: CSIDriver | None
    ) -> QueueingHint:
        """A driver of the pod's inline CSI volumes stopped tracking storage capacity."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        if not old.storage_capacity or new.storage_capacity:
            return QueueingHint.QUEUE_SKIP
        uses = any(v.source == CSI_VOLUME and v.volume_id == new.name for v in pod.volumes)
        return QueueingHint.QUEUE if uses else QueueingHint.QUEUE_SKIP


def _eligible_nodes(listers: VolumeListers, bound: list[BoundClaim]) -> set[str] | None:
    """GetEligibleNodes: the nodes local PVs of the bound claims all allow (None: any)."""
    eligible: set[str] | None = None
    for b in bound:
        pv = listers.pv(b.pv_name)
        if pv is None:
            return None
        names_ = local_node_names(pv)
        if names_:
            eligible = set(names_) if eligible is None else eligible & names_
    return eligible


def _verdicts(bits: np.ndarray) -> NodeVerdicts:
    k = len(bits)
    codes = np.where(bits != 0, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0))
    reasons: list[tuple[str, ...]] = []
    ids = np.zeros(k, dtype=np.int32)
    for value in np.unique(bits[bits != 0]).tolist():
        ids[bits == value] = len(reasons)
        reasons.append(tuple(text for bit, text in REASONS if value & bit))
    return NodeVerdicts(codes.astype(np.int8), ids, reasons)


def _node_slice(handle: Handle, node_name: str) -> NodeSlice | None:
    snapshot = handle.snapshot
    for table in snapshot.tables if snapshot is not None else ():
        row = table.index.get(node_name)
        if row is not None:
            return NodeSlice(table, np.asarray([row], dtype=np.int64))
    return None


def new(args: VolumeBindingArgs | None, handle: Handle) -> VolumeBinding:
    return VolumeBinding(args or VolumeBindingArgs(), handle)
