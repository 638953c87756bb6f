"""Storage objects the volume plugins read: PersistentVolume, PersistentVolumeClaim,
StorageClass, CSINode and CSIDriver, as typed immutable values.

Built only by ``api.manifest`` (from manifests, with the API server's defaults applied)
or by ``cluster_sched.testing``. Storage sizes are canonical integers (bytes, rounded up
as ``resource.Quantity.Value()`` does). The raw manifest is kept (``raw``) so the store
can write an object back with only the binding fields changed (VolumeBinding's PreBind).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_sched.api.objects import LabelSelector, NodeSelector, ObjectMeta

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_MIGRATED_PLUGINS",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_CLASS",
    "BINDING_IMMEDIATE",
    "BINDING_WAIT_FOR_FIRST_CONSUMER",
    "NOT_SUPPORTED_PROVISIONER",
    "READ_WRITE_ONCE_POD",
    "STORAGE_KINDS",
    "CSIDriver",
    "CSINode",
    "CSINodeDriver",
    "ClaimRef",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "StorageObject",
    "TopologySelectorTerm",
]

#: PVC annotation: the PV controller finished binding (``isPVCFullyBound``).
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: PV/PVC annotation: the binding was made by a controller, not pre-bound by a user.
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
#: PVC annotation the scheduler sets to ask for dynamic provisioning on a node.
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: Beta storage-class annotation; wins over spec.storageClassName when present.
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
#: CSINode annotation listing the in-tree plugins migrated to CSI on the node.
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
#: A StorageClass provisioner meaning "no dynamic provisioning".
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """A PV's spec.claimRef: the claim it is bound (or pre-bound) to."""

    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    meta: ObjectMeta
    #: spec.capacity.storage in bytes (0 when absent)
    capacity: int = 0
    access_modes: tuple[str, ...] = ()
    #: spec.storageClassName, or the beta annotation when set (GetPersistentVolumeClass)
    storage_class_name: str = ""
    #: Filesystem (default) or Block
    volume_mode: str = "Filesystem"
    #: spec.nodeAffinity.required
    node_affinity: NodeSelector | None = None
    claim_ref: ClaimRef | None = None
    #: status.phase; without one, what the PV controller sets: Bound if claimRef, else Available
    phase: str = "Available"
    #: the volume source: ``csi``, ``awsElasticBlockStore``, ``gcePersistentDisk``...
    source: str = ""
    #: CSI driver (for ``csi``) and the volume's identity within its source
    driver: str = ""
    volume_handle: str = ""
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    meta: ObjectMeta
    #: spec.storageClassName: None when absent (not the same as "")
    storage_class: str | None = None
    access_modes: tuple[str, ...] = ()
    #: spec.resources.requests.storage in bytes (0 when absent)
    request: int = 0
    volume_name: str = ""
    volume_mode: str = "Filesystem"
    selector: LabelSelector | None = None
    #: status.phase: Pending (default), Bound or Lost
    phase: str = "Pending"
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}"

    @property
    def class_name(self) -> str:
        """GetPersistentVolumeClaimClass: the beta annotation, else spec, else ""."""
        ann = self.meta.annotations.get(ANN_STORAGE_CLASS)
        if ann is not None:
            return ann
        return self.storage_class or ""

    @property
    def fully_bound(self) -> bool:
        """isPVCFullyBound: a volume name and the bind-completed annotation."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.meta.annotations


@dataclass(frozen=True, slots=True)
class TopologySelectorTerm:
    """One allowedTopologies term: every (key, values) requirement must hold (ANDed)."""

    requirements: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class StorageClass:
    meta: ObjectMeta
    provisioner: str
    #: Immediate (the API server's default) or WaitForFirstConsumer
    volume_binding_mode: str = BINDING_IMMEDIATE
    #: terms are ORed; none means every node
    allowed_topologies: tuple[TopologySelectorTerm, ...] = ()
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str = ""
    topology_keys: tuple[str, ...] = ()
    #: allocatable.count: how many of the driver's volumes the node can attach; None: no limit
    allocatable_count: int | None = None


@dataclass(frozen=True, slots=True)
class CSINode:
    """storage.k8s.io/v1 CSINode; its name is the node's name."""

    meta: ObjectMeta
    drivers: tuple[CSINodeDriver, ...] = ()
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def migrated_plugins(self) -> frozenset[str]:
        """The in-tree plugins the annotation says are migrated to CSI on this node."""
        text = self.meta.annotations.get(ANN_MIGRATED_PLUGINS, "")
        return frozenset(text.split(",")) if text else frozenset()


@dataclass(frozen=True, slots=True)
class CSIDriver:
    meta: ObjectMeta
    attach_required: bool = True
    #: spec.storageCapacity: the driver opts into capacity-aware scheduling
    storage_capacity: bool = False
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


#: Everything the storage decoders return.
StorageObject = PersistentVolume | PersistentVolumeClaim | StorageClass | CSINode | CSIDriver

#: kind -> class, for the store, the cache and the event handlers.
STORAGE_KINDS: Mapping[str, type] = {
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
}
