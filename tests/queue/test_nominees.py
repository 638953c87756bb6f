"""The nominator's kept nominees (``Nominator.at_least``, ``queue/nominees.py``) answer what
a fresh walk over every nomination answers, after any sequence of nominations, moves,
re-nominations, deletes, and pods replaced, deleted or re-created in the process's view:
per node the pods of a priority and up in nomination order, their request sums, with
the pod being scheduled left out by key or by uid."""

from __future__ import annotations

from typing import Any

import numpy as np
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Pod
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.queue import Nominator
from cluster_sched.queue.nominees import AtLeast
from cluster_sched.testing.builders import make_node, make_pod

NAMES = ("cpu", "memory")
#: sums at or above this are "big" (left to exact arithmetic elsewhere)
LIMIT = 1000
KEYS = [f"default/p{i}" for i in range(4)]
NODES = ["n0", "n1", "n2"]


def _pod(i: int, prio: int, cpu: int, uid: str) -> Pod:
    return make_pod(f"p{i}").uid(uid).priority(prio).req({"cpu": f"{cpu}m"}).obj()


def _fresh(nominator: Nominator, pods: dict[str, Pod], prio: int) -> dict[str, list[Pod]]:
    """Per node the live nominees of ``prio`` or more, from Redis's order, walked now."""
    out: dict[str, list[Pod]] = {}
    for node in NODES:
        live = [pods[k] for k in nominator.nominated_pods_for_node(node) if k in pods]
        ge = [p for p in live if p.priority >= prio]
        if ge:
            out[node] = ge
    return out


def _without(by_node: dict[str, list[Pod]], key: str | None, uid: str | None) -> dict[str, Any]:
    out = {}
    for node, ps in by_node.items():
        kept = [p for p in ps if p.key != key and p.uid != uid]
        if kept:
            out[node] = kept
    return out


steps = st.lists(
    st.one_of(
        st.tuples(st.just("nominate"), st.integers(0, 3), st.sampled_from(["", *NODES])),
        st.tuples(st.just("delete_nomination"), st.integers(0, 3)),
        st.tuples(
            st.just("replace_pod"),
            st.integers(0, 3),
            st.integers(0, 2),
            st.sampled_from([100, 500, 900]),
        ),
        st.tuples(st.just("delete_pod"), st.integers(0, 3)),
        st.tuples(st.just("node"), st.integers(0, 2)),
        st.tuples(st.just("read"), st.integers(0, 2), st.integers(0, 4), st.booleans()),
    ),
    min_size=1,
    max_size=40,
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=steps)
def test_kept_nominees_are_a_fresh_walk(redis_client: redis.Redis, steps: list[Any]) -> None:
    redis_client.flushall()
    pods: dict[str, Pod] = {}
    nominator = Nominator(redis_client, pod_lookup=pods.get)
    table = NodeTable()
    for node in NODES[:2]:
        table.upsert_node(make_node(node).obj())
    for generation, step in enumerate(steps):
        if step[0] == "nominate":
            _, i, node = step
            nominator.add_nominated_pod(KEYS[i], node, 0)
        elif step[0] == "delete_nomination":
            nominator.delete_nominated_pod_if_exists(KEYS[step[1]])
        elif step[0] == "replace_pod":  # an update, or a new pod of the same name
            _, i, prio, cpu = step
            pods[KEYS[i]] = _pod(i, prio, cpu, f"uid-{i}-{generation % 2}")
        elif step[0] == "delete_pod":
            pods.pop(KEYS[step[1]], None)
        elif step[0] == "node":  # the table's nodes change: its rows are laid anew
            _, i = step
            if NODES[i] in table.index:
                table.remove_node(NODES[i])
            else:
                table.upsert_node(make_node(NODES[i]).obj())
        else:
            _, prio, who, by_uid = step
            fresh = _fresh(nominator, pods, prio)
            kept = nominator.at_least(prio)
            assert kept.pods == fresh
            key = KEYS[who] if who < len(KEYS) else None
            uid = pods[key].uid if by_uid and key in pods else None
            expected = _without(fresh, key, uid)
            assert dict(kept.items(key, uid)) == expected
            live = nominator.nominated_pods().live_items(prio, uid)
            assert dict(live) == _without(fresh, None, uid)
            assert len(live) == len(dict(live))
            col = kept.columns(table, NAMES, LIMIT, key, uid)
            rows = np.arange(len(table.row_version), dtype=np.int64)
            count, sums, big = col.at(rows)
            for node in table.index:
                ps = expected.get(node, [])
                want = [sum(p.requests.get(n, 0) for p in ps) for n in NAMES]
                row = table.index[node]
                assert count[row] == len(ps)
                assert big[row] == (max(want) >= LIMIT)
                assert list(sums[:, row]) == ([0, 0] if big[row] else want)
            for node in NODES:
                assert kept.on(node, key) == [p for p in fresh.get(node, []) if p.key != key]


def test_a_uid_shared_by_pods_on_two_nodes_is_left_out_of_both() -> None:
    a = make_pod("a").uid("same").priority(5).req({"cpu": "1"}).obj()
    b = make_pod("b").uid("same").priority(5).req({"cpu": "2"}).obj()
    c = make_pod("c").uid("other").priority(5).req({"cpu": "3"}).obj()
    kept = AtLeast.of([("n0", [a, c]), ("n1", [b])], 5)
    assert kept.items(except_uid="same") == [("n0", [c])]
    table = NodeTable()
    for node in ("n0", "n1"):
        table.upsert_node(make_node(node).obj())
    rows = np.asarray([table.index["n0"], table.index["n1"]])
    count, sums, _ = kept.columns(table, ("cpu",), 2**61, None, "same").at(rows)
    assert (count.tolist(), sums.tolist()) == ([1, 0], [[3000, 0]])
    count, sums, _ = kept.columns(table, ("cpu",), 2**61).at(rows)
    assert (count.tolist(), sums.tolist()) == ([2, 1], [[4000, 2000]])


def test_columns_follow_the_tables_rows_when_its_nodes_change() -> None:
    a = make_pod("a").uid("a").priority(5).req({"cpu": "1"}).obj()
    kept = AtLeast.of([("n0", [a])], 5)
    table = NodeTable()
    table.upsert_node(make_node("n0").obj())
    row = table.index["n0"]
    assert kept.columns(table, ("cpu",), 2**61).at(np.asarray([row]))[0].tolist() == [1]
    table.remove_node("n0")
    table.upsert_node(make_node("n1").obj())  # may take n0's row
    rows = np.asarray([table.index["n1"]])
    count, sums, _ = kept.columns(table, ("cpu",), 2**61).at(rows)
    assert (count.tolist(), sums.tolist()) == ([0], [[0]])
