"""The binding subresource: atomic, conflicting, never twice; pod status updates."""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pytest
import redis

from cluster_sched.errors import StoreError
from cluster_sched.store import (
    ApplyAction,
    BindOutcome,
    EventType,
    Store,
    unschedulable_condition,
)
from cluster_sched.testing import make_pod


def pod(name: str, **labels: str) -> dict[str, Any]:
    return make_pod(name).labels(labels).req(cpu="100m").manifest()


def create(store: Store, doc: dict[str, Any]) -> str:
    """Apply ``doc`` and return the new pod's uid."""
    return str(store.apply(doc).obj["metadata"]["uid"])


def test_bind_sets_node_condition_rv_and_emits_modified(store: Store) -> None:
    uid = create(store, make_pod("a").nominated("n9").manifest())
    result = store.bind("default/a", "n1", uid)
    assert result.ok and result.outcome is BindOutcome.BOUND and result.rv == 2
    stored = store.get("Pod", "default/a")
    assert stored["spec"]["nodeName"] == "n1"
    assert stored["metadata"]["resourceVersion"] == "2"
    assert "nominatedNodeName" not in stored["status"], "cleared after binding"
    assert stored["status"]["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": "2024-05-01T12:00:00Z",
        }
    ]
    event = store.read_events()[-1]
    assert (event.type, event.key, event.rv, event.id) == (
        EventType.MODIFIED,
        "default/a",
        2,
        result.detail,
    )
    assert event.obj == stored


def test_bind_replaces_a_false_podscheduled_and_keeps_other_conditions(store: Store) -> None:
    doc = pod("a")
    doc["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
        ],
    }
    store.apply(doc)
    assert store.bind("default/a", "n1").ok
    conditions = store.get("Pod", "default/a")["status"]["conditions"]
    assert conditions[0] == {"type": "Ready", "status": "False"}
    assert conditions[1]["status"] == "True" and "reason" not in conditions[1]
    assert store.get("Pod", "default/a")["status"]["phase"] == "Pending"


