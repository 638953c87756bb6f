"""Manifest builders for DRA tests (upstream allocator_testing.go's helpers, as dicts)."""

from __future__ import annotations

import copy
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


def explain_claim_pod(docs: list[dict[str, Any]], claim_name: str = "claim-0") -> dict[str, Any]:
    """``explain`` (default profile) of a pod using claim ``claim_name``, in a cluster
    of ``docs``: its JSON, with ``filter`` per node and ``resourceClaims`` (the devices
    each feasible node would give)."""
    from cluster_sched.cache.cache import Cache
    from cluster_sched.config.load import parse_config
    from cluster_sched.scheduler.explain.decision import explain
    from cluster_sched.testing.builders import make_pod

    cache = Cache()
    cache.load([parse_object(d) for d in docs])
    doc = make_pod("pod").req(cpu="1").obj().raw
    claims = [{"name": "c", "resourceClaimName": claim_name}]
    doc["spec"] = {**doc["spec"], "resourceClaims": claims}
    config = parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )
    out: dict[str, Any] = explain(cache, parse_object(doc), config).json
    return out


# -- upstream's plugin test objects (pkg/scheduler/framework/plugins/dynamicresources/
#    dynamicresources_test.go, v1.35): pod my-pod (uid 1234) in default, claims
#    my-pod-my-resource[-2] of class my-resource-class (no selectors), driver some-driver,
#    node worker[-2|-3] whose slice (pool = node name) has devices instance-N

UP_DRIVER = "some-driver"
UP_CLASS = "my-resource-class"
UP_POD = "my-pod"
UP_POD_UID = "1234"
UP_CLAIM = "my-pod-my-resource"
UP_CLAIM2 = "my-pod-my-resource-2"
UP_FINALIZER = "resource.kubernetes.io/delete-protection"
#: brokenSelector: the attribute only worker-2 and worker-3 have
UP_BROKEN = f'device.attributes["{UP_DRIVER}"].healthy'


def bare_class(name: str = UP_CLASS, *selectors: str) -> dict[str, Any]:
    """upstream's deviceClass: no selector of its own (``device_class`` adds the driver's)."""
    doc = device_class(name, UP_DRIVER)
    doc["spec"]["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return doc


def st_slice(node_name: str, *devices: dict[str, Any], driver: str = UP_DRIVER) -> dict[str, Any]:
    """st.MakeResourceSlice(node, driver).Device(...): pool named after the node."""
    return resource_slice(
        f"{node_name}-{driver}", list(devices), node=node_name, pool=node_name, driver=driver
    )


def sub_request(name: str, count: int = 1, *selectors: str, cls: str = UP_CLASS) -> dict[str, Any]:
    """st.SubRequest / SubRequestWithSelector: one alternative of a firstAvailable list."""
    out: dict[str, Any] = {"name": name, "deviceClassName": cls, "count": count}
    if selectors:
        out["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return out


def up_claim(name: str = UP_CLAIM, *requests: dict[str, Any], owned: bool = True) -> dict[str, Any]:
    """st.MakeResourceClaim().Request(class)...; ``owned``: OwnerReference(my-pod, 1234)."""
    doc = claim(name, *(requests or (request("req-1", UP_CLASS),)))
    if owned:
        doc["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": UP_POD, "uid": UP_POD_UID}
            | {"controller": True}
        ]
    return doc


def node_name_selector(node_name: str) -> dict[str, Any]:
    """st.MakeNodeSelector().In("metadata.name", [node], MatchFields)."""
    match = [{"key": "metadata.name", "operator": "In", "values": [node_name]}]
    return {"nodeSelectorTerms": [{"matchFields": match}]}


def label_selector(key: str, value: str) -> dict[str, Any]:
    """st.MakeNodeSelector().In(key, [value], MatchExpressions)."""
    match = [{"key": key, "operator": "In", "values": [value]}]
    return {"nodeSelectorTerms": [{"matchExpressions": match}]}


def allocated(
    doc: dict[str, Any],
    results: list[tuple[str, str]] | None = None,
    *,
    node_selector: dict[str, Any] | None = None,
    reserved: bool = False,
    admin: bool = False,
) -> dict[str, Any]:
    """st.FromResourceClaim(doc).Allocation(...): ``results`` are (request, device) on
    worker's pool (default: req-1 -> instance-1), on worker unless ``node_selector``; the finalizer
    added; ``reserved``: ReservedForPod(my-pod, 1234); ``admin``: adminAccess(claim)."""
    out = copy.deepcopy(doc)
    if results is None:
        results = [("req-1", "instance-1")]
    if node_selector is None:
        node_selector = node_name_selector("worker")
    items = [
        {"request": r, "driver": UP_DRIVER, "pool": "worker", "device": d}
        | ({"adminAccess": True} if admin else {})
        for r, d in results
    ]
    allocation: dict[str, Any] = {"devices": {"results": items}}
    if node_selector is not None:
        allocation["nodeSelector"] = node_selector
    out["metadata"]["finalizers"] = [UP_FINALIZER]
    out["status"] = {"allocation": allocation}
    if reserved:
        out["status"]["reservedFor"] = [{"resource": "pods", "name": UP_POD, "uid": UP_POD_UID}]
    if admin:
        for req in out["spec"]["devices"]["requests"]:
            req["exactly"]["adminAccess"] = True
    return out


def up_pod(*claims: str, template: bool = False, uid: str = UP_POD_UID) -> Any:
    """podWithClaimName / podWithTwoClaimNames (``claims``: the claims' names, entries
    my-resource, my-resource-2), or podWithClaimTemplate[InStatus] (``template``: the
    claim named in status, "" for none)."""
    from cluster_sched.testing.builders import make_pod

    doc = make_pod(UP_POD).req(cpu="1").obj().raw
    entries = []
    for i, name in enumerate(claims or ("",)):
        entry = "my-resource" + (f"-{i + 1}" if i else "")
        if template:
            entries.append({"name": entry, "resourceClaimTemplateName": UP_CLAIM})
        else:
            entries.append({"name": entry, "resourceClaimName": name})
    out = {**doc, "spec": {**doc["spec"], "resourceClaims": entries}}
    out["metadata"] = {**doc["metadata"], "uid": uid}
    if template and claims and claims[0]:
        out["status"] = {
            "resourceClaimStatuses": [{"name": "my-resource", "resourceClaimName": claims[0]}]
        }
    return parse_object(out)
