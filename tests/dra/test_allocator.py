"""The allocator on cases ported from upstream's allocator test table
(structured/internal/allocatortesting, default gates only): which devices for which
request, or no allocation, or an error that aborts the attempt."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.dra.allocator import AllocationError, Allocator
from tests.dra.dra_fixtures import (
    claim,
    device,
    device_class,
    node,
    parse,
    request,
    resource_slice,
)

SMALL = 'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'
LARGE = 'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'
REGION = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "region", "operator": "In", "values": ["west"]}]}
    ]
}


def allocate(
    classes: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    *,
    on: str = "node-1",
    allocated: frozenset[tuple[str, str, str]] = frozenset(),
    ns_labels: dict[str, str] | None = None,
) -> list[list[tuple[str, str, str]]] | None:
    cls = {c.name: c for c in map(parse, classes)}
    alloc = Allocator(
        cls, [parse(s) for s in slices], allocated.__contains__, lambda ns: ns_labels or {}
    )
    parsed = [parse(c) for c in claims]
    alloc.validate(parsed)
    found = alloc.allocate(parse(node(on, region="west")), parsed)
    if found is None:
        return None
    return [[(r.request, r.pool, r.device) for r in res.devices] for res in found]


CASES = [
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])], [claim()], {},
                 [[("req-0", "pool-1", "dev-1")]], id="simple"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")], driver="driver-b"),
                                    resource_slice("s2", [device("dev-2")], node="node-2", pool="pool-2")],
                 [claim()], {"on": "node-2"}, [[("req-0", "pool-2", "dev-2")]], id="other-node"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1", memory="1Gi"), device("dev-2", memory="2Gi")])],
                 [claim("c", request("small", "class-a", 1, SMALL), request("large", "class-a", 1, LARGE))], {},
                 [[("small", "pool-1", "dev-1"), ("large", "pool-1", "dev-2")]], id="small-and-large"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-2", memory="2Gi"), device("dev-1", memory="1Gi")])],
                 [claim("c", request("small", "class-a", 1, SMALL), request("large", "class-a", 1, LARGE))], {},
                 [[("small", "pool-1", "dev-1"), ("large", "pool-1", "dev-2")]], id="small-and-large-backtrack-requests"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")], generation=1),
                                    resource_slice("s2", [device("dev-2")], generation=2)],
                 [claim("c", request("req-0", "class-a", 2))], {}, None, id="obsolete-slice"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])],
                 [claim("c", request("req-0", "class-a", 2))], {}, None, id="not-enough-suitable-devices"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1"), device("dev-2")])],
                 [claim("c", request("req-0", "class-a", mode="All"))], {},
                 [[("req-0", "pool-1", "dev-1"), ("req-0", "pool-1", "dev-2")]], id="all-devices-many"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1"), device("dev-2")])],
                 [claim("c", request("req-0", "class-a", mode="All"))],
                 {"allocated": frozenset({("driver-a", "pool-1", "dev-1")})}, None, id="all-devices-some-allocated"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")], node_selector=REGION)],
                 [claim()], {}, [[("req-0", "pool-1", "dev-1")]], id="network-attached-device"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")], all_nodes=True)],
                 [claim()], {}, [[("req-0", "pool-1", "dev-1")]], id="all-nodes-device"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])], [claim()],
                 {"allocated": frozenset({("driver-a", "pool-1", "dev-1")})}, None, id="already-allocated-devices"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])],
                 [claim("c", request("req-0", admin=True))],
                 {"allocated": frozenset({("driver-a", "pool-1", "dev-1")}),
                  "ns_labels": {"resource.kubernetes.io/admin-access": "true"}},
                 [[("req-0", "pool-1", "dev-1")]], id="admin-access-enabled"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1", numa=1), device("dev-2", numa=2), device("dev-3", numa=2)])],
                 [claim("c", request("req-0", "class-a", 2), constraints=[{"matchAttribute": "driver-a/numa"}])], {},
                 [[("req-0", "pool-1", "dev-2"), ("req-0", "pool-1", "dev-3")]], id="with-constraint-backtrack"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1", numa=1), device("dev-2", numa=2)])],
                 [claim("c", request("req-0", "class-a", 2), constraints=[{"matchAttribute": "driver-a/numa"}])], {},
                 None, id="with-constraint-not-matching-int-attribute"),
    pytest.param([device_class()], [resource_slice("s1", [device("dev-1")], count=2)], [claim()], {},
                 None, id="no-allocation-from-incomplete-pools"),
    pytest.param([device_class()], [resource_slice("s1", [device(f"dev-{i}") for i in range(32)])],
                 [claim("c", request("req-0", "class-a", 32))], {},
                 [[("req-0", "pool-1", f"dev-{i}") for i in range(32)]], id="max-number-devices"),
    pytest.param([device_class(), device_class("class-b", "driver-b")],
                 [resource_slice("s1", [device("dev-1")]), resource_slice("s2", [device("dev-2")], driver="driver-b", pool="pool-b")],
                 [claim("c", request("a", "class-a"), request("b", "class-b"))], {},
                 [[("a", "pool-1", "dev-1"), ("b", "pool-b", "dev-2")]], id="multiple-drivers"),
]  # fmt: skip


@pytest.mark.parametrize(("classes", "slices", "claims", "kw", "want"), CASES)
def test_allocator_table(
    classes: list[Any], slices: list[Any], claims: list[Any], kw: dict[str, Any], want: Any
) -> None:
    assert allocate(classes, slices, claims, **kw) == want


def test_prioritized_list_first_unavailable() -> None:
    first = {
        "name": "req-0",
        "firstAvailable": [
            {"name": "subreq-0", "deviceClassName": "class-a", "count": 2},
            {"name": "subreq-1", "deviceClassName": "class-a", "count": 1},
        ],
    }
    got = allocate([device_class()], [resource_slice("s1", [device("dev-1")])], [claim("c", first)])
    assert got == [[("req-0/subreq-1", "pool-1", "dev-1")]]


def test_network_attached_result_carries_the_slice_selector() -> None:
    cls = {c.name: c for c in [parse(device_class())]}
    alloc = Allocator(
        cls,
        [parse(resource_slice("s1", [device("d")], node_selector=REGION))],
        lambda d: False,
        lambda ns: {},
    )
    (result,) = alloc.allocate(parse(node("node-1", region="west")), [parse(claim())]) or []
    assert result.node_selector == REGION
    local = Allocator(
        cls, [parse(resource_slice("s1", [device("d")]))], lambda d: False, lambda ns: {}
    )
    (result,) = local.allocate(parse(node("node-1")), [parse(claim())]) or []
    assert result.node_selector == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
    }


@pytest.mark.parametrize(
    ("classes", "slices", "claims", "kw", "needle"),
    [
        pytest.param([], [resource_slice("s1", [device("dev-1")])], [claim()], {},
                     "could not retrieve device class class-a", id="unknown-class"),
        pytest.param([device_class()], [resource_slice("s1", [device("dev-1")], count=2), resource_slice("s2", [device("dev-1")], count=2)],
                     [claim()], {}, "invalid resource pools were encountered", id="duplicate-slice"),
        pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])],
                     [claim("c", request("req-0", "class-a", 1, "noSuchVar"))], {}, "undeclared reference", id="invalid-CEL-one-device"),
        pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])],
                     [claim("c", request("req-0", "class-a", 33))], {}, "exceeds the claim limit", id="too-many-devices-single-request"),
        pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])],
                     [claim("c", request("req-0", admin=True))], {}, "admin-access: true` label", id="admin-access-namespace"),
        pytest.param([device_class()], [resource_slice("s1", [device("dev-1")])],
                     [claim("c", request("req-0", "class-a", 1, 'device.attributes["driver-a"].missing'))], {},
                     "no such key: missing", id="cel-runtime-error"),
    ],
)  # fmt: skip
def test_allocator_errors(
    classes: list[Any], slices: list[Any], claims: list[Any], kw: dict[str, Any], needle: str
) -> None:
    with pytest.raises(AllocationError, match=needle):
        allocate(classes, slices, claims, **kw)
