"""The rest of upstream's allocator table that v1.35's default gates reach
(k8s.io/dynamic-resource-allocation v0.35.0,
structured/internal/allocatortesting/allocator_testing.go, run against the
"incubating" allocator that the default gates select), with the table's fixtures:
node-1 in region-1, class-a of driver-a, device-1 in pool-1, claim-0 / req-0.

The table has 179 cases plus the 4 "interrupt" subtests. The allocator features a
case turns on decide whether v1.35's defaults reach it (AdminAccess and
PrioritizedList on; PartitionableDevices, DeviceTaints, ConsumableCapacity and
DeviceBindingAndStatus, which needs DRADeviceBindingConditions, off):

- 100 cases need no feature beyond AdminAccess/PrioritizedList: 74 were ported
  before under upstream's names (tests/dra/test_allocator.py,
  tests/dra/test_allocator_upstream.py); the other 26 are here, plus 3 of the 4
  interrupt subtests (off, timeout, deadline; "cancel" has no counterpart: Filter's
  only interruption here is the DRASchedulerFilterTimeout deadline).
- 79 need an off-by-default feature and are not ported:
  ConsumableCapacity 35 (+2 with PrioritizedList, +2 with PartitionableDevices and
  PrioritizedList), PartitionableDevices 13 (+6 with PrioritizedList),
  DeviceTaints 6 (+2 with PrioritizedList, +1 with AdminAccess),
  DeviceBindingAndStatus 5 (+4 with PartitionableDevices, +2 with PartitionableDevices
  and DeviceTaints, +1 with PrioritizedList).

Of the 26 here, 8 run with the feature off on objects that carry the gated fields
(tainted-*-disabled x4, partitionable-devices-disabled-* x3,
binding-conditions-without-feature-gate). The decoder accepts those fields and keeps
what the allocator's gate-off rules need (dra.decode's docstring): all 8 pass with
upstream's expected results.

The four cases upstream builds by mutating a claim into a shape API validation
refuses (empty-class, unknown-selector, unknown-allocation-mode, unknown-constraint)
decode a valid claim and then set that field on the decoded object, as upstream sets
it on the Go object.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from cluster_sched.dra.allocator import AllocationError, AllocationTimeout
from cluster_sched.dra.objects import DeviceConstraint, ResourceClaim
from tests.dra.allocator_upstream_cases import (
    CA,
    CB,
    _allocate,
    _allocator,
    cl,
    dev,
    exact,
    first,
    one,
    r,
    sl,
    sub,
)
from tests.dra.dra_fixtures import claim, explain_claim_pod, node, parse

A = "driver-a"


def pool_slice(name: str, node_name: str, gen: int, count: int, *devices: Any) -> Any:
    """A slice of pool-1 published for ``node_name`` at generation ``gen`` of a pool of
    ``count`` slices (upstream's Spec.Pool.Generation / ResourceSliceCount edits)."""
    out = sl("pool-1", *devices, node=node_name, generation=gen, count=count)
    out["metadata"]["name"] = name
    return out


MULTI_HOST_CASES = [
    pytest.param([pool_slice("slice-1", "node-1", 1, 2, dev("device-1")),
                  pool_slice("slice-2", "node-2", 1, 2, dev("device-2"))],
                 [cl("claim-0", exact(mode="All"))], [[r("req-0")]],
                 id="allocation-mode-all-with-multi-host-resource-pool"),
    pytest.param([pool_slice("slice-1", "node-1", 1, 2, dev("device-1")),
                  pool_slice("slice-2", "node-2", 2, 2, dev("device-2"))],
                 [cl()], None, id="multi-host-resource-pool-with-stale-slice-for-current-node"),
    pytest.param([pool_slice("slice-1", "node-1", 1, 2, dev("device-1")),
                  pool_slice("slice-1", "node-1", 1, 2, dev("device-2")),
                  pool_slice("slice-2", "node-2", 2, 2, dev("device-1")),
                  pool_slice("slice-2", "node-2", 2, 2, dev("device-2"))],
                 [cl()], [[r("req-0")]],
                 id="multi-host-resource-pool-complete-update-from-node-1-to-node-2"),
    pytest.param([pool_slice("slice-1", "node-2", 1, 2, dev("device-1")),
                  pool_slice("slice-1", "node-2", 1, 2, dev("device-2")),
                  pool_slice("slice-2", "node-1", 2, 2, dev("device-1")),
                  pool_slice("slice-2", "node-1", 2, 2, dev("device-2"))],
                 [cl()], [[r("req-0")]],
                 id="multi-host-resource-pool-complete-update-from-node-2-to-node-1"),
    pytest.param([pool_slice("slice-1", "node-1", 1, 2, dev("device-1")),
                  pool_slice("slice-1", "node-1", 1, 2, dev("device-2")),
                  pool_slice("slice-2", "node-2", 2, 2, dev("device-1"))],
                 [cl()], [[r("req-0")]],
                 id="multi-host-resource-pool-incomplete-update-from-node-1-to-node-2"),
    pytest.param([pool_slice("slice-1", "node-2", 1, 2, dev("device-1")),
                  pool_slice("slice-1", "node-2", 1, 2, dev("device-2")),
                  pool_slice("slice-2", "node-1", 2, 2, dev("device-1"))],
                 [cl()], None,
                 id="multi-host-resource-pool-incomplete-update-from-node-2-to-node-1"),
    pytest.param([pool_slice("slice-1", "node-2", 1, 2, dev("device-1")),
                  pool_slice("slice-2", "node-1", 1, 2, dev("device-2"))],
                 [cl()], [[r("req-0", "device-2")]],
                 id="different-resourceslices-in-pool-can-target-different-nodes"),
    pytest.param([pool_slice("slice-1", "node-1", 1, 2, dev("device-1")),
                  pool_slice("slice-2", "node-1", 1, 2, dev("device-1")),
                  sl("pool-2", dev("device-2"))],
                 [cl()], [[r("req-0", "device-2", "pool-2")]],
                 id="invalid-pool-is-ok-if-devices-can-be-allocated-from-other"),
]  # fmt: skip


@pytest.mark.parametrize(("slices", "claims", "want"), MULTI_HOST_CASES)
def test_upstream_pool_case(slices: list[Any], claims: list[Any], want: Any) -> None:
    found = _allocate([CA], slices, claims, {})
    if want is None:
        assert found is None
        return
    assert found is not None
    assert [[(d.request, d.driver, d.pool, d.device, d.admin_access) for d in a.devices]
            for a in found] == want  # fmt: skip


def test_invalid_pool_is_error_if_no_other_device_can_be_allocated() -> None:
    slices = [
        pool_slice("slice-1", "node-1", 1, 2, dev("device-1")),
        pool_slice("slice-2", "node-1", 1, 2, dev("device-1")),
        sl("pool-2", dev("device-2")),
    ]
    opts = {"allocated": {(A, "pool-2", "device-2")}}
    with pytest.raises(AllocationError, match="invalid resource pools were encountered"):
        _allocate([CA], slices, [cl()], opts)


def test_many_devices_okay() -> None:
    """32 devices asked, no slice: no allocation and no error."""
    assert _allocate([CA], [], [cl("claim-0", exact("req-0", "class-a", 32))], {}) is None


def test_all_devices_invalid_cel() -> None:
    """(upstream's name; the case asks for 500 devices)"""
    with pytest.raises(AllocationError, match="exceeds the claim limit"):
        _allocate([CA], [], [cl("claim-0", exact("req-0", "class-a", 500))], {})


def test_prioritized_list_first_unavailable() -> None:
    claims = [cl("claim-0", first("req-0", sub("subReq-0", "class-b"), sub("subReq-1", "class-a")))]
    found = _allocate([CA, CB], [one()], claims, {})
    assert found is not None
    assert [(d.request, d.device) for d in found[0].devices] == [("req-0/subReq-1", "device-1")]


def test_invalid_cel_one_device_class() -> None:
    bad = dict(CA, spec={"selectors": [{"cel": {"expression": "noSuchVar"}}]})
    with pytest.raises(AllocationError, match="undeclared reference"):
        _allocate([bad], [one()], [cl()], {})


def test_invalid_cel_all_devices() -> None:
    req = exact("req-0", "class-a", 1, "noSuchVar", mode="All")
    with pytest.raises(AllocationError, match="undeclared reference"):
        _allocate([CA], [one()], [cl("claim-0", req)], {})


# --- claims in shapes API validation refuses, set on the decoded object -------------


def _reshape_request(c: ResourceClaim, **changes: Any) -> ResourceClaim:
    req = c.spec.requests[0]
    assert req.exactly is not None
    exactly = dataclasses.replace(req.exactly, **changes)
    spec = dataclasses.replace(c.spec, requests=(dataclasses.replace(req, exactly=exactly),))
    return dataclasses.replace(c, spec=spec)


def _unknown_constraint(c: ResourceClaim) -> ResourceClaim:
    spec = dataclasses.replace(c.spec, constraints=(DeviceConstraint(""),))
    return dataclasses.replace(c, spec=spec)


@pytest.mark.parametrize(
    ("reshape", "needle"),
    [
        pytest.param(lambda c: _reshape_request(c, device_class_name=""),
                     "claim default/claim-0, request req-0: missing device class name "
                     "(unsupported request type?)", id="empty-class"),
        pytest.param(lambda c: _reshape_request(c, selectors=("",)),
                     "CEL expression empty (unsupported selector type?)", id="unknown-selector"),
        pytest.param(lambda c: _reshape_request(c, allocation_mode="future-mode"),
                     "unsupported count mode future-mode", id="unknown-allocation-mode"),
        pytest.param(_unknown_constraint, "empty constraint (unsupported constraint type?)",
                     id="unknown-constraint"),
    ],
)  # fmt: skip
def test_upstream_unsupported_claim_shape(reshape: Any, needle: str) -> None:
    """Upstream's claims carry no namespace (klog.KObj prints ``claim-0``); ours are
    decoded into ``default``, so the message names ``default/claim-0``."""
    claim_obj = reshape(parse(cl()))
    alloc = _allocator([CA], [one()], {})
    with pytest.raises(AllocationError) as err:
        alloc.validate([claim_obj])
        alloc.allocate(parse(node("node-1", region="region-1")), [claim_obj])
    assert needle in str(err.value)


# --- interrupt -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["off", "timeout", "deadline"])
def test_interrupt(mode: str) -> None:
    """Six devices asked from five: no allocation when not interrupted; the
    deadline's error when the deadline has passed (a nanosecond timeout, a deadline
    of now)."""
    slices = [sl("pool-1", *(dev(f"device-{i}") for i in range(1, 6)))]
    claims = [parse(cl("claim-0", exact("req-0", "class-a", 6)))]
    alloc = _allocator([CA], slices, {})
    alloc.validate(claims)
    target = parse(node("node-1", region="region-1"))
    if mode == "off":
        assert alloc.allocate(target, claims) is None
        return
    deadline = time.monotonic() + (1e-9 if mode == "timeout" else 0.0)
    time.sleep(1e-6)
    with pytest.raises(AllocationTimeout):
        alloc.allocate(target, claims, deadline)


# --- gated fields on objects while the gate is off: upstream's gate-off rules ---------

TAINT = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
COUNTERS = [{"counterSet": "counter-set-1", "counters": {"memory": {"value": "4Gi"}}}]
SHARED = [{"name": "counter-set-1", "counters": {"memory": {"value": "18Gi"}}}]


def _with(device: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**device, **fields}


def _shared_counters(name: str, count: int) -> dict[str, Any]:
    out = sl("pool-1", count=count)
    out["metadata"]["name"] = name
    out["spec"]["sharedCounters"] = SHARED
    return out


def _per_device() -> dict[str, Any]:
    out = sl("pool-1", _with(dev("device-2"), nodeName="node-1"))
    spec = out["spec"]
    spec.pop("nodeName")
    spec["perDeviceNodeSelection"] = True
    return out


GATE_OFF_CASES = [
    pytest.param([CA], [sl("pool-1", _with(dev(), taints=[TAINT, NO_EXECUTE]))], [cl()], {},
                 [[r("req-0")]], id="tainted-disabled"),
    pytest.param([CA, CB], [sl("pool-1", _with(dev(), taints=[TAINT]))],
                 [cl("claim-0", first("req-0", sub("subReq-0", "class-b"),
                                      sub("subReq-1", "class-a")))], {},
                 [[r("req-0/subReq-1")]], id="tainted-prioritized-list-disabled"),
    pytest.param([CA], [sl("pool-1", _with(dev(), taints=[TAINT]))],
                 [cl("claim-0", exact("req-0", admin=True))],
                 {"allocated": {(A, "pool-1", "device-1"), (A, "pool-1", "device-2")},
                  "ns": {"resource.kubernetes.io/admin-access": "true"}},
                 [[r("req-0", admin=True)]], id="tainted-admin-access-disabled"),
    pytest.param([CA], [sl("pool-1", _with(dev(), taints=[TAINT]))],
                 [cl("claim-0", exact(mode="All"))], {}, [[r("req-0")]],
                 id="tainted-all-devices-single-disabled"),
    pytest.param([CA], [sl("pool-1", _with(dev(), consumesCounters=COUNTERS)),
                        _shared_counters("slice-2", 1)], [cl()], {}, None,
                 id="partitionable-devices-disabled-device-consumes-counters"),
    pytest.param([CA], [sl("pool-1", _with(dev(), consumesCounters=COUNTERS), dev("device-2"),
                           count=2), _shared_counters("slice-2", 2)], [cl()], {},
                 [[r("req-0", "device-2")]],
                 id="partitionable-devices-disabled-other-device-do-not-consume-counters"),
    pytest.param([CA], [_per_device()], [cl()], {}, None,
                 id="partitionable-devices-disabled-per-device-node-selection"),
    pytest.param([CA], [sl("pool-1", _with(dev(), bindingConditions=["IsPrepare"],
                                           bindingFailureConditions=["BindingFailed"]))],
                 [cl()], {}, None, id="binding-conditions-without-feature-gate"),
]  # fmt: skip


@pytest.mark.parametrize(("classes", "slices", "claims", "opts", "want"), GATE_OFF_CASES)
def test_upstream_gate_off_case(
    classes: list[Any], slices: list[Any], claims: list[Any], opts: dict[str, Any], want: Any
) -> None:
    found = _allocate(classes, slices, claims, opts)
    got = None if found is None else [
        [(d.request, d.driver, d.pool, d.device, d.admin_access) for d in a.devices]
        for a in found
    ]  # fmt: skip
    assert got == want


def test_claim_fixture_is_upstreams() -> None:
    """claim-0 with one ExactCount request req-0 for one device of class-a."""
    got = parse(claim("claim-0", exact()))
    assert [(q.name, q.exactly.device_class_name, q.exactly.count)  # type: ignore[union-attr]
            for q in got.spec.requests] == [("req-0", "class-a", 1)]  # fmt: skip


def test_multi_host_pool_through_explain() -> None:
    """different-resourceslices-in-pool-can-target-different-nodes in the scheduler:
    the pool's two slices are on two nodes, so each node sees one slice of a pool of
    two; the pool is complete, and each node can allocate its own device (the Filter's
    device-count pre-check judges pools the same way as the allocator)."""
    out = explain_claim_pod(
        [
            node("node-1"),
            node("node-2"),
            CA,
            pool_slice("slice-1", "node-2", 1, 2, dev("device-1")),
            pool_slice("slice-2", "node-1", 1, 2, dev("device-2")),
            cl(),
        ]
    )
    assert out["filter"] == {"node-1": {"code": "Success"}, "node-2": {"code": "Success"}}
    devices = {n: [a["device"] for a in allocs] for n, allocs in out["resourceClaims"].items()}
    assert devices == {"node-1": ["device-2"], "node-2": ["device-1"]}
