"""The pod builder: ``make_pod("web-1").req(cpu="1").tolerate(...).obj()``.

Every ``.req()``/``.limits()`` call adds one container (``c0``, ``c1``...); ``.init_req()``
and ``.sidecar_req()`` add init containers. A pod built without containers gets one
container with no requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.testing.manifests import (
    ZONE_LABEL,
    ObjectBuilder,
    Quantity,
    expr,
    pod_term,
    resource_map,
    rfc3339,
    selector_dict,
)


class PodBuilder(ObjectBuilder):
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

    # -- metadata (label, labels, annotation, uid, created: see ObjectBuilder) --
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
        reqs = resource_map(resources, named)
        return self._add_container("containers", {"resources": {"requests": reqs}} if reqs else {})

    def limits(self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity) -> Self:
        """Add a container with limits only (its requests default to them)."""
        return self._add_container(
            "containers", {"resources": {"limits": resource_map(resources, named)}}
        )

    def init_req(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        """Add a (run-to-completion) init container requesting these resources."""
        reqs = resource_map(resources, named)
        return self._add_container(
            "initContainers", {"resources": {"requests": reqs}} if reqs else {}
        )

    def sidecar_req(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        """Add a sidecar: an init container with ``restartPolicy: Always``."""
        reqs = resource_map(resources, named)
        container: dict[str, Any] = {"restartPolicy": "Always"}
        if reqs:
            container["resources"] = {"requests": reqs}
        return self._add_container("initContainers", container)

    def overhead(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        self._spec["overhead"] = resource_map(resources, named)
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

    def volume(self, name: str, **source: Any) -> Self:
        """Add a ``spec.volumes`` entry: ``volume("cache", emptyDir={})``."""
        self._spec.setdefault("volumes", []).append({"name": name, **source})
        return self

    def pvc(self, claim: str, name: str | None = None) -> Self:
        """Add a PersistentVolumeClaim volume (named after the claim unless told)."""
        return self.volume(name or claim, persistentVolumeClaim={"claimName": claim})

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
            constraint["labelSelector"] = selector_dict(match_labels, expressions)
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


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)
