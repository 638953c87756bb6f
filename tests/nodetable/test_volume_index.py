"""The per-row volume index: pods' volume references counted per node, kept in step with
add/remove (one by one or in bulk), node removal and ``subset`` copies."""

from __future__ import annotations

import numpy as np

from cluster_sched.nodetable.table import NodeTable
from cluster_sched.nodetable.volumes import volume_refs
from cluster_sched.testing.builders import make_node, make_pod


def _table(*names: str) -> NodeTable:
    table = NodeTable()
    for name in names:
        table.upsert_node(make_node(name).capacity(cpu="4", memory="8Gi", pods=10).obj())
    return table


def test_refs_of_claims_ephemeral_and_inline_disks() -> None:
    pod = (
        make_pod("web-0")
        .pvc("data")
        .volume("tmp", ephemeral={})
        .volume("pd", gcePersistentDisk={"pdName": "disk", "readOnly": True})
        .volume("ebs", awsElasticBlockStore={"volumeID": "vol-1"})
        .volume("ceph", rbd={"monitors": ["m1", "m2"], "image": "img"})
        .volume("cfg", configMap={"name": "cfg"})
        .obj()
    )
    assert volume_refs(pod) == (
        "pvc:default/data",
        "pvc:default/web-0-tmp",
        "gcePersistentDisk:disk:ro",
        "awsElasticBlockStore:vol-1",
        "rbd:rbd/img@m1:rw",
        "rbd:rbd/img@m2:rw",
    )


def test_counts_follow_adds_removes_and_node_removal() -> None:
    table = _table("n1", "n2")
    a = make_pod("a").pvc("data").obj()
    b = make_pod("b").pvc("data").obj()
    table.add_pod(table.index["n1"], a)
    table.add_pod(table.index["n1"], b)
    table.add_pod(table.index["n2"], make_pod("c").pvc("other").obj())
    col = table.volumes.column("pvc:default/data")
    assert col is not None
    assert col[table.index["n1"]] == 2 and col[table.index["n2"]] == 0
    table.remove_pod(table.index["n1"], a)
    assert col[table.index["n1"]] == 1
    assert table.volumes.used_anywhere("pvc:default/data")
    table.remove_node("n1")
    assert not table.volumes.used_anywhere("pvc:default/data")
    assert table.volumes.used_anywhere("pvc:default/other")


def test_pods_without_volumes_leave_the_index_alone() -> None:
    table = _table("n1")
    version = table.volumes.version
    table.add_pods([0, 0], [make_pod("a").req(cpu="1").obj(), make_pod("b").obj()])
    assert table.volumes.cols == {} and table.volumes.version == version


def test_bulk_adds_equal_single_adds_and_subsets_copy() -> None:
    pods = [make_pod(f"p{i}").pvc(f"c{i % 3}").obj() for i in range(9)]
    rows = [i % 4 for i in range(9)]
    bulk, single = _table("n0", "n1", "n2", "n3"), _table("n0", "n1", "n2", "n3")
    bulk.add_pods(rows, pods)
    for row, pod in zip(rows, pods, strict=True):
        single.add_pod(row, pod)
    assert bulk.volumes.cols.keys() == single.volumes.cols.keys()
    for ref, col in bulk.volumes.cols.items():
        assert np.array_equal(col, single.volumes.cols[ref]), ref
    sub = bulk.subset(np.asarray([2, 0], dtype=np.int64))
    for ref, col in bulk.volumes.cols.items():
        assert sub.volumes.cols[ref].tolist() == [col[2], col[0]]
    sub.add_pod(0, make_pod("extra").pvc("c0").obj())
    assert sub.volumes.cols["pvc:default/c0"][0] == bulk.volumes.cols["pvc:default/c0"][2] + 1


def test_index_grows_with_the_table() -> None:
    table = NodeTable(capacity=8)
    for i in range(20):
        table.upsert_node(make_node(f"n{i}").capacity(cpu="1", memory="1Gi", pods=10).obj())
    table.add_pod(table.index["n19"], make_pod("a").pvc("x").obj())
    col = table.volumes.column("pvc:default/x")
    assert col is not None and len(col) == len(table.alive)
    assert col[table.index["n19"]] == 1
