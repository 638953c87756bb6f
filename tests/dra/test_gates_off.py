"""Objects carrying the fields of DRA gates v1.35 leaves off, read as v1.35's
scheduler reads them (k8s.io/dynamic-resource-allocation v0.35, the "incubating"
allocator with DRAPartitionableDevices, DRADeviceBindingConditions,
DRAConsumableCapacity and DRADeviceTaints off), beyond upstream's 8 gate-off table
cases (test_allocator_upstream_extra.py): mode All, CEL errors, pools, the claim
fields, and the Filter's device-count pre-check agreeing with the allocator.
"""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.dra.allocator import AllocationError
from cluster_sched.dra.listers import DraListers
from tests.dra.allocator_upstream_cases import CA, _allocate, cl, dev, exact, r, sl
from tests.dra.dra_fixtures import (
    DRIVER,
    claim,
    device_class,
    explain_claim_pod,
    node,
    parse,
    resource_slice,
)

COUNTERS = [{"counterSet": "counter-set-1", "counters": {"memory": {"value": "4Gi"}}}]
SHARED = [{"name": "counter-set-1", "counters": {"memory": {"value": "18Gi"}}}]
BOUND = {"bindingConditions": ["IsPrepare"], "bindingFailureConditions": ["BindingFailed"]}
#: fails at run time on a device without the attribute
MODEL = f'device.attributes["{DRIVER}"].model == "a"'


def counters(name: str = "device-1") -> dict[str, Any]:
    return {**dev(name), "consumesCounters": COUNTERS}


def bound(name: str = "device-1") -> dict[str, Any]:
    return {**dev(name), **BOUND}


def shared_slice(name: str = "slice-2", count: int = 1, generation: int = 1) -> dict[str, Any]:
    out = resource_slice(name, [], count=count, generation=generation)
    out["spec"]["sharedCounters"] = SHARED
    return out


def results(found: Any) -> Any:
    if found is None:
        return None
    return [
        [(d.request, d.driver, d.pool, d.device, d.admin_access) for d in a.devices] for a in found
    ]


def test_mode_all_fails_on_a_device_that_consumes_counters() -> None:
    """upstream: the device is among "all" (isSelectable), then allocateDevice(must)
    refuses it, and the All request has no solution on the node."""
    got = _allocate(
        [CA],
        [sl("pool-1", dev("device-1"), counters("device-2"))],
        [cl("claim-0", exact(mode="All"))],
        {},
    )
    assert got is None


def test_mode_all_leaves_out_a_device_with_binding_conditions() -> None:
    """upstream: isSelectable says no, so the device is not one of "all"."""
    got = _allocate(
        [CA],
        [sl("pool-1", dev("device-1"), bound("device-2"))],
        [cl("claim-0", exact(mode="All"))],
        {},
    )
    assert results(got) == [[r("req-0", "device-1")]]


def test_no_selector_runs_on_a_device_with_binding_conditions() -> None:
    """The binding-conditions check comes before the selectors: a selector that would
    fail on that device raises nothing; on a device that consumes counters it runs."""
    good = {**dev("device-2"), "attributes": {"model": {"string": "a"}}}
    claims = [cl("claim-0", exact("req-0", "class-a", 1, MODEL))]
    got = _allocate([CA], [sl("pool-1", bound("device-1"), good)], claims, {})
    assert results(got) == [[r("req-0", "device-2")]]
    with pytest.raises(AllocationError, match="CEL runtime error"):
        _allocate([CA], [sl("pool-1", counters("device-1"), good)], claims, {})


def test_a_newer_generation_in_a_left_out_slice_still_makes_the_pool_obsolete() -> None:
    """upstream GatherPools skips the sharedCounters slice, but checkSlicesInPool (the
    node sees too few slices) looks at every slice of the pool: generation 2 there
    makes the node's generation-1 slice obsolete, and nothing is allocated."""
    one_of_two = sl("pool-1", dev("device-1"), count=2)
    assert results(_allocate([CA], [one_of_two, shared_slice(count=2)], [cl()], {})) == [
        [r("req-0")]
    ]
    assert _allocate([CA], [one_of_two, shared_slice(count=2, generation=2)], [cl()], {}) is None


