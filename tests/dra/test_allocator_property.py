"""Property: on random slices, classes, claims and already-allocated devices, the
allocator's answer is valid (no device twice or already taken, every device matches
its request's class and selectors, counts and matchAttribute hold) and complete (it
finds an allocation whenever a brute-force search over all device choices does)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.dra.allocator import Allocator
from tests.dra.dra_fixtures import claim, device, device_class, node, parse, request, resource_slice

MODEL_A = 'device.attributes["driver-a"].model == "a"'


@st.composite
def cases(
    draw: Any,
) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, bool]], bool, frozenset[str]]:
    devices = draw(
        st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 1)), min_size=0, max_size=5)
    )
    named = [(f"dev-{i}", numa, model) for i, (model, numa) in enumerate(devices)]
    requests = draw(
        st.lists(
            st.tuples(st.sampled_from(["any", "a"]), st.integers(1, 3), st.booleans()),
            min_size=1,
            max_size=2,
        )
    )
    constrained = draw(st.booleans())
    names = [n for n, _, _ in named]
    taken = draw(st.frozensets(st.sampled_from(names), max_size=2)) if names else frozenset()
    return named, requests, constrained, taken


def _brute_force(
    named: list[tuple[str, int, str]],
    requests: list[tuple[str, int, bool]],
    constrained: bool,
    taken: frozenset[str],
) -> bool:
    free = [d for d in named if d[0] not in taken]

    def ok(d: tuple[str, int, str], kind: str, sel: bool) -> bool:
        return (kind == "any" or d[2] == "a") and (not sel or d[2] == "a")

    pools = [[d for d in free if ok(d, kind, sel)] for kind, _, sel in requests]
    choices = [
        itertools.combinations(p, count) for p, (_, count, _) in zip(pools, requests, strict=True)
    ]
    for combo in itertools.product(*choices):
        flat = [d for part in combo for d in part]
        if len({d[0] for d in flat}) != len(flat):
            continue
        if constrained and len({d[1] for d in flat}) > 1:
            continue
        return True
    return False


@settings(max_examples=150, deadline=None)
@given(cases())
def test_allocations_are_valid_and_complete(case: Any) -> None:
    named, requests, constrained, taken = case
    slices = [parse(resource_slice("s", [device(n, model=m, numa=numa) for n, numa, m in named]))]
    classes = {
        c.name: c
        for c in [parse(device_class("any")), parse(device_class("a", "driver-a", MODEL_A))]
    }
    reqs = [
        request(f"r{i}", kind, count, *([MODEL_A] if sel else []))
        for i, (kind, count, sel) in enumerate(requests)
    ]
    c = parse(
        claim(
            "c", *reqs, constraints=[{"matchAttribute": "driver-a/numa"}] if constrained else None
        )
    )
    ids = {("driver-a", "pool-1", n) for n in taken}
    alloc = Allocator(classes, slices, ids.__contains__, lambda ns: {})
    found = alloc.allocate(parse(node()), [c])
    assert (found is not None) == _brute_force(named, requests, constrained, taken)
    if found is None:
        return
    by_name = {n: (numa, m) for n, numa, m in named}
    (result,) = found
    used = [r.device for r in result.devices]
    assert len(used) == len(set(used)) and not set(used) & taken
    for i, (kind, count, sel) in enumerate(requests):
        mine = [r.device for r in result.devices if r.request == f"r{i}"]
        assert len(mine) == count
        for name in mine:
            assert kind == "any" or by_name[name][1] == "a"
            assert not sel or by_name[name][1] == "a"
    if constrained:
        assert len({by_name[n][0] for n in used}) == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=12),
    st.lists(st.tuples(st.booleans(), st.integers(0, 11)), max_size=20),
)
def test_incremental_free_counts_equal_a_fresh_count(devs: Any, ops: Any) -> None:
    """DraListers.free_count (kept per allocation change) == podclaims.free_devices."""
    from cluster_sched.dra.listers import DraListers
    from cluster_sched.dra.objects import AllocationResult, DeviceResult
    from cluster_sched.dra.podclaims import free_devices

    dra = DraListers()
    dra.set(parse(device_class("any")))
    for n in range(3):
        dra.set(
            parse(
                resource_slice(
                    f"s{n}", [device(f"d{i}") for i in range(4)], node=f"n{n}", pool=f"n{n}"
                )
            )
        )
    dra.free_count("any", "n0")  # build the cache before the changes
    for flight, idx in ops:
        n, i = devs[idx % len(devs)]
        result = AllocationResult((DeviceResult("r", "driver-a", f"n{n}", f"d{i}"),))
        c = parse(claim(f"c{idx}"))
        if flight:
            dra.signal_pending(c, result)
        else:
            dra.remove_pending(c.meta.uid)
        for node_name in ("n0", "n1", "n2"):
            assert dra.free_count("any", node_name) == free_devices(dra, "any", node_name)
