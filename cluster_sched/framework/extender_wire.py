"""The JSON an HTTP scheduler extender exchanges (upstream ``k8s.io/kube-scheduler/extender/v1``).

Upstream's extender types have no JSON tags, so their fields travel under the Go names
(``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``,
``Error``, ``Host``, ``Score``, ``PodName``, ``NodeNameToMetaVictims``...), and Go's
decoder matches those names case-insensitively: ``field`` does the same here, so an
extender written against either spelling is understood. Pods and Nodes are sent as the
v1 objects the store holds (their manifests); objects built in code without one get a
minimal manifest (metadata, and the resources the scheduler reads).

Everything here is pure data: no I/O (``framework.extender`` does the HTTP).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster_sched.api.objects import CPU, Container, Node, Pod

__all__ = [
    "FilterResult",
    "MetaVictims",
    "WireError",
    "binding_args",
    "decode_binding_result",
    "decode_filter_result",
    "decode_host_priorities",
    "decode_preemption_result",
    "extender_args",
    "field_of",
    "json_default",
    "node_json",
    "pod_json",
    "preemption_args",
]


class WireError(ValueError):
    """An extender's answer does not have the shape of the upstream type."""


@dataclass(frozen=True, slots=True)
class FilterResult:
    """ExtenderFilterResult. ``names`` is None when the extender returned neither
    ``Nodes`` nor ``NodeNames`` (upstream then keeps no node)."""

    names: list[str] | None
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True, slots=True)
class MetaVictims:
    """MetaVictims: victim pod UIDs on one node and how many violate a PDB."""

    uids: tuple[str, ...]
    num_pdb_violations: int = 0


def json_default(value: object) -> Any:
    """``json.dumps`` fallback for what YAML manifests may hold (timestamps, sets)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return value.isoformat() + "Z"
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def field_of(doc: Mapping[str, Any], name: str) -> Any:
    """``doc[name]`` the way Go's decoder finds a field: exact key, else any case."""
    if name in doc:
        return doc[name]
    folded = name.casefold()
    for key, value in doc.items():
        if isinstance(key, str) and key.casefold() == folded:
            return value
    return None


# --- objects ------------------------------------------------------------------------------


def _quantity(resource: str, amount: int) -> str:
    return f"{amount}m" if resource == CPU else str(amount)


def _container(c: Container) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if c.requests:
        resources["requests"] = {k: _quantity(k, v) for k, v in c.requests.items()}
    if c.limits:
        resources["limits"] = {k: _quantity(k, v) for k, v in c.limits.items()}
    out: dict[str, Any] = {"name": c.name, "image": c.image}
    if resources:
        out["resources"] = resources
    return out


def pod_json(pod: Pod) -> Mapping[str, Any]:
    """The v1 Pod as the store holds it, or a minimal one for pods built in code."""
    if pod.raw is not None:
        return pod.raw
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        meta["uid"] = pod.uid
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    spec: dict[str, Any] = {
        "schedulerName": pod.scheduler_name,
        "priority": pod.priority,
        "containers": [_container(c) for c in pod.containers],
    }
    if pod.init_containers:
        spec["initContainers"] = [_container(c) for c in pod.init_containers]
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node_json(node: Node) -> Mapping[str, Any]:
    """The v1 Node as the store holds it, or a minimal one for nodes built in code."""
    if node.raw is not None:
        return node.raw
    meta: dict[str, Any] = {"name": node.name}
    if node.labels:
        meta["labels"] = dict(node.labels)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "status": {
            "capacity": {k: _quantity(k, v) for k, v in node.capacity.items()},
            "allocatable": {k: _quantity(k, v) for k, v in node.allocatable.items()},
        },
    }


# --- requests -----------------------------------------------------------------------------


def extender_args(pod: Pod, nodes: Sequence[Node], node_cache_capable: bool) -> dict[str, Any]:
    """ExtenderArgs: node names only for a node-cache-capable extender, else a NodeList."""
    if node_cache_capable:
        return {"Pod": pod_json(pod), "Nodes": None, "NodeNames": [n.name for n in nodes]}
    items = [node_json(n) for n in nodes]
    node_list = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items}
    return {"Pod": pod_json(pod), "Nodes": node_list, "NodeNames": None}


def binding_args(pod: Pod, node: str) -> dict[str, Any]:
    """ExtenderBindingArgs."""
    return {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node}


