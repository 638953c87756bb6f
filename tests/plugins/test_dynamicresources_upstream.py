"""More cases of upstream's plugin table (dynamicresources_test.go), with its fixtures:
pod my-pod, claim my-pod-my-resource of class my-resource-class (driver some-driver),
node worker with one device; through ``explain``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cluster_sched.api.manifest import parse_object
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.errors import SchedulerError
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.testing.builders import make_pod
from tests.dra.dra_fixtures import claim, device, device_class, node, request, resource_slice

DRIVER = "some-driver"
CLASS = "my-resource-class"
CLAIM = "my-pod-my-resource"
CONFIG = parse_config(
    {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
)
BROKEN = f'device.attributes["{DRIVER}"].healthy'
NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "default", "labels": {"resource.kubernetes.io/admin-access": "true"}},
}


def _pod(template: bool = False) -> Any:
    doc = make_pod("my-pod").req(cpu="1").obj().raw
    entry = {"name": "my-resource"}
    entry |= {"resourceClaimTemplateName": "t"} if template else {"resourceClaimName": CLAIM}
    spec = {**doc["spec"], "resourceClaims": [entry]}
    out = {**doc, "spec": spec, "metadata": {**doc["metadata"], "uid": "1234"}}
    if template:
        out["status"] = {
            "resourceClaimStatuses": [{"name": "my-resource", "resourceClaimName": CLAIM}]
        }
    return parse_object(out)


def _claim(*selectors: str, admin: bool = False, owned: str = "") -> dict[str, Any]:
    req = request("req-1", CLASS, 1, *selectors, admin=admin)
    doc = claim(CLAIM, req)
    if owned:
        doc["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": owned, "controller": True}
        ]
    return doc


def _allocated(name: str, admin: bool = False) -> dict[str, Any]:
    doc = claim(name, request("req-1", CLASS))
    result = {"request": "req-1", "driver": DRIVER, "pool": "worker", "device": "instance-1"}
    if admin:
        result["adminAccess"] = True
        doc["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    doc["status"] = {"allocation": {"devices": {"results": [result]}}}
    return doc


def _explain(pod: Any, *docs: dict[str, Any], cls: dict[str, Any] | None = None) -> Any:
    cache = Cache()
    base = [
        node("worker"),
        cls or device_class(CLASS, DRIVER),
        resource_slice("worker-slice", [device("instance-1")], node="worker", pool="worker",
                       driver=DRIVER),
    ]  # fmt: skip
    cache.load([parse_object(d) for d in (*base, *docs)])
    return explain(cache, pod, CONFIG).json


def test_deleted_claim() -> None:
    doc = _claim(owned="1234")
    doc["metadata"]["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    out = _explain(_pod(template=True), doc)
    assert out["selectedNode"] is None
    assert out["message"] == f'resourceclaim "{CLAIM}" is being deleted'


def test_wrong_claim() -> None:
    out = _explain(_pod(template=True), _claim(owned="1234123"))
    assert out["selectedNode"] is None
    assert out["message"] == (
        f"ResourceClaim default/{CLAIM} was not created for pod default/my-pod (pod is not owner)"
    )


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("claim", f"claim default/{CLAIM}: selector #0: CEL runtime error: no such key: healthy"),
        ("class", f"class {CLASS}: selector #0: CEL runtime error: no such key: healthy"),
    ],
    ids=["claim-parameters-CEL-runtime-error", "class-parameters-CEL-runtime-error"],
)
def test_cel_runtime_error_aborts_the_attempt(where: str, message: str) -> None:
    cls = device_class(CLASS, DRIVER, BROKEN) if where == "class" else None
    doc = _claim(BROKEN) if where == "claim" else _claim()
    if cls is not None:
        # the class's own selector first: #0 is the broken one
        cls["spec"]["selectors"] = [{"cel": {"expression": BROKEN}}]
    with pytest.raises(SchedulerError) as info:
        _explain(_pod(), doc, cls=cls)
    assert str(info.value) == f'running "DynamicResources" filter plugin: {message}'


def test_structured_ignore_allocated_admin_access() -> None:
    """The allocated claim uses admin access, so a second claim may use the device."""
    out = _explain(_pod(), _claim(), _allocated("other", admin=True), NAMESPACE)
    assert out["selectedNode"] == "worker"


def test_request_admin_access_with_the_gate() -> None:
    """Admin access: allocation succeeds although the device is allocated elsewhere."""
    out = _explain(_pod(), _claim(admin=True), _allocated("other"), NAMESPACE)
    assert out["selectedNode"] == "worker"
    plain = _explain(_pod(), _claim(), copy.deepcopy(_allocated("other")), NAMESPACE)
    assert plain["filter"]["worker"]["reasons"] == ["cannot allocate all claims"]
