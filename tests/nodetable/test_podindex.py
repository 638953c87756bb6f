"""PodIndex: pod groups and incrementally maintained per-row / per-domain queries."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.nodetable.podindex import MAX_QUERIES, PodGroup
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.testing.builders import ZONE_LABEL, make_node, make_pod


def _table(n: int = 4, zones: int = 2) -> NodeTable:
    t = NodeTable()
    for i in range(n):
        t.upsert_node(make_node(f"n{i}").zone(f"z{i % zones}").obj())
    return t


def _is_web(g: PodGroup) -> int:
    return int(g.labels.get("app") == "web")


def test_pods_with_one_signature_share_a_group() -> None:
    t = _table()
    t.add_pod(0, make_pod("a").label("app", "web").obj())
    t.add_pod(1, make_pod("b").label("app", "web").obj())
    t.add_pod(1, make_pod("c").label("app", "db").obj())
    groups = t.pod_index.groups
    assert len(groups) == 2
    web = next(g for g in groups if g.labels == {"app": "web"})
    assert web.rows == {0: 1, 1: 1}


def test_signature_tells_apart_namespace_terminating_and_affinity() -> None:
    t = _table()
    t.add_pod(0, make_pod("a").label("app", "web").obj())
    t.add_pod(0, make_pod("b", "other").label("app", "web").obj())
    t.add_pod(
        0,
        make_pod("c")
        .label("app", "web")
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "web"})
        .obj(),
    )
    assert len(t.pod_index.groups) == 3


def test_query_counts_per_row_and_follows_adds_and_removes() -> None:
    t = _table()
    a = make_pod("a").label("app", "web").obj()
    t.add_pod(2, a)
    counts = t.pod_index.query("web", _is_web)
    assert counts[:4].tolist() == [0, 0, 1, 0]
    b = make_pod("b").label("app", "web").obj()
    t.add_pod(2, b)
    t.add_pod(3, make_pod("c").label("app", "db").obj())
    assert t.pod_index.query("web", _is_web)[:4].tolist() == [0, 0, 2, 0]
    t.remove_pod(2, a)
    assert t.pod_index.query("web", _is_web)[:4].tolist() == [0, 0, 1, 0]


def test_group_created_after_registration_gets_its_weight() -> None:
    t = _table()
    t.pod_index.query("web", _is_web)
    t.add_pod(1, make_pod("a", "ns2").label("app", "web").obj())
    assert t.pod_index.query("web", _is_web)[:4].tolist() == [0, 1, 0, 0]


def test_removed_node_row_is_cleared_and_reused_clean() -> None:
    t = _table()
    t.add_pod(1, make_pod("a").label("app", "web").obj())
    counts = t.pod_index.query("web", _is_web)
    assert counts[1] == 1
    t.remove_node("n1")
    assert t.pod_index.query("web", _is_web)[1] == 0
    row = t.upsert_node(make_node("n9").obj())
    assert row == 1
    assert t.pod_index.query("web", _is_web)[1] == 0


def test_growth_keeps_counts() -> None:
    t = NodeTable(capacity=8)
    t.upsert_node(make_node("n0").obj())
    t.add_pod(0, make_pod("a").label("app", "web").obj())
    t.pod_index.query("web", _is_web)
    for i in range(1, 40):
        t.upsert_node(make_node(f"n{i}").obj())
    t.add_pod(39, make_pod("b").label("app", "web").obj())
    counts = t.pod_index.query("web", _is_web)
    assert counts[0] == 1 and counts[39] == 1 and int(counts.sum()) == 2


def test_subset_index_is_built_from_its_rows_and_tracks_simulated_changes() -> None:
    t = _table()
    a = make_pod("a").label("app", "web").obj()
    t.add_pod(1, a)
    t.add_pod(2, make_pod("b").label("app", "web").obj())
    t.pod_index.query("web", _is_web)
    sub = t.subset(np.asarray([1], dtype=np.int64))
    sub.remove_pod(0, a)
    assert sub.pod_index.query("web", _is_web)[0] == 0
    # the parent is untouched
    assert t.pod_index.query("web", _is_web)[1] == 1


def test_label_sums_aggregate_by_domain_and_follow_relabels() -> None:
    t = _table(n=4, zones=2)
    t.add_pod(0, make_pod("a").label("app", "web").obj())
    t.add_pod(1, make_pod("b").label("app", "web").obj())
    t.add_pod(2, make_pod("c").label("app", "web").obj())
    z = t.label_values[ZONE_LABEL]
    sums = t.pod_index.label_sums("web", _is_web, ZONE_LABEL)
    assert sums[z.get("z0")] == 2 and sums[z.get("z1")] == 1
    t.add_pod(3, make_pod("d").label("app", "web").obj())
    sums = t.pod_index.label_sums("web", _is_web, ZONE_LABEL)
    assert sums[z.get("z1")] == 2
    t.upsert_node(make_node("n3").zone("z0").obj())  # relabel: n3 moves to z0
    sums = t.pod_index.label_sums("web", _is_web, ZONE_LABEL)
    assert sums[z.get("z0")] == 3 and sums[z.get("z1")] == 1


def test_evicted_queries_are_unhooked_and_recomputed() -> None:
    t = _table()
    t.add_pod(0, make_pod("a").label("app", "web").obj())
    t.pod_index.query("web", _is_web)
    for i in range(MAX_QUERIES):
        t.pod_index.query(("other", i), lambda g: 0)
    g = t.pod_index.groups[0]
    assert len(g.weights) <= MAX_QUERIES
    assert t.pod_index.query("web", _is_web)[0] == 1


def test_cached_values_recompute_when_a_group_appears() -> None:
    t = _table()
    t.add_pod(0, make_pod("a").label("app", "web").obj())
    first = t.pod_index.cached("n-groups", lambda: len(t.pod_index.groups))
    t.add_pod(0, make_pod("b").label("app", "web").obj())
    assert t.pod_index.cached("n-groups", lambda: len(t.pod_index.groups)) == first
    t.add_pod(0, make_pod("c").label("app", "db").obj())
    assert t.pod_index.cached("n-groups", lambda: len(t.pod_index.groups)) == 2


ops = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from(["web", "db", "api"]), st.booleans()),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_queries_match_a_brute_force_count(script: list[tuple[int, str, bool]]) -> None:
    t = _table(n=6, zones=3)
    t.pod_index.query("web", _is_web)
    t.pod_index.label_sums("web", _is_web, ZONE_LABEL)
    placed: list[tuple[int, object]] = []
    for i, (row, app, remove) in enumerate(script):
        if remove and placed:
            r, p = placed.pop(0)
            t.remove_pod(r, p)  # type: ignore[arg-type]
        else:
            p = make_pod(f"p{i}").label("app", app).obj()
            t.add_pod(row, p)
            placed.append((row, p))
    want = np.zeros(6, dtype=np.int64)
    for r, p in placed:
        want[r] += p.labels["app"] == "web"  # type: ignore[attr-defined]
    assert t.pod_index.query("web", _is_web)[:6].tolist() == want.tolist()
    z = t.label_values[ZONE_LABEL]
    sums = t.pod_index.label_sums("web", _is_web, ZONE_LABEL)
    for zone in range(3):
        assert sums[z.get(f"z{zone}")] == int(want[zone::3].sum())


def test_pods_on_a_row_follow_groups_meeting_and_leaving_it() -> None:
    t = _table()
    web = [make_pod(f"w{i}").label("app", "web").obj() for i in range(2)]
    db = make_pod("d").label("app", "db").obj()
    for pod in (*web, db):
        t.add_pod(1, pod)
    assert [t.pod_index.pods_on(r) for r in range(4)] == [0, 3, 0, 0]
    t.remove_pod(1, db)
    t.remove_pod(1, web[0])
    assert t.pod_index.pods_on(1) == 1
    t.add_pod(1, db)
    t.remove_node("n1")
    assert t.pod_index.pods_on(1) == 0
    assert all(1 not in g.rows for g in t.pod_index.groups)
