"""check_store: finds each broken invariant, and nothing in a healthy store."""

from __future__ import annotations

import redis

from cluster_sched.store import Store
from cluster_sched.store.check import check_store
from cluster_sched.testing import make_node, make_pod


def test_healthy_store_has_no_problems(redis_client: redis.Redis) -> None:
    store = Store(redis_client)
    store.apply_many(
        [
            make_node("n1").capacity(cpu="2", pods=10).manifest(),
            make_pod("a").req(cpu="1").manifest(),
            make_pod("b").req(cpu="1").manifest(),
            make_pod("early").node("n1").manifest(),  # created bound: no event expected
        ]
    )
    store.bind_many([("default/a", "n1", None)], scheduled_events=True, check_fit=True)
    report = check_store(store, ["default/a", "default/b", "default/early"])
    assert report.problems() == []
    assert report.bound == {"default/a": "n1", "default/early": "n1"}
    assert report.pending == ["default/b"]


def test_each_broken_invariant_is_reported(redis_client: redis.Redis) -> None:
    store = Store(redis_client)
    store.apply_many(
        [
            make_node("n1").capacity(cpu="1", pods=10).manifest(),
            make_pod("a").req(cpu="800m").manifest(),
            make_pod("b").req(cpu="800m").manifest(),
        ]
    )
    store.bind("default/a", "n1")  # a binding without its Scheduled event
    store.bind("default/b", "n1")  # no fit check: the node is over-committed
    store.record_event("Pod", "default/b", "Scheduled", "twice")
    store.record_event("Pod", "default/b", "Scheduled", "twice")
    report = check_store(store, ["default/a", "default/b", "default/gone"])
    assert report.lost == ["default/gone"]
    assert report.wrong_events == {"default/a": 0, "default/b": 2}
    assert report.over_committed == ["n1: cpu 1600 > 1000"]
    assert len(report.problems()) == 4
