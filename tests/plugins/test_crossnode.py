"""The map/reduce currency of the cross-node plugins: DomainCounts, tables_of, and the
plugins' cycle state crossing a process boundary (state codec) unchanged."""

from __future__ import annotations

import numpy as np

from cluster_sched.cache.cache import Cache
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.framework.state_codec import decode_state, encode_state
from cluster_sched.nodetable.interner import Interner
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import (
    DomainCounts,
    merge_domain_counts,
    tables_of,
)
from cluster_sched.plugins.interpodaffinity.plugin import new as new_ipa
from cluster_sched.plugins.podtopologyspread.plugin import new as new_pts
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    make_namespace,
    make_node,
    make_pod,
)


def test_coded_and_valued_counts_agree() -> None:
    source: Interner[str] = Interner(["a", "b", "c"])
    coded = DomainCounts.from_codes(source, np.asarray([0, 2]), np.asarray([3, 1]))
    valued = DomainCounts.from_values(["c", "a"], [1, 3])
    assert dict(coded.items()) == dict(valued.items()) == {"a": 3, "c": 1}
    other: Interner[str] = Interner(["c", "x", "a"])  # another shard's codes
    assert coded.dense(other).tolist() == [1, 0, 3, 0]
    assert coded.dense(source)[-1] == 0  # absent label (-1) reads 0


def test_merge_sums_by_value_across_shards() -> None:
    s1: Interner[str] = Interner(["a", "b"])
    s2: Interner[str] = Interner(["b", "c"])
    merged = merge_domain_counts(
        [
            DomainCounts.from_codes(s1, np.asarray([0, 1]), np.asarray([1, 2])),
            DomainCounts.from_codes(s2, np.asarray([0, 1]), np.asarray([5, 0])),
        ]
    )
    assert dict(merged.items()) == {"a": 1, "b": 7, "c": 0}
    same = merge_domain_counts(
        [
            DomainCounts.from_codes(s1, np.asarray([0]), np.asarray([1])),
            DomainCounts.from_codes(s1, np.asarray([0, 1]), np.asarray([1, 1])),
        ]
    )
    assert same.source is s1 and dict(same.items()) == {"a": 2, "b": 1}


def test_with_delta_adds_and_creates_entries_without_mutating() -> None:
    source: Interner[str] = Interner(["a", "b"])
    dc = DomainCounts.from_codes(source, np.asarray([0]), np.asarray([1]))
    up = dc.with_delta("b", 2).with_delta("a", -1)
    assert dict(up.items()) == {"a": 0, "b": 2}
    assert dict(up.nonzero().items()) == {"b": 2}
    assert dict(dc.items()) == {"a": 1}
    assert DomainCounts.from_wire(up.to_wire()).get("b") == 2


def test_tables_of_and_node_lookup() -> None:
    cache = Cache()
    cache.load([make_node("n1").obj()])
    table = cache.sink.table  # type: ignore[attr-defined]
    assert tables_of(cache.snapshot) == [table]
    assert tables_of(table) == [table]
    assert tables_of(None) == []
    node = cache.snapshot.node("n1")
    assert node is not None and node.name == "n1"
    assert Snapshot.of_table(NodeTable()).node("n1") is None


def test_cycle_state_survives_the_state_codec() -> None:
    cache = Cache()
    cache.load(
        [
            make_namespace("default"),
            make_node("a").zone("z1").obj(),
            make_node("b").zone("z2").obj(),
            make_pod("x").label("app", "web").node("a").obj(),
        ]
    )
    pod = (
        make_pod("p")
        .label("app", "web")
        .pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"})
        .pod_affinity(ZONE_LABEL, {"app": "web"}, weight=3)
        .spread(1, ZONE_LABEL, match_labels={"app": "web"})
        .spread(1, ZONE_LABEL, "ScheduleAnyway", match_labels={"app": "web"})
        .obj()
    )
    handle = Handle(snapshot=cache.snapshot)
    plugins = (new_ipa(None, handle), new_pts(None, handle))
    state = CycleState()
    table = cache.sink.table  # type: ignore[attr-defined]
    nodes = NodeSlice(table, table.order())
    for pl in plugins:
        pl.pre_filter(state, pod, cache.snapshot)
        pl.pre_score(state, pod, cache.snapshot, nodes)
    shipped = decode_state(encode_state(state))
    # a shard's own table: same nodes, its own interned codes
    shard = NodeTable()
    for name in ("b", "a"):
        shard.upsert_node(cache.nodes[name])
    shard.add_pod(shard.index["a"], cache.get_pod("default/x"))  # type: ignore[arg-type]
    shard_nodes = NodeSlice(shard, shard.rows_of(table.names[r] for r in table.order().tolist()))  # type: ignore[misc]
    for pl in plugins:
        assert (
            pl.filter(state, pod, nodes).codes.tolist()
            == pl.filter(shipped, pod, shard_nodes).codes.tolist()
        )
        assert pl.score(state, pod, nodes).tolist() == pl.score(shipped, pod, shard_nodes).tolist()
