"""``NodeTable.upsert_nodes`` (nodetable/bulk.py) leaves the table exactly as
``upsert_node`` per node in order does.

Random histories of node batches (new nodes, updates, repeated names, nodes sharing one
allocatable map, new resources and label keys widening the matrices, zone changes,
taints and images), node deletes (rows freed and reused), pods accounted between them,
with the table choosing rows or with explicit rows as a shard's preload gives them, are
applied to two tables: one node at a time and in bulk. After every step every column,
the index, names, nodes, seq, the interners, the zone list, the free rows, the pod and
node versions and the nodeTree order must be equal, and so must the Fit and label
selector answers the plugins read from the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Node
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.testing.builders import make_node, make_pod
from tests.nodetable.table_state import table_state

GPU = "example.com/gpu"
FPGA = "vendor.io/fpga"

#: allocatable maps nodes share (as nodes parsed from shared manifests do)
_SHARED: list[dict[str, int]] = [
    {"cpu": 4000, "memory": 8 << 30, "pods": 10},
    {"cpu": 8000, "memory": 16 << 30, GPU: 2, "pods": 20},
    {"cpu": 2000, FPGA: 1, "hugepages-2Mi": 1 << 30},
]


def _node(name: str, variant: int, zone: int, extra: int, shared: int | None) -> Node:
    b = make_node(name).capacity(cpu=str(1 + variant), memory="4Gi", pods=8 + variant)
    if zone >= 0:
        b = b.zone(f"zone-{zone}")
    if variant % 3 == 1:
        b = b.label("disk", "ssd").taint("dedicated", "gpu")
    if variant % 3 == 2:
        b = b.label(f"only-{extra}", str(variant)).image("registry.k8s.io/pause:3.9", 700_000)
        b = b.capacity({f"example.com/r{extra}": 1}, cpu="2", pods=5).unschedulable()
    if variant == 4:
        b = b.taint("soft", effect="PreferNoSchedule").taint("evict", "now", effect="NoExecute")
    node = b.obj()
    return node if shared is None else evolve(node, allocatable=_SHARED[shared])


_nodes = st.tuples(
    st.integers(0, 14),  # name
    st.integers(0, 4),  # variant
    st.integers(-1, 2),  # zone (-1: none)
    st.integers(0, 3),  # extra resource / label key
    st.one_of(st.none(), st.integers(0, len(_SHARED) - 1)),
)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("nodes"), st.lists(_nodes, min_size=1, max_size=8), st.booleans()),
        st.tuples(st.just("delete"), st.integers(0, 14)),
        st.tuples(st.just("pod"), st.integers(0, 14)),
    ),
    min_size=1,
    max_size=12,
)


def _full_state(t: NodeTable) -> dict[str, Any]:
    out = table_state(t)
    out.update(
        size=t.size,
        cap=t._cap,
        names=list(t.names),
        index=dict(t.index),
        index_order=list(t.index),
        nodes=[id(n) for n in t.nodes],
        free_rows=list(t._free_rows),
        next_seq=t._next_seq,
        node_version=t.node_version,
        zones=list(t.zones.values),
        zone_members=list(t.zone_list._members.items()),
        zone_rank=list(t.zone_list._rank.items()),
        zone_next=t.zone_list._next_rank,
        taints=list(t.taints.values),
        images=list(t.images.values),
        image_rows=[(k, list(v.items())) for k, v in t._image_rows.items()],
        labels={k: v.tolist() for k, v in t.labels.items()},
        label_keys=list(t.labels),
        label_values={k: list(v.values) for k, v in t.label_values.items()},
        volumes_version=t.volumes.version,
        order=t.order().tolist(),
    )
    return out


def _decisions(t: NodeTable) -> dict[str, Any]:
    """What plugins read: rows that fit a pod's requests, rows matching a label."""
    cpu = t.resource_col("cpu")
    return {
        "fits": np.flatnonzero(t.alive & (t.free[cpu] >= 1000)).tolist(),
        "ssd": np.flatnonzero(
            t.labels.get("disk", np.full(t._cap, -1)) == t.label_code("disk", "ssd")
        ).tolist(),
    }


def _explicit_rows(t: NodeTable, batch: list[Node], data: st.DataObject) -> list[int]:
    """Rows a coordinator could choose: free rows and rows past the end (gaps allowed),
    each new node its own; known nodes keep theirs (ignored by upsert_node)."""
    used: set[int] = set()
    seen: set[str] = set()
    rows: list[int] = []
    for node in batch:
        if node.name in t.index or node.name in seen:
            rows.append(t.index.get(node.name, 0))
            continue
        seen.add(node.name)
        choices = sorted((set(t._free_rows) | set(range(t.size, t.size + 4 + len(batch)))) - used)
        r = data.draw(st.sampled_from(choices))
        used.add(r)
        rows.append(r)
    return rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_ops, data=st.data())
def test_bulk_upsert_equals_one_by_one(ops: list[Any], data: st.DataObject) -> None:
    one, bulk = NodeTable(capacity=8), NodeTable(capacity=8)
    pods = 0
    for op in ops:
        if op[0] == "nodes":
            batch = [_node(f"n{i}", v, z, e, s) for i, v, z, e, s in op[1]]
            rows = _explicit_rows(one, batch, data) if op[2] else None
            # a name repeated in the batch: the second one is an update
            want = [
                one.upsert_node(node, None if rows is None else rows[k])
                for k, node in enumerate(batch)
            ]
            assert bulk.upsert_nodes(batch, rows) == want
        elif op[0] == "delete":
            assert one.remove_node(f"n{op[1]}") == bulk.remove_node(f"n{op[1]}")
        else:
            name = f"n{op[1]}"
            if name in one.index:
                pods += 1
                pod = make_pod(f"p{pods}").req(cpu="500m", memory="1Gi").node(name).obj()
                one.add_pod(one.index[name], pod)
                bulk.add_pod(bulk.index[name], pod)
        assert _full_state(bulk) == _full_state(one)
        assert _decisions(bulk) == _decisions(one)


def test_taken_row_is_refused_before_anything_changes() -> None:
    t = NodeTable()
    t.upsert_nodes([_node("a", 0, 0, 0, None)])
    t.order()
    before = _full_state(t)
    with pytest.raises(ValueError, match="row 0 is taken"):
        t.upsert_nodes([_node("b", 0, 0, 0, None), _node("c", 0, 0, 0, None)], rows=[5, 0])
    assert _full_state(t) == before
