"""NodeVolumeLimits (upstream CSILimits): a node may attach at most its CSINode's
``allocatable.count`` volumes of each CSI driver.

A volume counts once per node under its driver's limit key, identified by
``<driver>/<volume handle>``: CSI PVs by their handle; in-tree PVs and inline volumes of
the plugins migrated to CSI (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx) by the
handle csi-translation-lib gives them; claims not bound yet by their class's
provisioner and a handle made from the claim's name. Only nodes with a CSINode have
limits (its drivers' counts), so the migration question never arises elsewhere.

PreFilter (coordinator) resolves the pod's volumes, and the volume references of the
pods already placed (``nodetable.volumes``) whose driver the pod uses, to those
identities, and gathers the limits. Filter is then columns: per limit key, the distinct
volumes attached per row, plus the pod's volumes not attached there yet, against the
node's limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import EPHEMERAL_VOLUME, GCE_PD_VOLUME, PVC_VOLUME, Pod
from cluster_sched.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim
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
from cluster_sched.framework.status import SUCCESS, Code, Status, skip
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.framework.volume_listers import VolumeListers
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names
from cluster_sched.plugins._storage import (
    INTREE_PLUGINS,
    csi_attach_limit_key,
    ebs_volume_id,
    inline_csi_handle,
    not_found,
    pod_claims,
    pod_uses_claim,
    volume_is_for_pod,
)

NAME = names.NODE_VOLUME_LIMITS
STATE_KEY = "PreFilter" + NAME
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
#: Upstream prefixes the handles of unbound claims with 32 random characters so they
#: cannot meet a real volume ID; a fixed prefix keeps the answer reproducible.
UNBOUND_PREFIX = "unbound-7c1f3e9a5b2d4f60a8e1c3b5d7f9"
#: In-tree plugins isCSIMigrationOn accepts on any node with a CSINode.
MIGRATED = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
        "kubernetes.io/portworx-volume",
    }
)
_BY_PLUGIN = {plugin: (source, driver) for source, (plugin, driver) in INTREE_PLUGINS.items()}

#: (unique volume name, limit key)
Unit = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _State:
    #: a node-independent failure (code, message), e.g. a claim that does not exist
    fail: tuple[int, str] | None = None
    #: the pod's volumes
    new: tuple[Unit, ...] = ()
    #: references on nodes -> their unit, for the limit keys the pod uses
    units: tuple[tuple[str, str, str], ...] = ()
    #: limit key -> ((node, allocatable count), ...) from the CSINodes
    limits: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    #: the listers' generation the above was computed at (caches key on it)
    generation: int = 0
    #: the CSINodes' generation ``limits`` was computed at
    csinode_generation: int = 0


def _gce_handle(pv: PersistentVolume) -> str:
    zone = pv.meta.labels.get("failure-domain.beta.kubernetes.io/zone") or pv.meta.labels.get(
        "topology.kubernetes.io/zone", ""
    )
    zones = zone.split("__") if zone else []
    if len(zones) > 1:
        region = zones[0].rsplit("-", 1)[0]
        return f"projects/UNSPECIFIED/regions/{region}/disks/{pv.volume_handle}"
    return f"projects/UNSPECIFIED/zones/{zones[0] if zones else 'UNSPECIFIED'}/disks/{pv.volume_handle}"


def _pv_unit(pv: PersistentVolume) -> Unit | None:
    if pv.source == "csi":
        return f"{pv.driver}/{pv.volume_handle}", csi_attach_limit_key(pv.driver)
    intree = INTREE_PLUGINS.get(pv.source)
    if intree is None or intree[0] not in MIGRATED:
        return None
    driver = intree[1]
    if pv.source == GCE_PD_VOLUME:
        handle = _gce_handle(pv)
    elif pv.source == "awsElasticBlockStore":
        handle = ebs_volume_id(pv.volume_handle)
    else:
        handle = pv.volume_handle
    return f"{driver}/{handle}", csi_attach_limit_key(driver)


def _class_unit(listers: VolumeListers, pvc: PersistentVolumeClaim) -> Unit | None:
    """getCSIDriverInfoFromSC: the class's provisioner and a handle from the claim."""
    class_name = pvc.class_name
    sc = listers.storage_class(class_name) if class_name else None
    if sc is None:
        return None
    handle = f"{UNBOUND_PREFIX}-{pvc.namespace}/{pvc.name}"
    driver = sc.provisioner
    if driver in _BY_PLUGIN:
        if driver not in MIGRATED:
            return None
        driver = _BY_PLUGIN[driver][1]
    return f"{driver}/{handle}", csi_attach_limit_key(driver)