@pytest.mark.parametrize(
    ("setup", "outcome", "message"),
    [
        ("missing", BindOutcome.NOT_FOUND, 'pods "a" not found'),
        ("bound", BindOutcome.ALREADY_BOUND, 'pod a is already assigned to node "n0"'),
        ("terminating", BindOutcome.TERMINATING, "pod a is being deleted"),
        ("gated", BindOutcome.GATED, "pod a has non-empty .spec.schedulingGates"),
        ("recreated", BindOutcome.UID_MISMATCH, "Precondition failed: UID in precondition"),
    ],
    ids=["missing", "bound", "terminating", "gated", "recreated"],
)
def test_conflicts_write_nothing(
    store: Store, setup: str, outcome: BindOutcome, message: str
) -> None:
    uid = None
    if setup == "bound":
        store.apply(make_pod("a").node("n0").manifest())
    elif setup == "terminating":
        doc = pod("a")
        doc["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
        store.apply(doc)
    elif setup == "gated":
        store.apply(make_pod("a").scheduling_gates("example.com/wait").manifest())
    elif setup == "recreated":
        uid = create(store, pod("a"))
        store.delete("Pod", "default/a")
        create(store, pod("a"))
    before = (store.resource_version(), len(store.read_events()), store.get("Pod", "default/a"))
    result = store.bind("default/a", "n1", uid)
    assert not result.ok and result.outcome is outcome and result.rv == 0
    assert message in result.message
    after = (store.resource_version(), len(store.read_events()), store.get("Pod", "default/a"))
    assert after == before


def test_empty_gates_and_null_deletion_timestamp_do_not_block(store: Store) -> None:
    doc = pod("a")
    doc["spec"]["schedulingGates"] = []
    doc["metadata"]["deletionTimestamp"] = None
    store.apply(doc)
    assert store.bind("default/a", "n1").ok


def test_double_bind_is_rejected(store: Store) -> None:
    uid = create(store, pod("a"))
    assert store.bind("default/a", "n1", uid).ok
    second = store.bind("default/a", "n2", uid)
    assert second.outcome is BindOutcome.ALREADY_BOUND and second.detail == "n1"
    assert store.get("Pod", "default/a")["spec"]["nodeName"] == "n1"


def test_bind_many_outcomes_are_independent(store: Store) -> None:
    uids = {name: create(store, pod(name)) for name in ("a", "b", "c", "d")}
    store.bind("default/c", "n0")
    results = store.bind_many(
        [
            ("default/a", "n1", uids["a"]),
            ("default/b", "n2", "not-b"),
            ("default/c", "n3", None),
            ("default/zz", "n4", None),
            ("default/d", "n5", uids["d"]),
            ("default/a", "n6", uids["a"]),
        ]
    )
    assert [r.outcome for r in results] == [
        BindOutcome.BOUND,
        BindOutcome.UID_MISMATCH,
        BindOutcome.ALREADY_BOUND,
        BindOutcome.NOT_FOUND,
        BindOutcome.BOUND,
        BindOutcome.ALREADY_BOUND,
    ]
    nodes = [p["spec"].get("nodeName") for p in store.list("Pod")]
    assert nodes == ["n1", None, "n0", "n5"]
    assert [r.rv for r in results if r.ok] == [6, 7]


def test_bind_many_in_several_script_calls(redis_client: redis.Redis, clock) -> None:
    store = Store(redis_client, clock=clock, batch_size=7)
    store.apply_many([pod(f"p{i}") for i in range(30)])
    results = store.bind_many([(f"default/p{i}", f"n{i}", None) for i in range(30)])
    assert all(r.ok for r in results)
    assert [p["spec"]["nodeName"] for p in store.list("Pod")][:3] == ["n0", "n1", "n10"]


def test_bind_rejects_an_empty_node_name(store: Store) -> None:
    with pytest.raises(ValueError, match="node name"):
        store.bind("default/a", "")


def test_bind_many_reports_unreadable_and_bind_raises(
    store: Store, redis_client: redis.Redis
) -> None:
    store.apply(pod("ok"))
    redis_client.hset(store.keys.obj("Pod"), "default/bad", b"\x81\xa8metadata\xc1")
    results = store.bind_many([("default/bad", "n1", None), ("default/ok", "n1", None)])
    assert results[0].outcome is BindOutcome.UNREADABLE and results[1].ok
    assert "stored Pod default/bad is unreadable" in results[0].message
    with pytest.raises(StoreError, match="Pod default/bad"):
        store.bind("default/bad", "n1")


def test_concurrent_binders_in_threads_exactly_one_wins(store: Store) -> None:
    uid = create(store, pod("a"))
    barrier = threading.Barrier(8)
    results = []
    lock = threading.Lock()

    def binder(i: int) -> None:
        barrier.wait()
        result = store.bind("default/a", f"n{i}", uid)
        with lock:
            results.append(result)

    threads = [threading.Thread(target=binder, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if r.ok]
    assert len(winners) == 1
    assert store.get("Pod", "default/a")["spec"]["nodeName"] == winners[0].node_name
    assert {r.detail for r in results if not r.ok} == {winners[0].node_name}


def _bind_all(url: str, node: str, keys: list[str], start: Any, out: Any) -> None:
    with Store.from_url(url) as store:
        start.wait()
        out.put([(r.pod_key, r.ok) for r in store.bind_many([(k, node, None) for k in keys])])
        for key in keys[::-1]:  # and one at a time, in the other order
            store.bind(key, node)


def test_concurrent_binders_in_processes_bind_each_pod_once(store: Store, redis_url: str) -> None:
    keys = [f"default/p{i}" for i in range(60)]
    store.apply_many([pod(f"p{i}") for i in range(60)])
    ctx = multiprocessing.get_context("fork")
    start, out = ctx.Barrier(4), ctx.Queue()
    procs = [
        ctx.Process(target=_bind_all, args=(redis_url, f"n{i}", keys, start, out)) for i in range(4)
    ]
    for p in procs:
        p.start()
    wins: dict[str, int] = dict.fromkeys(keys, 0)
    for _ in procs:
        for key, ok in out.get(timeout=60):
            wins[key] += ok
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert set(wins.values()) == {1}
    modified = [e for e in store.read_events(count=1000) if e.type is EventType.MODIFIED]
    assert sorted(e.key for e in modified) == sorted(keys)


def test_apply_racing_bind_never_loses_the_binding(store: Store) -> None:
    store.apply(pod("a", v="0"))
    stop = threading.Event()

    def reapply() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            store.apply(pod("a", v=str(i)))

    t = threading.Thread(target=reapply)
    t.start()
    try:
        result = store.bind("default/a", "n1")
        for _ in range(20):
            store.apply(pod("a", v="x"))
    finally:
        stop.set()
        t.join()
    assert result.ok
    assert store.get("Pod", "default/a")["spec"]["nodeName"] == "n1"


# --- pod status ------------------------------------------------------------------------


def test_unschedulable_condition_then_unchanged(store: Store, clock) -> None:
    store.apply(pod("a"))
    cond = unschedulable_condition("0/3 nodes are available: 3 Insufficient cpu.")
    first = store.update_pod_status_condition("default/a", cond)
    assert first is not None and first.action is ApplyAction.UPDATED
    stored = store.get("Pod", "default/a")["status"]["conditions"]
    assert stored == [{**cond, "lastTransitionTime": "2024-05-01T12:00:00Z"}]
    clock.step(30)
    again = store.update_pod_status_condition("default/a", cond)
    assert again is not None and again.action is ApplyAction.UNCHANGED
    assert store.resource_version() == first.rv
    other = unschedulable_condition("0/3 nodes are available: 3 node(s) had taints.")
    third = store.update_pod_status_condition("default/a", other)
    assert third is not None and third.action is ApplyAction.UPDATED
    kept = store.get("Pod", "default/a")["status"]["conditions"][0]
    assert kept["lastTransitionTime"] == "2024-05-01T12:00:00Z", "status did not change"
    assert kept["message"] == other["message"]


def test_nominated_node_name_set_clear_and_events(store: Store) -> None:
    store.apply(pod("a"))
    set_ = store.set_nominated_node_name("default/a", "n2")
    assert set_ is not None and set_.action is ApplyAction.UPDATED
    assert store.get("Pod", "default/a")["status"]["nominatedNodeName"] == "n2"
    assert store.set_nominated_node_name("default/a", "n2").action is ApplyAction.UNCHANGED
    cleared = store.set_nominated_node_name("default/a", "")
    assert cleared is not None and cleared.action is ApplyAction.UPDATED
    assert "nominatedNodeName" not in store.get("Pod", "default/a")["status"]
    types = [e.type for e in store.read_events()]
    assert types == [EventType.ADDED, EventType.MODIFIED, EventType.MODIFIED]


def test_update_pod_status_both_fields_in_one_write(store: Store) -> None:
    uid = create(store, pod("a"))
    result = store.update_pod_status(
        "default/a",
        condition=unschedulable_condition("no fit"),
        nominated_node_name="n1",
        pod_uid=uid,
    )
    assert result is not None and result.rv == 2
    status = store.get("Pod", "default/a")["status"]
    assert status["nominatedNodeName"] == "n1" and status["conditions"][0]["message"] == "no fit"


def test_update_pod_status_of_missing_or_recreated_pod(store: Store) -> None:
    assert store.set_nominated_node_name("default/a", "n1") is None
    store.apply(pod("a"))
    assert store.set_nominated_node_name("default/a", "n1", pod_uid="old") is None
    assert store.resource_version() == 1
