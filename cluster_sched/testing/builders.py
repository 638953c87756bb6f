"""Fluent builders for test objects: they write manifest dicts and parse them with
``api.manifest``, so a built object's ``raw`` is exactly what a workload file would hold.

::

    pod = make_pod("web-1").req(cpu="1", memory="1Gi").label("app", "web").priority(10).obj()
    node = make_node("n1").capacity(cpu="4", memory="32Gi", pods=110).zone("z1").obj()

Every ``.req()``/``.limits()`` call adds one container (``c0``, ``c1``...); ``.init_req()``
and ``.sidecar_req()`` add init containers. A pod built without containers gets one
container with no requests. Nodes get the ``kubernetes.io/hostname`` label the kubelet
sets, and no capacity unless asked.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from typing import Any, Self

from cluster_sched.api.manifest import (
    parse_namespace,
    parse_node,
    parse_pdb,
    parse_pod,
    parse_priority_class,
    parse_workload_controller,
)
from cluster_sched.api.objects import (
    NO_SCHEDULE,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    WorkloadController,
)

__all__ = [
    "HOSTNAME_LABEL",
    "ZONE_LABEL",
    "NodeBuilder",
    "PodBuilder",
    "expr",
    "make_controller",
    "make_namespace",
    "make_node",
    "make_pdb",
    "make_pod",
    "make_priority_class",
    "pod_term",
    "rfc3339",
]

#: Well-known topology labels.
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"

Quantity = str | int | float


def rfc3339(seconds: float) -> str:
    """Epoch seconds to the RFC 3339 string a manifest carries."""
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return moment.isoformat().replace("+00:00", "Z")


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    """One selector requirement: ``expr("zone", "In", "a", "b")``."""
    req: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        req["values"] = list(values)
    return req


def _resources(
    resources: Mapping[str, Quantity] | None, named: Mapping[str, Quantity | None]
) -> dict[str, Quantity]:
    """Merge a plain mapping with keyword resources (``ephemeral_storage`` → ``ephemeral-storage``)."""
    out: dict[str, Quantity] = dict(resources or {})
    for name, value in named.items():
        if value is not None:
            out[name.replace("_", "-")] = value
    return out


def _selector(
    match_labels: Mapping[str, str] | None, expressions: list[dict[str, Any]] | None
) -> dict[str, Any]:
    sel: dict[str, Any] = {}
    if match_labels:
        sel["matchLabels"] = dict(match_labels)
    if expressions:
        sel["matchExpressions"] = list(expressions)
    return sel


def pod_term(
    topology_key: str,
    match_labels: Mapping[str, str] | None = None,
    *,
    expressions: list[dict[str, Any]] | None = None,
    namespaces: list[str] | None = None,
    namespace_selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A PodAffinityTerm manifest dict."""
    term: dict[str, Any] = {
        "topologyKey": topology_key,
        "labelSelector": _selector(match_labels, expressions),
    }
    if namespaces:
        term["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        term["namespaceSelector"] = _selector(namespace_selector, None)
    return term


class _ObjectBuilder:
    """Metadata helpers shared by the pod and node builders."""

    _doc: dict[str, Any]

    @property
    def _meta(self) -> dict[str, Any]:
        return self._doc["metadata"]  # type: ignore[no-any-return]

    def label(self, key: str, value: str) -> Self:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> Self:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def created(self, seconds: float) -> Self:
        self._meta["creationTimestamp"] = rfc3339(seconds)
        return self

    def manifest(self) -> dict[str, Any]:
        """A fresh deep copy of the manifest (the builder stays usable)."""
        return copy.deepcopy(self._doc)


class PodBuilder(_ObjectBuilder):
    """Builds a v1 Pod manifest; every method returns the builder."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._doc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {},
        }

    # -- plumbing --
    @property
    def _spec(self) -> dict[str, Any]:
        return self._doc["spec"]  # type: ignore[no-any-return]

    def _status(self) -> dict[str, Any]:
        return self._doc.setdefault("status", {})  # type: ignore[no-any-return]

    def _affinity(self, kind: str) -> dict[str, Any]:
        return self._spec.setdefault("affinity", {}).setdefault(kind, {})  # type: ignore[no-any-return]

    def _add_container(self, key: str, container: dict[str, Any]) -> Self:
        containers = self._spec.setdefault(key, [])
        prefix = "c" if key == "containers" else "init"
        container.setdefault("name", f"{prefix}{len(containers)}")
        container.setdefault("image", "registry.k8s.io/pause:3.9")
        containers.append(container)
        return self

    # -- metadata (label, labels, annotation, uid, created: see _ObjectBuilder) --
    def owner(
        self, kind: str, name: str, *, api_version: str = "apps/v1", controller: bool = True
    ) -> Self:
        self._meta.setdefault("ownerReferences", []).append(
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                "uid": f"{kind}-{name}",
                "controller": controller,
            }
        )
        return self

    # -- containers and resources --
    def container(
        self,
        name: str | None = None,
        *,
        requests: Mapping[str, Quantity] | None = None,
        limits: Mapping[str, Quantity] | None = None,
        ports: list[dict[str, Any]] | None = None,
        image: str | None = None,
    ) -> Self:
        """A regular container with explicit parts."""
        container: dict[str, Any] = {}
        if name:
            container["name"] = name
        if image:
            container["image"] = image
        resources: dict[str, Any] = {}
        if requests:
            resources["requests"] = dict(requests)
        if limits:
            resources["limits"] = dict(limits)
        if resources:
            container["resources"] = resources
        if ports:
            container["ports"] = ports
        return self._add_container("containers", container)

    def req(self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity) -> Self:
        """Add a container requesting ``cpu=``, ``memory=``, ``ephemeral_storage=`` and/or
        a mapping of any resources (``.req({"example.com/gpu": 1}, cpu="1")``)."""
        reqs = _resources(resources, named)
        return self._add_container("containers", {"resources": {"requests": reqs}} if reqs else {})

    def limits(self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity) -> Self:
        """Add a container with limits only (its requests default to them)."""
        return self._add_container(
            "containers", {"resources": {"limits": _resources(resources, named)}}
        )

    def init_req(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        """Add a (run-to-completion) init container requesting these resources."""
        reqs = _resources(resources, named)
        return self._add_container(
            "initContainers", {"resources": {"requests": reqs}} if reqs else {}
        )

    def sidecar_req(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        """Add a sidecar: an init container with ``restartPolicy: Always``."""
        reqs = _resources(resources, named)
        container: dict[str, Any] = {"restartPolicy": "Always"}
        if reqs:
            container["resources"] = {"requests": reqs}
        return self._add_container("initContainers", container)

    def overhead(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        self._spec["overhead"] = _resources(resources, named)
        return self

    def host_port(
        self,
        port: int,
        *,
        protocol: str = "TCP",
        host_ip: str = "",
        container_port: int | None = None,
    ) -> Self:
        """Expose ``port`` on the host from the last container (one is added if none)."""
        if not self._spec.get("containers"):
            self._add_container("containers", {})
        entry: dict[str, Any] = {
            "containerPort": container_port or port,
            "hostPort": port,
            "protocol": protocol,
        }
        if host_ip:
            entry["hostIP"] = host_ip
        self._spec["containers"][-1].setdefault("ports", []).append(entry)
        return self

    # -- scheduling fields --
    def priority(self, value: int) -> Self:
        self._spec["priority"] = value
        return self

    def priority_class(self, name: str) -> Self:
        self._spec["priorityClassName"] = name
        return self

    def preemption_policy(self, policy: str) -> Self:
        self._spec["preemptionPolicy"] = policy
        return self

    def scheduler_name(self, name: str) -> Self:
        self._spec["schedulerName"] = name
        return self

    def node(self, name: str) -> Self:
        """Bind the pod (spec.nodeName); usually with ``.phase("Running")``."""
        self._spec["nodeName"] = name
        return self

    def node_selector(self, selector: Mapping[str, str] | str, value: str | None = None) -> Self:
        """``.node_selector({"disk": "ssd"})`` or ``.node_selector("disk", "ssd")``."""
        entries = {selector: value or ""} if isinstance(selector, str) else dict(selector)
        self._spec.setdefault("nodeSelector", {}).update(entries)
        return self

    def tolerate(
        self,
        key: str = "",
        operator: str | None = None,
        value: str = "",
        effect: str = "",
        seconds: int | None = None,
    ) -> Self:
        """Add a toleration; the operator defaults to Exists without a value, Equal with one."""
        tol: dict[str, Any] = {"operator": operator or ("Equal" if value else "Exists")}
        if key:
            tol["key"] = key
        if value:
            tol["value"] = value
        if effect:
            tol["effect"] = effect
        if seconds is not None:
            tol["tolerationSeconds"] = seconds
        self._spec.setdefault("tolerations", []).append(tol)
        return self

    def scheduling_gates(self, *names: str) -> Self:
        self._spec["schedulingGates"] = [{"name": name} for name in names]
        return self

    # -- node affinity --
    def node_affinity_required(
        self, *expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None
    ) -> Self:
        """Add one required node selector term (terms are ORed): ``expr(...)`` requirements."""
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = list(expressions)
        if fields:
            term["matchFields"] = fields
        required = self._affinity("nodeAffinity").setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
        )
        required["nodeSelectorTerms"].append(term)
        return self

    def node_affinity_in(self, key: str, *values: str) -> Self:
        return self.node_affinity_required(expr(key, "In", *values))

    def node_affinity_not_in(self, key: str, *values: str) -> Self:
        return self.node_affinity_required(expr(key, "NotIn", *values))

    def affinity_required_zone(self, *zones: str) -> Self:
        """Required node affinity to these topology.kubernetes.io/zone values."""
        return self.node_affinity_in(ZONE_LABEL, *zones)

    def node_affinity_preferred(self, weight: int, *expressions: dict[str, Any]) -> Self:
        self._affinity("nodeAffinity").setdefault(
            "preferredDuringSchedulingIgnoredDuringExecution", []
        ).append({"weight": weight, "preference": {"matchExpressions": list(expressions)}})
        return self

    # -- pod (anti-)affinity --
    def _pod_term(self, kind: str, term: dict[str, Any], weight: int | None) -> Self:
        aff = self._affinity(kind)
        if weight is None:
            aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            aff.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        return self

    def pod_affinity(
        self,
        topology_key: str,
        match_labels: Mapping[str, str] | None = None,
        *,
        weight: int | None = None,
        **term: Any,
    ) -> Self:
        """Required pod affinity term, or preferred when ``weight`` is given; ``term``
        takes pod_term's ``expressions``, ``namespaces`` and ``namespace_selector``."""
        return self._pod_term("podAffinity", pod_term(topology_key, match_labels, **term), weight)

    def pod_anti_affinity(
        self,
        topology_key: str,
        match_labels: Mapping[str, str] | None = None,
        *,
        weight: int | None = None,
        **term: Any,
    ) -> Self:
        """Required pod anti-affinity term, or preferred when ``weight`` is given."""
        return self._pod_term(
            "podAntiAffinity", pod_term(topology_key, match_labels, **term), weight
        )

    # -- topology spread --
    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when_unsatisfiable: str = "DoNotSchedule",
        match_labels: Mapping[str, str] | None = None,
        *,
        expressions: list[dict[str, Any]] | None = None,
        min_domains: int | None = None,
        node_affinity_policy: str | None = None,
        node_taints_policy: str | None = None,
        match_label_keys: list[str] | None = None,
    ) -> Self:
        constraint: dict[str, Any] = {
            "maxSkew": max_skew,
            "topologyKey": topology_key,
            "whenUnsatisfiable": when_unsatisfiable,
        }
        if match_labels is not None or expressions:
            constraint["labelSelector"] = _selector(match_labels, expressions)
        if min_domains is not None:
            constraint["minDomains"] = min_domains
        if node_affinity_policy:
            constraint["nodeAffinityPolicy"] = node_affinity_policy
        if node_taints_policy:
            constraint["nodeTaintsPolicy"] = node_taints_policy
        if match_label_keys:
            constraint["matchLabelKeys"] = list(match_label_keys)
        self._spec.setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    # -- status --
    def phase(self, phase: str) -> Self:
        self._status()["phase"] = phase
        return self

    def nominated(self, node: str) -> Self:
        self._status()["nominatedNodeName"] = node
        return self

    def start_time(self, seconds: float) -> Self:
        self._status()["startTime"] = rfc3339(seconds)
        return self

    # -- output --
    def manifest(self) -> dict[str, Any]:
        """A fresh deep copy of the manifest (the builder stays usable)."""
        doc = super().manifest()
        if not doc["spec"].get("containers"):
            doc["spec"]["containers"] = [{"name": "c0", "image": "registry.k8s.io/pause:3.9"}]
        return doc

    def obj(self) -> Pod:
        return parse_pod(self.manifest(), source="<builder>")


