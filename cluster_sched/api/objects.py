"""Typed, immutable views of the Kubernetes objects the scheduler reads.

These are values: frozen, hashable where cheap, built only by ``api.manifest`` (from
YAML/JSON dicts) or by ``cluster_sched.testing`` builders. Quantities are already
canonical integers (``ResourceList``): CPU in milli-cores, everything else in units.

The raw manifest dict is kept on Pod and Node (``raw``) so the store can write objects
back unchanged except for the fields the scheduler owns (nodeName, nominatedNodeName).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Canonical resource amounts: ``cpu`` in milli-cores, ``memory`` and the rest in units.
ResourceList = Mapping[str, int]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

#: Taint effects, as upstream spells them.
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

#: Pod phases after which a pod holds nothing: the scheduler's informer never lists
#: them (field selector ``status.phase!=Succeeded,status.phase!=Failed``).
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True, slots=True)
class OwnerReference:
    kind: str
    name: str
    uid: str = ""
    controller: bool = False
    #: ``apps/v1``, ``v1``...: PodTopologySpread's system defaults match owners by group/kind.
    api_version: str = ""


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    name: str
    namespace: str = ""
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: Seconds since the epoch; 0.0 when the manifest had none.
    creation_timestamp: float = 0.0
    deletion_timestamp: float | None = None
    owner_references: tuple[OwnerReference, ...] = ()
    resource_version: str = ""


# --- selectors -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelSelectorRequirement:
    key: str
    #: In, NotIn, Exists, DoesNotExist
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector. An empty selector matches everything; ``None`` where a
    selector is optional means "matches nothing", as upstream's conversion does."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    key: str
    #: In, NotIn, Exists, DoesNotExist, Gt, Lt
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    #: Only ``metadata.name`` is a valid field key (In/NotIn), as upstream.
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms are ORed; requirements within a term are ANDed. No terms matches nothing."""

    terms: tuple[NodeSelectorTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    required: NodeSelector | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class Affinity:
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


# --- taints ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    #: Equal (default) or Exists
    operator: str = "Equal"
    value: str = ""
    #: empty matches every effect
    effect: str = ""
    toleration_seconds: int | None = None


# --- pods ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str = ""
    requests: ResourceList = field(default_factory=dict)
    limits: ResourceList = field(default_factory=dict)
    ports: tuple[ContainerPort, ...] = ()
    #: "Always" on an init container makes it a restartable sidecar.
    restart_policy: str = ""


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    #: DoNotSchedule or ScheduleAnyway
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    #: Honor (default) or Ignore
    node_affinity_policy: str = "Honor"
    #: Ignore (default) or Honor
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


#: Pod volume sources the scheduler tells apart (``Volume.source``); every other source
#: (emptyDir, configMap, secret, hostPath, projected...) is ``OTHER_VOLUME``.
PVC_VOLUME = "persistentVolumeClaim"
EPHEMERAL_VOLUME = "ephemeral"
GCE_PD_VOLUME = "gcePersistentDisk"
AWS_EBS_VOLUME = "awsElasticBlockStore"
ISCSI_VOLUME = "iscsi"
RBD_VOLUME = "rbd"
AZURE_DISK_VOLUME = "azureDisk"
AZURE_FILE_VOLUME = "azureFile"
CINDER_VOLUME = "cinder"
PORTWORX_VOLUME = "portworxVolume"
VSPHERE_VOLUME = "vsphereVolume"
CSI_VOLUME = "csi"
OTHER_VOLUME = ""


@dataclass(frozen=True, slots=True)
class Volume:
    """One ``spec.volumes`` entry, reduced to what the volume plugins read.

    ``volume_id`` is the source's identity: the claim name of a PVC, the pdName of a GCE
    PD, the volumeID of EBS/Cinder/Portworx, the IQN of iSCSI, the image of RBD, the
    diskURI of an Azure disk, the driver of an inline CSI volume.
    """

    name: str
    source: str = OTHER_VOLUME
    volume_id: str = ""
    read_only: bool = False
    #: RBD only: the pool and the Ceph monitors
    pool: str = ""
    monitors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pod:
    meta: ObjectMeta
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceList = field(default_factory=dict)
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    priority_class_name: str = ""
    #: PreemptLowerPriority (default) or Never
    preemption_policy: str = "PreemptLowerPriority"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    #: spec.volumes (only the sources the scheduler reads keep their details)
    volumes: tuple[Volume, ...] = ()
    #: spec.resourceClaims (``dra.objects.PodResourceClaim``)
    resource_claims: tuple[Any, ...] = ()
    #: status.resourceClaimStatuses: pod claim name -> generated claim name (or None)
    resource_claim_statuses: Mapping[str, str | None] = field(default_factory=dict)
    #: status.nominatedNodeName
    nominated_node_name: str = ""
    #: status.phase (Pending, Running, Succeeded, Failed)
    phase: str = "Pending"
    #: status.startTime in seconds since the epoch (preemption's tie-break); None if unset
    start_time: float | None = None
    #: Effective requests (containers, init max, sidecars, overhead), computed at parse.
    requests: ResourceList = field(default_factory=dict)
    #: cpu/memory with 100m / 200Mi defaults for containers that request none (scoring).
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)
    #: ``namespace/name``: the pod's identity in the queue, cache and store. Built once
    #: (``replace`` builds it again): the informer, cache, node table and run stats all
    #: key by it, and one string per pod costs less than one per holder and per lookup.
    key: str = field(init=False, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.meta.namespace}/{self.meta.name}")

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def labels(self) -> Mapping[str, str]:
        return self.meta.labels

    @property
    def uid(self) -> str:
        return self.meta.uid


# --- nodes -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContainerImage:
    names: tuple[str, ...]
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Node:
    meta: ObjectMeta
    #: Allocatable resources; ``pods`` is the pod-count limit.
    allocatable: ResourceList = field(default_factory=dict)
    capacity: ResourceList = field(default_factory=dict)
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    images: tuple[ContainerImage, ...] = ()
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def labels(self) -> Mapping[str, str]:
        return self.meta.labels


# --- other kinds -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Namespace:
    meta: ObjectMeta
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """policy/v1 PodDisruptionBudget. ``disruptions_allowed`` is status.disruptionsAllowed;
    ``disrupted_pods`` is status.disruptedPods (pod name → time), which upstream's
    preemption subtracts from the budget's matches."""

    meta: ObjectMeta
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    disruptions_allowed: int = 0
    disrupted_pods: Mapping[str, float] = field(default_factory=dict)
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace


@dataclass(frozen=True, slots=True)
class WorkloadController:
    """A Service, ReplicaSet, StatefulSet or ReplicationController, kept only for its
    selector: PodTopologySpread's system defaults apply to pods these select."""

    kind: str
    meta: ObjectMeta
    #: Service and ReplicationController selectors are plain maps; the others are
    #: full label selectors. Both are stored as LabelSelector.
    selector: LabelSelector | None = None
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """scheduling.k8s.io/v1 PriorityClass. The scheduler itself only reads pod priority;
    the class is kept so a workload can resolve ``priorityClassName`` the way the API
    server's Priority admission plugin does."""

    meta: ObjectMeta
    value: int
    global_default: bool = False
    #: PreemptLowerPriority (default) or Never
    preemption_policy: str = "PreemptLowerPriority"
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


#: Everything ``api.manifest`` can return.
KubeObject = Pod | Node | Namespace | PodDisruptionBudget | WorkloadController | PriorityClass