def test_consumable_capacity_fields_are_ignored_and_distinct_attribute_is_refused() -> None:
    """A request's capacity and a device's allowMultipleAllocations change nothing (the
    device goes whole to one claim); distinctAttribute is an unknown constraint."""
    multi = {**dev("device-1"), "allowMultipleAllocations": True}
    req = exact()
    req["exactly"]["capacity"] = {"requests": {"memory": "1Gi"}}
    slices = [sl("pool-1", multi)]
    assert results(_allocate([CA], slices, [cl("claim-0", req)], {})) == [[r("req-0")]]
    taken = {"allocated": {("driver-a", "pool-1", "device-1")}}
    assert _allocate([CA], slices, [cl("claim-0", req)], taken) is None
    distinct = claim("claim-0", req, constraints=[{"distinctAttribute": f"{DRIVER}/model"}])
    with pytest.raises(AllocationError, match=r"constraint #0: empty constraint \(unsupported"):
        _allocate([CA], slices, [distinct], {})


def test_a_class_with_an_extended_resource_name_is_an_ordinary_class() -> None:
    cls = device_class()
    cls["spec"]["extendedResourceName"] = "example.com/gpu"
    assert results(_allocate([cls], [sl("pool-1", dev())], [cl()], {})) == [[r("req-0")]]


def _listers(*docs: dict[str, Any]) -> DraListers:
    dra = DraListers()
    for doc in docs:
        dra.set(parse(doc))
    return dra


def test_pre_check_never_counts_a_device_the_allocator_skips() -> None:
    """DraListers.class_devices (the Filter's per-(class, node) counts): no device that
    consumes counters or has binding conditions, none from a slice with
    perDeviceNodeSelection; the sharedCounters slice, left out, still completes its
    pool of two; a pool whose devices repeat a name is invalid and counts none."""
    per_device = resource_slice(
        "slice-3", [{**dev("device-9"), "nodeName": "node-1"}], pool="pool-2"
    )
    per_device["spec"].pop("nodeName")
    per_device["spec"]["perDeviceNodeSelection"] = True
    dup = [
        resource_slice(f"dup-{i}", [dev("device-1")], pool="pool-3", count=2, node="node-2")
        for i in (1, 2)
    ]
    dra = _listers(
        CA,
        resource_slice(
            "slice-1", [counters("device-1"), bound("device-2"), dev("device-3")], count=2
        ),
        shared_slice(count=2),
        per_device,
        *dup,
    )
    assert dra.class_devices("class-a") == {
        "node-1": (("driver-a", "pool-1", "device-3"),),
        "node-2": (),
    }
    # the perDeviceNodeSelection slice is no shared slice (that would turn the
    # pre-check off); the left-out sharedCounters slice is still one of its pool's
    local, shared = dra.slice_index()
    assert (shared, [s.name for s in local["node-1"]]) == ([], ["slice-1"])
    assert sorted(s.name for s in dra.pool_slices("driver-a", "pool-1")) == ["slice-1", "slice-2"]


def test_filter_and_allocation_agree_on_a_node_with_only_a_counters_device() -> None:
    """Through the plugin (the one-class, one-device claim the pre-check decides
    alone): node-1 has only a device that consumes counters and fails Filter; node-2's
    plain device is what the allocation takes."""
    out = explain_claim_pod(
        [
            node("node-1"),
            node("node-2"),
            CA,
            resource_slice("slice-1", [counters("device-1")], count=2),
            shared_slice(count=2),
            resource_slice("slice-3", [dev("device-2")], node="node-2", pool="pool-2"),
            cl(),
        ]
    )
    assert out["filter"]["node-2"] == {"code": "Success"}
    assert out["filter"]["node-1"]["code"] == "UnschedulableAndUnresolvable"
    devices = {n: [a["device"] for a in allocs] for n, allocs in out["resourceClaims"].items()}
    assert devices == {"node-2": ["device-2"]}


def test_selectors_run_per_candidate_after_the_in_use_check() -> None:
    """upstream allocateOne, per device in turn: in use is checked first, then the
    selectors, and the search stops at a solution. A selector that would fail at run
    time on a device in use, or on one past the devices taken, raises nothing; met
    first on a free device it aborts the attempt."""
    good = {**dev("device-1"), "attributes": {"model": {"string": "a"}}}
    claims = [cl("claim-0", exact("req-0", "class-a", 1, MODEL))]
    got = _allocate([CA], [sl("pool-1", good, dev("device-2"))], claims, {})
    assert results(got) == [[r("req-0", "device-1")]]
    good2 = {**good, "name": "device-2"}
    taken = {"allocated": {("driver-a", "pool-1", "device-1")}}
    got = _allocate([CA], [sl("pool-1", dev("device-1"), good2)], claims, taken)
    assert results(got) == [[r("req-0", "device-2")]]
    with pytest.raises(AllocationError, match="CEL runtime error"):
        _allocate([CA], [sl("pool-1", dev("device-1"), good2)], claims, {})