def claim_unit(listers: VolumeListers, pvc: PersistentVolumeClaim) -> Unit | None:
    """getCSIDriverInfo for a claim (None: not counted)."""
    pv = listers.pv(pvc.volume_name) if pvc.volume_name else None
    if pv is None:
        return _class_unit(listers, pvc)
    return _pv_unit(pv)


def ref_unit(listers: VolumeListers, ref: str) -> Unit | None:
    """The unit of a node's volume reference (``nodetable.volumes``)."""
    kind, _, rest = ref.partition(":")
    if kind == "pvc":
        namespace, _, name = rest.partition("/")
        pvc = listers.pvc(namespace, name)
        return None if pvc is None else claim_unit(listers, pvc)
    intree = INTREE_PLUGINS.get(kind)
    if intree is None or intree[0] not in MIGRATED:
        return None
    ident = rest.rsplit(":", 1)[0] if kind == GCE_PD_VOLUME else rest
    if kind == GCE_PD_VOLUME:
        handle = f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{ident}"
    elif kind == "awsElasticBlockStore":
        handle = ebs_volume_id(ident)
    else:
        handle = ident
    return f"{intree[1]}/{handle}", csi_attach_limit_key(intree[1])


def _may_count(pod: Pod) -> bool:
    """PreFilter's question: a claim, an ephemeral volume or a migratable inline one."""
    return any(
        v.source in (PVC_VOLUME, EPHEMERAL_VOLUME) or v.source in INTREE_PLUGINS
        for v in pod.volumes
    )


