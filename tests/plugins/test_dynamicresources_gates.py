"""DynamicResources under its v1.35 gates, through ``explain``: DRAPrioritizedList and
DRAAdminAccess off refuse firstAvailable and adminAccess with upstream's messages;
DRASchedulerFilterTimeout (on) bounds each node's allocator run by the plugin's
``filterTimeout`` (DynamicResourcesArgs), with upstream's "timed out" reason."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.api.manifest import parse_object
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.errors import SchedulerError
from cluster_sched.features import parse_feature_gates
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.testing.builders import make_pod
from tests.dra.dra_fixtures import DRIVER, claim, device, device_class, node, resource_slice

CLUSTER = (
    node("node-1"),
    device_class(),
    resource_slice("s1", [device(f"dev-{i}") for i in range(12)], node="node-1", pool="p1"),
)


def _config(filter_timeout: str | None = None) -> Any:
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if filter_timeout is not None:
        doc["profiles"] = [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [
                    {"name": "DynamicResources", "args": {"filterTimeout": filter_timeout}}
                ],
            }
        ]
    return parse_config(doc)


def _explain(c: dict[str, Any], gates: str = "", filter_timeout: str | None = None) -> Any:
    cache = Cache()
    cache.load([parse_object(d) for d in (*CLUSTER, c)])
    doc = make_pod("pod").req(cpu="1").obj().raw
    spec = {**doc["spec"], "resourceClaims": [{"name": "c", "resourceClaimName": "claim-0"}]}
    pod = parse_object({**doc, "spec": spec, "metadata": {**doc["metadata"], "uid": "u"}})
    features = parse_feature_gates(gates)
    return explain(cache, pod, _config(filter_timeout), features=features).json


PRIORITIZED = {
    "name": "req-0",
    "firstAvailable": [{"name": "one", "deviceClassName": "class-a"}],
}


def test_prioritized_list_on_by_default_off_refused_at_prefilter() -> None:
    c = claim("claim-0", PRIORITIZED)
    assert _explain(c)["selectedNode"] == "node-1"
    out = _explain(c, "DRAPrioritizedList=false")
    assert out["selectedNode"] is None
    assert out["message"] == (
        "0/1 nodes are available: resource claim default/claim-0, request req-0: has "
        "subrequests, but the DRAPrioritizedList feature is disabled. no new claims to "
        "deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for "
        "scheduling."
    )


def test_admin_access_off_is_refused_with_upstreams_message() -> None:
    admin = {"name": "req-0", "exactly": {"deviceClassName": "class-a", "adminAccess": True}}
    c = claim("claim-0", admin)
    # an error status aborts the attempt. On: the namespace lacks the admin-access
    # label; off: the feature itself refuses
    with pytest.raises(SchedulerError, match=r"label on the containing namespace$"):
        _explain(c)
    with pytest.raises(SchedulerError) as info:
        _explain(c, "DRAAdminAccess=false")
    assert str(info.value) == (
        'running "DynamicResources" filter plugin: claim default/claim-0, request req-0: '
        "admin access is requested, but the feature is disabled"
    )


def _hard_claim() -> dict[str, Any]:
    """Five of twelve devices, then one that no device satisfies: the backtracking search
    tries every one of the C(12, 5) = 792 first picks before it fails (the free-device
    pre-check passes: 6 wanted, 12 free)."""
    none = f'"kind" in device.attributes["{DRIVER}"]'
    return claim(
        "claim-0",
        {"name": "many", "exactly": {"deviceClassName": "class-a", "count": 5}},
        {
            "name": "odd",
            "exactly": {"deviceClassName": "class-a", "selectors": [{"cel": {"expression": none}}]},
        },
    )


@pytest.mark.parametrize(
    ("gates", "filter_timeout", "reason"),
    [
        ("", "1ns", "timed out trying to allocate devices"),
        ("", None, "cannot allocate all claims"),  # 10s: the search ends first
        ("", "0s", "cannot allocate all claims"),  # 0: no limit, as upstream
        ("DRASchedulerFilterTimeout=false", "1ns", "cannot allocate all claims"),
    ],
    ids=["tiny-timeout", "default-timeout", "zero-is-no-limit", "gate-off"],
)
def test_filter_timeout(gates: str, filter_timeout: str | None, reason: str) -> None:
    out = _explain(_hard_claim(), gates, filter_timeout)
    assert out["selectedNode"] is None
    assert out["filter"]["node-1"] == {
        "code": "UnschedulableAndUnresolvable",
        "plugin": "DynamicResources",
        "reasons": [reason],
    }
