"""New nodes into ``ShardRouter`` in bulk (``upsert_nodes``: the listing, a watch run of
node adds) and into a shard in bulk (``ShardCore``'s "nodes" delta, the preload): the
same replica table, placements, deltas and shard tables as one node at a time
(``router_reference.PerNodeRouter``, and ``ShardRouter.upsert_node`` / ``_put_node`` per
node)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Node
from cluster_sched.framework.state_codec import decode_value, encode_value
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.router import ShardRouter
from cluster_sched.testing.node_builder import make_node
from cluster_sched.testing.pod_builder import make_pod
from tests.nodetable.table_state import table_state
from tests.scheduler.shards.router_reference import PerNodeRouter
from workers.shard_wire import wire_deltas


def _node(i: int, v: int) -> Node:
    b = make_node(f"n{i}").capacity(cpu=str(2 + v), memory="8Gi", pods=20).zone(f"z{i % 3}")
    if v == 2:
        b = b.capacity({"example.com/gpu": 1}).label("disk", "ssd")
    return b.obj()


def _flat(deltas: list[Any]) -> list[Any]:
    out: list[Any] = []
    for d in deltas:
        if d[0] == "nodes":
            for node, row, replica in zip(d[1], d[2], d[3], strict=True):
                out.append(["node", node, int(row), int(replica)])
        elif d[0] == "node":
            out.append(["node", d[1], int(d[2]), int(d[3])])
        else:
            out.append(list(d))
    return out


def _table(t: Any) -> dict[str, Any]:
    out = table_state(t)
    out.update(
        index=list(t.index.items()),
        nodes=list(t.nodes),
        free_rows=list(t._free_rows),
        node_version=t.node_version,
        order=t.order().tolist(),
        labels={k: v.tolist() for k, v in t.labels.items()},
    )
    return out


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2)))),
        st.tuples(st.just("remove"), st.integers(0, 40)),
        st.tuples(st.just("pod+"), st.integers(0, 40)),
        st.tuples(st.just("take"), st.integers(0, 2)),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3), _OPS)
def test_bulk_node_adds_route_as_one_at_a_time(n_shards: int, ops: list[Any]) -> None:
    bulk, per_node, ref = ShardRouter(n_shards), ShardRouter(n_shards), PerNodeRouter(n_shards)
    cores = {k: [ShardCore(s) for s in range(n_shards)] for k in ("bulk", "per_node")}
    pods = 0

    def feed(s: int) -> None:
        """Shard ``s`` of each side applies its deltas: "nodes" in bulk on one side,
        node by node (``_put_node``) on the other."""
        got = bulk.take_deltas(s)
        assert _flat(got) == _flat(per_node.take_deltas(s)) == _flat(ref.take_deltas(s))
        # through the wire: manifests, parsed by the shard (a pool's nodes from its first)
        cores["bulk"][s].apply(decode_value(encode_value(wire_deltas(got))))
        core = cores["per_node"][s]
        for d in got:
            if d[0] == "nodes":
                for node, row, replica in zip(d[1], d[2], d[3], strict=True):
                    core._put_node(node, int(row), int(replica))
            else:
                core.apply([d])

    for op, arg in ops:
        if op == "add":
            nodes = [_node(i, v) for i, v in arg]
            bulk.upsert_nodes(nodes)
            for node in nodes:
                per_node.upsert_node(node)
                ref.upsert_node(node)
        elif op == "remove":
            for r in (bulk, per_node, ref):
                r.remove_node(f"n{arg}")
        elif op == "pod+" and f"n{arg}" in bulk.table.index:
            pods += 1
            pod = replace(make_pod(f"p{pods}").obj(), node_name=f"n{arg}")
            for r in (bulk, per_node, ref):
                r.add_pod(f"n{arg}", pod)
        elif op == "take" and arg < n_shards:
            feed(arg)
        assert _table(bulk.table) == _table(per_node.table)
    for s in range(n_shards):
        feed(s)
        assert _table(cores["bulk"][s].table) == _table(cores["per_node"][s].table)
        assert (
            cores["bulk"][s].windows.replica_of_local
            == cores["per_node"][s].windows.replica_of_local
        )
    assert bulk.node_shard == per_node.node_shard == ref.node_shard
    for name, (s, row) in bulk.node_shard.items():  # each node at its chosen row
        assert cores["bulk"][s].table.index[name] == row
    rows = np.array(sorted(bulk.table.index.values()), dtype=np.int64)
    assert np.array_equal(bulk.shard_of_row[rows], ref.shard_of_row[rows])
