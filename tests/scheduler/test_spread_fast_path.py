"""Pods with topology spread constraints on the compiled path (shared PreFilter/PreScore
of the other plugins, PodTopologySpread re-run per pod, its Filter applied over the
shape's columns per pod) get exactly the placements of the plain numpy path: random
nodes (zones, some missing, taints, a disk label), random constraints (maxSkew,
DoNotSchedule / ScheduleAnyway, minDomains, nodeAffinityPolicy / nodeTaintsPolicy,
matchLabelKeys, or the system defaults through a ReplicaSet), and pods bound, forgotten
and removed and nodes added, removed and relabelled between cycles."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.testing.builders import (
    ZONE_LABEL,
)
from tests.scheduler.spread_specs import (
    NodeSpec,
    PodSpec,
    SpreadSpec,
    events,
    node_specs,
    pod_specs,
    run,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    nodes=st.lists(node_specs, min_size=2, max_size=9),
    specs=st.lists(pod_specs, min_size=1, max_size=3),
    steps=st.lists(events, min_size=4, max_size=30),
)
def test_spread_pods_place_as_on_the_numpy_path(
    nodes: list[NodeSpec], specs: list[PodSpec], steps: list[tuple[object, ...]]
) -> None:
    expected = run(None, list(nodes), specs, steps)
    assert run(FastPath(share_pre_cycle=True), list(nodes), specs, steps) == expected


def test_a_deployment_of_spread_pods_shares_its_shape_and_state() -> None:
    """The scheduler_perf shape (one zone constraint, DoNotSchedule): after the first
    pod, every pod takes the shape's columns and the shared PreFilter/PreScore, with
    PodTopologySpread's counts its own (the zones fill evenly, as on the numpy path)."""
    nodes = [NodeSpec(f"z{i % 3}", False, False) for i in range(9)]
    spec = PodSpec(
        "a",
        "v1",
        (SpreadSpec(1, ZONE_LABEL, "DoNotSchedule", None, None, None, False),),
        False,
        False,
    )
    steps: list[tuple[object, ...]] = [("pod", 0)] * 12
    fast = FastPath(share_pre_cycle=True)
    placed = run(fast, nodes, [spec], steps)
    assert placed == run(None, nodes, [spec], steps)
    zones = [int(host[1:]) % 3 for host, _, _ in placed if host is not None]
    assert sorted(zones.count(z) for z in range(3)) == [4, 4, 4]
    counters = fast.counters()
    assert counters["shape_hits"] == 11
    assert counters["pre_cycle_hits"] == 11
