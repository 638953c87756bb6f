"""Bulk placement in ``ShardRouter``: new nodes are placed together over numpy columns,
with the shards, rows, deltas and staleness that placing them one at a time gave
(``router_reference.PerNodeRouter``, the router before the change)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Node, Pod
from cluster_sched.scheduler.shards import router as router_module
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.router import (
    ShardRouter,
    least_loaded,
    least_loaded_reference,
    weight,
)
from cluster_sched.testing.node_builder import make_node
from cluster_sched.testing.pod_builder import make_pod
from tests.scheduler.shards.router_reference import PerNodeRouter


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=9), st.integers(0, 200))
def test_least_loaded_picks_as_one_pick_at_a_time(load: list[int], k: int) -> None:
    assert least_loaded(load, k).tolist() == least_loaded_reference(load, k)


def _flat(deltas: list[Any]) -> list[Any]:
    """Deltas with "nodes" spread into one "node" each, objects by name/key."""
    out: list[Any] = []
    for d in deltas:
        if d[0] == "nodes":
            for node, row, replica in zip(d[1], d[2], d[3], strict=True):
                out.append(["node", node.name, int(row), int(replica)])
        elif d[0] == "node":
            out.append(["node", d[1].name, int(d[2]), int(d[3])])
        elif d[0] in ("pod+", "pod="):
            out.append([d[0], d[1], d[2].key, d[2].node_name])
        else:
            out.append(list(d))
    return out


def _node(i: int, cpu: int) -> Node:
    return make_node(f"n{i}").capacity(cpu=str(cpu), memory="8Gi", pods=20).obj()


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 30)),  # that many new nodes
        st.tuples(st.just("update"), st.integers(0, 500)),
        st.tuples(st.just("remove"), st.integers(0, 500)),
        st.tuples(st.just("pod+"), st.integers(0, 500)),
        st.tuples(st.just("pod-"), st.integers(0, 500)),
        st.tuples(st.just("take"), st.integers(0, 3)),
    ),
    max_size=40,
)


@settings(max_examples=500, deadline=None)
@example(1, [("add", 1), ("update", 0), ("add", 1), ("update", 0)], (4096, 2))
@given(
    st.integers(1, 4),
    _OPS,
    st.sampled_from([(4096, 2), (6, 2), (3, 1), (1, 0)]),
)
def test_bulk_placement_sends_what_one_node_at_a_time_sent(
    n_shards: int, ops: list[tuple[str, int]], limits: tuple[int, int]
) -> None:
    """Any mix of node adds (many in a row), updates, removals, pod changes and takes:
    every taken delta stream, stale flag, load and row map equals the reference's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(router_module, "DELTA_BACKLOG", limits[0])
        mp.setattr(router_module, "STALE_FACTOR", limits[1])
        new, old = ShardRouter(n_shards), PerNodeRouter(n_shards)
        names: list[str] = []
        pods: list[tuple[str, Pod]] = []
        made = 0
        for op, arg in ops:
            if op == "add":
                for _ in range(arg):
                    node = _node(made, 4)
                    made += 1
                    names.append(node.name)
                    new.upsert_node(node)
                    old.upsert_node(node)
            elif op == "update" and names:
                node = _node(int(names[arg % len(names)][1:]), 8)
                new.upsert_node(node)
                old.upsert_node(node)
            elif op == "remove" and names:
                name = names.pop(arg % len(names))
                pods = [(n, p) for n, p in pods if n != name]
                new.remove_node(name)
                old.remove_node(name)
            elif op == "pod+" and names:
                node_name = names[arg % len(names)]
                pod = replace(make_pod(f"p{len(pods)}-{arg}").obj(), node_name=node_name)
                pods.append((node_name, pod))
                new.add_pod(node_name, pod)
                old.add_pod(node_name, pod)
            elif op == "pod-" and pods:
                node_name, pod = pods.pop(arg % len(pods))
                new.remove_pod(node_name, pod)
                old.remove_pod(node_name, pod)
            elif op == "take" and arg < n_shards:
                assert _flat(new.take_deltas(arg)) == _flat(old.take_deltas(arg))
        assert new.stale == old.stale
        assert new.load == old.load
        assert new.node_shard == old.node_shard
        rows = np.array(sorted(new.table.index.values()), dtype=np.int64)
        assert np.array_equal(new.shard_of_row[rows], old.shard_of_row[rows])
        assert np.array_equal(new.shard_row[rows], old.shard_row[rows])
        for s in range(n_shards):
            assert _flat(new.take_deltas(s)) == _flat(old.take_deltas(s))
            assert _flat(new.full_state_deltas(s)) == _flat(old.full_state_deltas(s))


def test_a_limited_take_carries_whole_deltas_up_to_the_limit() -> None:
    """``take_deltas(s, limit)``: "nodes" deltas are not split; the changes taken never
    pass the limit (but one delta always goes), and every node arrives once, in order."""
    router = ShardRouter(1)
    for i in range(3 * router_module.NODES_PER_DELTA + 5):
        router.upsert_node(_node(i, 4))
    limit = router_module.NODES_PER_DELTA + 10
    got: list[Any] = []
    while router.deltas[0]:
        part = router.take_deltas(0, limit)
        assert 0 < sum(weight(d) for d in part) <= limit
        got.extend(part)
    assert [d[1] for d in _flat(got)] == [f"n{i}" for i in range(len(router.table.index))]
    assert router.waiting == [0]
    assert router.take_deltas(0, 1) == []


def test_a_shard_applying_bulk_deltas_holds_the_replica_rows() -> None:
    """A shard fed "nodes" deltas (through the wire) holds each node at its row."""
    from cluster_sched.framework.state_codec import decode_value, encode_value
    from workers.shard_wire import wire_deltas

    router = ShardRouter(2)
    for i in range(2500):
        router.upsert_node(_node(i, 2 + i % 3))
    cores = [ShardCore(s) for s in range(2)]
    for s, core in enumerate(cores):
        core.apply(decode_value(encode_value(wire_deltas(router.take_deltas(s)))))
    for name, (s, row) in router.node_shard.items():
        r = router.table.index[name]
        assert cores[s].table.index[name] == row
        assert np.array_equal(cores[s].table.allocatable[:, row], router.table.allocatable[:, r])
        assert cores[s].windows.local_of_replica[r] == row
    assert sorted(c.table.n_nodes for c in cores) == [1250, 1250]


def test_freed_rows_are_taken_last_freed_first_as_before() -> None:
    """Nodes removed from a shard free their rows; new nodes placed together take them
    as one-at-a-time placement did (the last freed first), then new rows."""
    new, old = ShardRouter(2), PerNodeRouter(2)
    for router in (new, old):
        for i in range(10):
            router.upsert_node(_node(i, 4))
        for i in (0, 4, 2, 6):  # all on shard 0
            router.remove_node(f"n{i}")
        for i in range(10, 17):
            router.upsert_node(_node(i, 4))
    assert new.node_shard == old.node_shard
    assert [new.node_shard[f"n{i}"] for i in range(10, 14)] == [(0, 3), (0, 1), (0, 2), (0, 0)]
    for s in range(2):
        assert _flat(new.take_deltas(s)) == _flat(old.take_deltas(s))
