"""Store.iter_list: list's objects in list's order, decoded one at a time."""

from __future__ import annotations

from cluster_sched.store.store import Store
from cluster_sched.testing import make_node, make_pod


def test_iter_list_yields_what_list_returns_in_the_same_order(store: Store) -> None:
    store.apply_many([make_pod(f"p{i}").req(cpu="1").manifest() for i in (3, 1, 2)])
    store.apply(make_node("n1").manifest())
    assert list(store.iter_list("Pod")) == store.list("Pod")
    assert [d["metadata"]["name"] for d in store.iter_list("Pod")] == ["p1", "p2", "p3"]
    assert list(store.iter_list("Node")) == store.list("Node")
    assert list(store.iter_list("PersistentVolume")) == []


def test_iter_list_reads_the_store_when_called_not_when_iterated(store: Store) -> None:
    store.apply(make_pod("a").req(cpu="1").manifest())
    listing = store.iter_list("Pod")
    store.apply(make_pod("b").req(cpu="1").manifest())
    assert [d["metadata"]["name"] for d in listing] == ["a"]
