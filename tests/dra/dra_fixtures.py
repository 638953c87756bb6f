"""Manifest builders for DRA tests (upstream allocator_testing.go's helpers, as dicts)."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.manifest import parse_object

DRIVER = "driver-a"
API = "resource.k8s.io/v1"


def device_class(name: str = "class-a", driver: str = DRIVER, *selectors: str) -> dict[str, Any]:
    sels = [{"cel": {"expression": f'device.driver == "{driver}"'}}]
    sels += [{"cel": {"expression": s}} for s in selectors]
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": sels},
    }


def device(name: str, **attrs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    memory = attrs.pop("memory", None)
    if memory is not None:
        out["capacity"] = {"memory": {"value": memory}}
    kinds = {bool: "bool", int: "int", str: "string"}
    out["attributes"] = {k: {kinds[type(v)]: v} for k, v in attrs.items()}
    return out


def resource_slice(
    name: str,
    devices: list[dict[str, Any]],
    *,
    node: str = "node-1",
    pool: str = "pool-1",
    generation: int = 1,
    count: int = 1,
    driver: str = DRIVER,
    node_selector: dict[str, Any] | None = None,
    all_nodes: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
    }
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    elif all_nodes:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def request(
    name: str = "req-0",
    cls: str = "class-a",
    count: int | None = None,
    *selectors: str,
    mode: str = "",
    admin: bool = False,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if count is not None:
        exactly["count"] = count
    if mode:
        exactly["allocationMode"] = mode
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if admin:
        exactly["adminAccess"] = True
    return {"name": name, "exactly": exactly}


def claim(
    name: str = "claim-0",
    *requests: dict[str, Any],
    constraints: list[Any] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests) or [request()]}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"devices": devices},
    }


def node(name: str = "node-1", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def parse(doc: dict[str, Any]) -> Any:
    return parse_object(doc)