class NodeVolumeLimits:
    name = NAME

    def __init__(self) -> None:
        self._units: dict[str, Unit | None] = {}
        self._units_at = -1
        self._limits: dict[str, list[tuple[str, int]]] = {}
        self._limits_at = -1

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.volumes or not _may_count(pod):
            return None, skip()
        listers: VolumeListers = snapshot.volumes
        state.write(STATE_KEY, self._state(pod, listers, snapshot.tables))
        return None, SUCCESS

    def _state(self, pod: Pod, listers: VolumeListers, tables: Iterable[NodeTable]) -> _State:
        new: dict[str, str] = {}
        for use in pod_claims(pod):
            pvc = listers.pvc(pod.namespace, use.claim)
            if pvc is None:
                msg = f"looking up PVC {pod.namespace}/{use.claim}: " + not_found(
                    "PersistentVolumeClaim", use.claim
                )
                return _State(fail=(int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), msg))
            if use.ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    return _State(fail=(int(Code.ERROR), problem))
            unit = claim_unit(listers, pvc)
            if unit is not None:
                new[unit[0]] = unit[1]
        for vol in pod.volumes:
            intree = INTREE_PLUGINS.get(vol.source)
            if intree is not None and intree[0] in MIGRATED:
                driver = intree[1]
                new[f"{driver}/{inline_csi_handle(vol)}"] = csi_attach_limit_key(driver)
        if not new:
            return _State(generation=listers.generation)
        keys = set(new.values())
        if self._units_at != listers.generation:
            self._units = {}
            self._units_at = listers.generation
        units = []
        for table in tables:
            for ref in table.volumes.cols:
                if ref not in self._units:
                    self._units[ref] = ref_unit(listers, ref)
                unit = self._units[ref]
                if unit is not None and unit[1] in keys:
                    units.append((ref, unit[0], unit[1]))
        all_limits = self._all_limits(listers)
        return _State(
            new=tuple(new.items()),
            units=tuple(dict.fromkeys(units)),
            limits=tuple((k, tuple(all_limits.get(k, ()))) for k in sorted(keys)),
            generation=listers.generation,
            csinode_generation=listers.csinode_generation,
        )

    def _all_limits(self, listers: VolumeListers) -> dict[str, list[tuple[str, int]]]:
        """limit key -> (node, count) of every CSINode driver, cached until one changes."""
        if self._limits_at != listers.csinode_generation:
            limits: dict[str, list[tuple[str, int]]] = {}
            for csinode in listers.csinodes.values():
                for drv in csinode.drivers:
                    if drv.allocatable_count is not None:
                        key = csi_attach_limit_key(drv.name)
                        limits.setdefault(key, []).append((csinode.name, drv.allocatable_count))
            self._limits = limits
            self._limits_at = listers.csinode_generation
        return self._limits

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        s: _State | None = state.get(STATE_KEY)
        k = len(nodes)
        if s is None:
            return NodeVerdicts.missing_state(k, STATE_KEY)
        if s.fail is not None:
            return NodeVerdicts.from_mask(np.ones(k, dtype=bool), Code(s.fail[0]), s.fail[1])
        if not s.new:
            return NodeVerdicts.passing(k)
        table = nodes.table
        fails = np.zeros(k, dtype=bool)
        for key, per_node in s.limits:
            if not per_node:
                continue
            limit = nodes.take(_limit_column(table, key, per_node, s.csinode_generation))
            by_unique: dict[str, list[str]] = {}
            for ref, unique, unit_key in s.units:
                if unit_key == key:
                    by_unique.setdefault(unique, []).append(ref)
            attached = nodes.take(_attached(table, key, by_unique, s.generation))
            adding = np.zeros(k, dtype=np.int64)
            for unique, unit_key in s.new:
                if unit_key == key:
                    adding += ~nodes.take(_present(table, by_unique.get(unique, ())))
            fails |= (adding > 0) & (limit >= 0) & (attached + adding > limit)
        return NodeVerdicts.from_mask(
            fails, Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
        )

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A CSINode added (no hint) or given higher limits; a deleted bound pod that
        held volumes; the pod's claim appearing; a VolumeAttachment deleted (no hint)."""
        return (
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE),
                self.is_schedulable_after_csi_node_updated,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_pvc_added,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE)),
        )

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Only a bound pod with counted volumes frees attach slots."""
        if old is None:
            return QueueingHint.QUEUE
        if not old.node_name or not _may_count(old):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pvc_added(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> QueueingHint:
        return QueueingHint.QUEUE if pod_uses_claim(pod, new) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_updated(
        self, pod: Pod, old: CSINode | None, new: CSINode | None
    ) -> QueueingHint:
        """Queue when some driver's attach limit rose or went away."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        before = {d.name: d.allocatable_count for d in old.drivers}
        for d in new.drivers:
            was = before.get(d.name)
            if (
                d.name in before
                and was is not None
                and (d.allocatable_count is None or d.allocatable_count > was)
            ):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _present(table: NodeTable, refs: Iterable[str]) -> np.ndarray:
    """bool[cap]: some pod of the row uses one of ``refs``."""
    mask = np.zeros(table._cap, dtype=bool)
    for ref in refs:
        col = table.volumes.column(ref)
        if col is not None:
            mask |= col > 0
    return mask


def _attached(
    table: NodeTable, key: str, by_unique: dict[str, list[str]], generation: int
) -> np.ndarray:
    """int64[cap]: distinct volumes of limit key ``key`` attached per row."""

    def compute() -> np.ndarray:
        count = np.zeros(table._cap, dtype=np.int64)
        for refs in by_unique.values():
            count += _present(table, refs)
        return count

    return table.memo(("csi-attached", key, generation, table.volumes.version), compute)


def _limit_column(
    table: NodeTable, key: str, per_node: tuple[tuple[str, int], ...], generation: int
) -> np.ndarray:
    """int64[cap]: the CSINode limit for ``key`` per row, -1 where there is none. Built
    once per table and CSINode generation (the loop is over CSINodes, then memoised)."""

    def compute() -> np.ndarray:
        col = np.full(table._cap, -1, dtype=np.int64)
        index = table.index
        rows = [index[name] for name, _ in per_node if name in index]
        counts = [count for name, count in per_node if name in index]
        col[np.asarray(rows, dtype=np.int64)] = np.asarray(counts, dtype=np.int64)
        return col

    return table.memo(("csi-limit", key, generation), compute)


def new(args: Any, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits()
