"""The resources the API serves: names, scope, verbs, short names and where they live.

One table, read by discovery, OpenAPI, routing and the handlers. A resource whose kind
the store holds (``store.kinds``) is read and written there; ``events`` are a view of the
store's Kubernetes Event stream (core/v1 and events.k8s.io/v1 over the one stream); every
other kind kube-scheduler's informers list answers as an empty, read-only collection, so
any scheduler's caches sync. Once the store holds such a kind (DRA adds resource.k8s.io
kinds) it is served from the store with no change here: ``stored`` is decided at call time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cluster_sched.store.kinds import CLUSTER_SCOPED_KINDS, NAMESPACED_KINDS

__all__ = [
    "ALL_VERBS",
    "READ_VERBS",
    "RESOURCES",
    "Resource",
    "group_versions",
    "lookup",
]

#: Verbs of a stored collection, as discovery spells them.
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
#: Verbs of a collection the store does not hold (yet): answers list and watch, empty.
READ_VERBS = ("get", "list", "watch")

#: Fields every kind may be selected by (apimachinery's DefaultMetaFields).
_META_FIELDS = ("metadata.name", "metadata.namespace")


@dataclass(frozen=True, slots=True)
class Resource:
    """One REST resource (``/apis/<group>/<version>/[namespaces/<ns>/]<plural>``)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: subresources beside the object (``status``, ``binding``)
    subresources: tuple[str, ...] = ()
    #: field selectors the API server allows beyond metadata.name/namespace
    fields: tuple[str, ...] = ()
    #: "events": the Kubernetes Event stream's view; "" the store (or empty if it lacks it)
    view: str = ""
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def stored(self) -> bool:
        """Does the store hold this kind (checked now: other work adds kinds)?"""
        return self.kind in CLUSTER_SCOPED_KINDS or self.kind in NAMESPACED_KINDS

    @property
    def verbs(self) -> tuple[str, ...]:
        if self.kind == "Binding":
            return ("create",)
        if self.view == "events":
            return ("create", "delete", "get", "list", "patch", "watch")
        return ALL_VERBS if self.stored else READ_VERBS

    @property
    def selectable_fields(self) -> tuple[str, ...]:
        return _META_FIELDS + self.fields


_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_NEW_EVENT_FIELDS = (
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
)

R = Resource
RESOURCES: tuple[Resource, ...] = (
    R("", "v1", "namespaces", "Namespace", False, ("ns",), fields=("status.phase",)),
    R("", "v1", "nodes", "Node", False, ("no",), subresources=("status",),
      fields=("spec.unschedulable",)),
    R("", "v1", "pods", "Pod", True, ("po",), ("all",), ("status", "binding"), _POD_FIELDS),
    R("", "v1", "bindings", "Binding", True),
    R("", "v1", "events", "Event", True, ("ev",), fields=_EVENT_FIELDS, view="events"),
    R("", "v1", "services", "Service", True, ("svc",), ("all",), ("status",)),
    R("", "v1", "replicationcontrollers", "ReplicationController", True, ("rc",), ("all",),
      ("status",)),
    R("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), subresources=("status",)),
    R("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",),
      subresources=("status",)),
    R("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("all",), ("status",)),
    R("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), ("all",), ("status",)),
    R("apps", "v1", "deployments", "Deployment", True, ("deploy",), ("all",)),
    R("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), ("all",)),
    R("batch", "v1", "jobs", "Job", True, (), ("all",)),
    R("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",),
      subresources=("status",)),
    R("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    R("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    R("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    R("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    R("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
    R("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    R("coordination.k8s.io", "v1", "leases", "Lease", True),
    R("events.k8s.io", "v1", "events", "Event", True, ("ev",), fields=_NEW_EVENT_FIELDS,
      view="events"),
    R("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    R("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, subresources=("status",)),
    R("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    R("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False,
      fields=("spec.nodeName", "spec.driver")),
)  # fmt: skip

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}


def lookup(group: str, version: str, plural: str) -> Resource | None:
    return _BY_PATH.get((group, version, plural))


def group_versions() -> list[tuple[str, str]]:
    """Every (group, version) served, core ("") first, in table order."""
    out: list[tuple[str, str]] = []
    for r in RESOURCES:
        if (r.group, r.version) not in out:
            out.append((r.group, r.version))
    return out