def preemption_args(
    pod: Pod,
    victims: Mapping[str, tuple[Sequence[Pod], int]],
    node_cache_capable: bool,
) -> dict[str, Any]:
    """ExtenderPreemptionArgs: ``NodeNameToMetaVictims`` (UIDs) for a node-cache-capable
    extender, else ``NodeNameToVictims`` (whole pods)."""
    if node_cache_capable:
        meta = {
            name: {"Pods": [{"UID": p.uid} for p in pods], "NumPDBViolations": num}
            for name, (pods, num) in victims.items()
        }
        return {"Pod": pod_json(pod), "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
    full = {
        name: {"Pods": [pod_json(p) for p in pods], "NumPDBViolations": num}
        for name, (pods, num) in victims.items()
    }
    return {"Pod": pod_json(pod), "NodeNameToVictims": full, "NodeNameToMetaVictims": None}


# --- answers ------------------------------------------------------------------------------


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise WireError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


def _failed(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    return {str(k): str(v) for k, v in _mapping(value, what).items()}


def _object_name(item: Any) -> str:
    meta = field_of(_mapping(item, "Nodes.items[]"), "metadata")
    name = field_of(_mapping(meta, "Nodes.items[].metadata"), "name") if meta is not None else None
    if not isinstance(name, str):
        raise WireError("Nodes.items[]: a node without metadata.name")
    return name


def decode_filter_result(doc: Any, node_cache_capable: bool) -> FilterResult:
    """ExtenderFilterResult: ``NodeNames`` is read for a node-cache-capable extender that
    set it, else ``Nodes`` (upstream HTTPExtender.Filter)."""
    obj = _mapping(doc, "ExtenderFilterResult")
    error = field_of(obj, "Error") or ""
    failed = _failed(field_of(obj, "FailedNodes"), "FailedNodes")
    unresolvable = _failed(
        field_of(obj, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"
    )
    node_names = field_of(obj, "NodeNames")
    nodes = field_of(obj, "Nodes")
    names: list[str] | None = None
    if node_cache_capable and node_names is not None:
        if not isinstance(node_names, list):
            raise WireError("NodeNames: expected a list")
        names = [str(n) for n in node_names]
    elif nodes is not None:
        items = field_of(_mapping(nodes, "Nodes"), "items") or []
        if not isinstance(items, list):
            raise WireError("Nodes.items: expected a list")
        names = [_object_name(item) for item in items]
    return FilterResult(names, failed, unresolvable, str(error))


def decode_host_priorities(doc: Any) -> list[tuple[str, int]]:
    """HostPriorityList: ``[{"Host": name, "Score": n}]`` (null: no scores)."""
    if doc is None:
        return []
    if not isinstance(doc, list):
        raise WireError("HostPriorityList: expected a JSON list")
    out = []
    for item in doc:
        obj = _mapping(item, "HostPriority")
        host, score = field_of(obj, "Host"), field_of(obj, "Score")
        if not isinstance(host, str) or isinstance(score, bool) or not isinstance(score, int):
            raise WireError("HostPriority: expected a string Host and an integer Score")
        out.append((host, score))
    return out


def decode_binding_result(doc: Any) -> str:
    """ExtenderBindingResult: its Error ("" when the binding succeeded)."""
    if doc is None:
        return ""
    return str(field_of(_mapping(doc, "ExtenderBindingResult"), "Error") or "")


def decode_preemption_result(doc: Any) -> dict[str, MetaVictims]:
    """ExtenderPreemptionResult: node -> victims by UID (the extender always answers
    with MetaVictims)."""
    obj = _mapping(doc, "ExtenderPreemptionResult")
    raw = field_of(obj, "NodeNameToMetaVictims")
    if raw is None:
        return {}
    out = {}
    for node, victims in _mapping(raw, "NodeNameToMetaVictims").items():
        if victims is None:
            out[str(node)] = MetaVictims(())
            continue
        v = _mapping(victims, "MetaVictims")
        pods = field_of(v, "Pods") or []
        if not isinstance(pods, list):
            raise WireError("MetaVictims.Pods: expected a list")
        uids = tuple(str(field_of(_mapping(p, "MetaPod"), "UID") or "") for p in pods)
        num = field_of(v, "NumPDBViolations") or 0
        if isinstance(num, bool) or not isinstance(num, int):
            raise WireError("MetaVictims.NumPDBViolations: expected an integer")
        out[str(node)] = MetaVictims(uids, num)
    return out
