"""Which nodes a pod is filtered twice on: worked out once per search
(``nominated_rows``), the same answer node by node, over a few rows or the whole table."""

from __future__ import annotations

import numpy as np
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.queue import Nominator
from cluster_sched.scheduler.nominated_filter import nominated_rows
from cluster_sched.testing.builders import make_namespace, make_node, make_pod

NODES = 12


def _table() -> object:
    cache = Cache()
    cache.load([make_namespace("default")] + [make_node(f"n{i}").obj() for i in range(NODES)])
    return cache.sink.table  # type: ignore[attr-defined]


TABLE = _table()

nominations = st.dictionaries(
    st.sampled_from([f"n{i}" for i in range(NODES)] + ["gone-node"]),
    st.lists(st.tuples(st.integers(0, 30), st.booleans()), min_size=1, max_size=3),
)


@settings(max_examples=80, deadline=None)
@given(nominations, st.integers(0, 30), st.lists(st.integers(0, NODES - 1), max_size=NODES))
def test_nominated_rows_are_the_pods_that_count_node_by_node(
    noms: dict[str, list[tuple[int, bool]]], priority: int, among: list[int]
) -> None:
    pod = make_pod("p").uid("uid-p").priority(priority).obj()
    nominated: dict[str, list[Pod]] = {
        node: [
            pod if itself else make_pod(f"{node}-{j}").uid(f"u-{node}-{j}").priority(p).obj()
            for j, (p, itself) in enumerate(entries)
        ]
        for node, entries in noms.items()
    }
    table = TABLE
    expect: dict[int, list[Pod]] = {}
    for node, pods in nominated.items():
        row = table.index.get(node)  # type: ignore[attr-defined]
        ge = [p for p in pods if p.priority >= priority and p.uid != pod.uid]
        if row is not None and ge:
            expect[row] = ge
    whole = nominated_rows(nominated, table, pod)  # type: ignore[arg-type]
    assert whole.pods == expect
    assert whole.rows.tolist() == sorted(expect)
    rows = np.asarray(among, dtype=np.int64)
    few = nominated_rows(nominated, table, pod, among=rows)  # type: ignore[arg-type]
    wanted = {r: ge for r, ge in expect.items() if r in set(among)}
    # A few rows are looked up node by node, many by a walk over every nomination: the
    # caller reads only its own rows, which must be exactly right either way.
    assert {r: ge for r, ge in few.pods.items() if r in set(among)} == wanted
    assert all(expect[r] == ge for r, ge in few.pods.items())
    assert few.rows.tolist() == sorted(few.pods)


_prefixes = iter(range(1_000_000))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(nominations, st.integers(0, 30))
def test_the_nominators_view_gives_the_rows_a_plain_mapping_gives(
    redis_client: redis.Redis, noms: dict[str, list[tuple[int, bool]]], priority: int
) -> None:
    pod = make_pod("p").uid("uid-p").priority(priority).obj()
    pods: dict[str, Pod] = {pod.key: pod}
    nominator = Nominator(redis_client, prefix=f"{{nf{next(_prefixes)}}}", pod_lookup=pods.get)
    for node, entries in noms.items():
        for j, (p, itself) in enumerate(entries):
            other = make_pod(f"{node}-{j}").uid(f"u-{node}-{j}").priority(p).obj()
            nominee = pod if itself else other
            if j % 3 != 2:  # every third one unknown to the process: left out
                pods[nominee.key] = nominee
            nominator.add_nominated_pod(nominee.key, node, nominee.priority)
    view = nominator.nominated_pods()
    got = nominated_rows(view, TABLE, pod)  # type: ignore[arg-type]
    plain = nominated_rows(dict(view.items()), TABLE, pod)  # type: ignore[arg-type]
    assert got.pods == plain.pods
    assert got.rows.tolist() == plain.rows.tolist()
