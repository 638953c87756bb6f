"""SpreadPlans (PreFilter's node-derived part kept across cycles, counts read from the
PodIndex's running totals) answers as ``pre_filter_partial`` computed afresh, after
every pod and node change: pods assumed, forgotten, bound and removed, nodes added,
removed, relabelled and tainted."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Node, Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.plugins.crossnode import DomainCounts
from cluster_sched.plugins.podtopologyspread.constraints import DO_NOT_SCHEDULE, pod_constraints
from cluster_sched.plugins.podtopologyspread.filtering import pre_filter_partial
from cluster_sched.plugins.podtopologyspread.incremental import SpreadPlans
from cluster_sched.testing.builders import HOSTNAME_LABEL, ZONE_LABEL, make_node, make_pod

ZONES = ("z0", "z1", "z2", "z3", "", None)


def _node(name: str, zone: str | None, tainted: bool, ssd: bool) -> Node:
    b = make_node(name).capacity(cpu="4", memory="8Gi", pods=20)
    if zone is not None:
        b = b.zone(zone)
    if tainted:
        b = b.taint("dedicated", "x")
    if ssd:
        b = b.label("disk", "ssd")
    return b.obj()


def _incoming(key: str, affinity: str | None, taints: str | None, ssd_only: bool) -> Pod:
    b = make_pod("incoming").req(cpu="100m").label("app", "a")
    b = b.spread(
        1,
        key,
        match_labels={"app": "a"},
        node_affinity_policy=affinity,
        node_taints_policy=taints,
    )
    if ssd_only:
        b = b.node_selector("disk", "ssd")
    return b.obj()


def _as_dict(parts: list[DomainCounts]) -> list[dict[str, int]]:
    return [dict(p.items()) for p in parts]


events = st.one_of(
    st.tuples(st.just("pod"), st.integers(0, 9), st.sampled_from(("a", "b"))),
    st.tuples(st.just("pod"), st.integers(0, 9), st.sampled_from(("a", "b"))),
    st.tuples(st.just("drop"), st.integers(0, 30)),
    st.tuples(
        st.just("node"),
        st.integers(0, 9),
        st.sampled_from(ZONES),
        st.booleans(),
        st.booleans(),
    ),
    st.tuples(st.just("remove_node"), st.integers(0, 9)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.sampled_from((ZONE_LABEL, HOSTNAME_LABEL)),
    affinity=st.sampled_from((None, "Honor", "Ignore")),
    taints=st.sampled_from((None, "Honor", "Ignore")),
    ssd_only=st.booleans(),
    steps=st.lists(events, min_size=1, max_size=25),
)
def test_plans_answer_as_a_fresh_pre_filter(
    key: str,
    affinity: str | None,
    taints: str | None,
    ssd_only: bool,
    steps: list[tuple[object, ...]],
) -> None:
    cache = Cache()
    cache.load([_node(f"n{i}", ZONES[i % 3], i == 1, i % 2 == 0) for i in range(4)])
    table = cache.sink.table  # type: ignore[attr-defined]
    plans = SpreadPlans()
    pod = _incoming(key, affinity, taints, ssd_only)
    cs = pod_constraints(pod, DO_NOT_SCHEDULE, (), ())
    placed: list[Pod] = []
    for i, step in enumerate(steps):
        what = step[0]
        if what == "pod":
            node = f"n{step[1]}"
            other = make_pod(f"p{i}").req(cpu="100m").label("app", str(step[2]))
            if i % 2:
                p = other.obj()
                if node in cache.nodes:
                    cache.assume_pod(p, node)
                    placed.append(p)
            else:
                p = other.node(node).obj()
                cache.add_pod(p)
                placed.append(p)
        elif what == "drop" and placed:
            p = placed.pop(int(step[1]) % len(placed))  # type: ignore[call-overload]
            if cache.is_assumed(p.key):
                cache.forget_pod(p)
            else:
                cache.remove_pod(p)
        elif what == "node":
            _, k, zone, tainted, ssd = step
            cache.add_node(_node(f"n{k}", zone, tainted, ssd))  # type: ignore[arg-type]
        elif what == "remove_node":
            cache.remove_node(f"n{step[1]}")
        got = _as_dict(plans.partial(pod, cs, table))
        assert got == _as_dict(pre_filter_partial(pod, cs, table))