class NodeBuilder(_ObjectBuilder):
    """Builds a v1 Node manifest; every method returns the builder."""

    def __init__(self, name: str) -> None:
        self._doc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name}},
            "spec": {},
            "status": {},
        }

    def zone(self, zone: str) -> Self:
        return self.label(ZONE_LABEL, zone)

    def capacity(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        """Set capacity (``cpu=``, ``memory=``, ``pods=``, ``ephemeral_storage=``, or a
        mapping); allocatable follows it unless ``.allocatable()`` is called."""
        self._doc["status"].setdefault("capacity", {}).update(_resources(resources, named))
        return self

    def allocatable(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        self._doc["status"].setdefault("allocatable", {}).update(_resources(resources, named))
        return self

    def taint(self, key: str, value: str = "", effect: str = NO_SCHEDULE) -> Self:
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self._doc["spec"].setdefault("taints", []).append(taint)
        return self

    def unschedulable(self, flag: bool = True) -> Self:
        self._doc["spec"]["unschedulable"] = flag
        return self

    def image(self, name: str, size_bytes: int, *aliases: str) -> Self:
        self._doc["status"].setdefault("images", []).append(
            {"names": [name, *aliases], "sizeBytes": size_bytes}
        )
        return self

    def obj(self) -> Node:
        return parse_node(self.manifest(), source="<builder>")


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_namespace(name: str, labels: Mapping[str, str] | None = None) -> Namespace:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return parse_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, source="<builder>"
    )


def make_pdb(
    name: str,
    match_labels: Mapping[str, str],
    *,
    namespace: str = "default",
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    disruptions_allowed: int = 0,
    disrupted_pods: Mapping[str, float] | None = None,
) -> PodDisruptionBudget:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    status: dict[str, Any] = {"disruptionsAllowed": disruptions_allowed}
    if disrupted_pods:
        status["disruptedPods"] = {pod: rfc3339(when) for pod, when in disrupted_pods.items()}
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": status,
    }
    return parse_pdb(doc, source="<builder>")


def make_priority_class(
    name: str,
    value: int,
    *,
    global_default: bool = False,
    preemption_policy: str = "PreemptLowerPriority",
) -> PriorityClass:
    doc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
        "preemptionPolicy": preemption_policy,
    }
    return parse_priority_class(doc, source="<builder>")


_CONTROLLER_VERSIONS = {
    "Service": "v1",
    "ReplicationController": "v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
}


def make_controller(
    kind: str, name: str, match_labels: Mapping[str, str], *, namespace: str = "default"
) -> WorkloadController:
    """A Service / ReplicationController (map selector) or ReplicaSet / StatefulSet."""
    if kind in ("Service", "ReplicationController"):
        selector: dict[str, Any] = dict(match_labels)
    else:
        selector = {"matchLabels": dict(match_labels)}
    doc = {
        "apiVersion": _CONTROLLER_VERSIONS.get(kind, "v1"),
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector},
    }
    return parse_workload_controller(doc, source="<builder>")
