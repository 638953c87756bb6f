"""ScorePlans (PreScore on one table in label codes, node-derived part kept across
cycles) gives the state map/reduce gives (``pre_score_partial`` + ``reduce_partials``):
the same counts per code as Score reads them, topology weights and ignored nodes, with
nodes missing keys or labelled "", own or system-default constraints, inclusion
policies, and after pod and node changes."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Node
from cluster_sched.cache.cache import Cache
from cluster_sched.config.plugin_args import SYSTEM_DEFAULT_CONSTRAINTS
from cluster_sched.plugins.podtopologyspread.constraints import SCHEDULE_ANYWAY, pod_constraints
from cluster_sched.plugins.podtopologyspread.score_plans import ScorePlans
from cluster_sched.plugins.podtopologyspread.scoring import (
    PreScoreState,
    pre_score_partial,
    reduce_partials,
)
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    make_controller,
    make_node,
    make_pod,
)

ZONES = ("z0", "z1", "z2", "", None)


def _node(name: str, zone: str | None, tainted: bool) -> Node:
    b = make_node(name).capacity(cpu="4", memory="8Gi", pods=20)
    if zone is not None:
        b = b.zone(zone)
    if tainted:
        b = b.taint("dedicated", "x")
    return b.obj()


def _view(s: PreScoreState, table: object) -> tuple[object, ...]:
    dense = tuple(
        tuple(d.dense(table.label_values.get(c.topology_key)).tolist())  # type: ignore[attr-defined]
        for d, c in zip(s.counts, s.constraints, strict=True)
    )
    return dense, s.weights, tuple(s.ignored.tolist())


events = st.one_of(
    st.tuples(st.just("pod"), st.integers(0, 7), st.sampled_from(("a", "b"))),
    st.tuples(st.just("pod"), st.integers(0, 7), st.sampled_from(("a", "b"))),
    st.tuples(st.just("drop"), st.integers(0, 30)),
    st.tuples(st.just("node"), st.integers(0, 7), st.sampled_from(ZONES), st.booleans()),
    st.tuples(st.just("remove_node"), st.integers(0, 7)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(  # a node relabelled "" then unlabelled: its pods count under the code of ""
    zones=["z0"],
    defaults=True,
    key=ZONE_LABEL,
    affinity=None,
    taints=None,
    steps=[("pod", 0, "a"), ("node", 0, "", False), ("node", 0, None, False)],
    feasible_seed=0,
)
@given(
    zones=st.lists(st.sampled_from(ZONES), min_size=1, max_size=6),
    defaults=st.booleans(),
    key=st.sampled_from((ZONE_LABEL, HOSTNAME_LABEL)),
    affinity=st.sampled_from((None, "Honor", "Ignore")),
    taints=st.sampled_from((None, "Honor", "Ignore")),
    steps=st.lists(events, min_size=1, max_size=20),
    feasible_seed=st.integers(0, 2**16),
)
def test_score_plans_give_the_map_reduce_state(
    zones: list[str | None],
    defaults: bool,
    key: str,
    affinity: str | None,
    taints: str | None,
    steps: list[tuple[object, ...]],
    feasible_seed: int,
) -> None:
    cache = Cache()
    cache.load([_node(f"n{i}", z, i == 1) for i, z in enumerate(zones)])
    table = cache.sink.table  # type: ignore[attr-defined]
    b = make_pod("incoming").req(cpu="100m").label("app", "a")
    if defaults:
        pod = b.owner("ReplicaSet", "rs-a").obj()
        rs = make_controller("ReplicaSet", "rs-a", {"app": "a"})
        cs = pod_constraints(pod, SCHEDULE_ANYWAY, SYSTEM_DEFAULT_CONSTRAINTS, [rs])
        assert len(cs) == 2
    else:
        pod = b.spread(
            2,
            key,
            SCHEDULE_ANYWAY,
            {"app": "a"},
            node_affinity_policy=affinity,
            node_taints_policy=taints,
        ).obj()
        cs = pod_constraints(pod, SCHEDULE_ANYWAY, (), ())
    require_all = not defaults
    plans = ScorePlans()
    rng = np.random.default_rng(feasible_seed)
    placed = []
    for i, step in enumerate(steps):
        what = step[0]
        if what == "pod":
            p = make_pod(f"p{i}").req(cpu="100m").label("app", str(step[2]))
            node = f"n{step[1]}"
            obj = p.node(node).obj()
            cache.add_pod(obj)
            placed.append(obj)
        elif what == "drop" and placed:
            cache.remove_pod(placed.pop(int(step[1]) % len(placed)))  # type: ignore[call-overload]
        elif what == "node":
            _, k, zone, tainted = step
            cache.add_node(_node(f"n{k}", zone, bool(tainted)))  # type: ignore[arg-type]
        elif what == "remove_node" and len(cache.nodes) > 1:
            cache.remove_node(f"n{step[1]}")
        rows = table.order()
        feasible = rng.permutation(rows)[: rng.integers(1, len(rows) + 1)].astype(np.int64)
        got = plans.state(pod, cs, require_all, table, feasible)
        part = pre_score_partial(pod, cs, require_all, table, feasible)
        want = reduce_partials(cs, require_all, [part])
        assert _view(got, table) == _view(want, table)
