"""Event handlers: watch events → cache and queue (upstream eventhandlers.go).

The classification of node updates is pure and table-driven; the pod and node paths run
against a real coordinator (real Redis queue), calling the handlers with (old, new) pairs
as the informer does, then flushing the batched queue writes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import redis

from cluster_sched.api.objects import Node, Pod
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
from cluster_sched.plugins import names
from cluster_sched.queue.types import Location
from cluster_sched.scheduler.event_handlers import node_change_event, pod_spec_updated
from cluster_sched.testing.builders import make_namespace, make_node, make_pdb
from tests.scheduler.coordinator_harness import PERMIT, PROFILE, Harness, config, node, pod

# --------------------------------------------------------------------- node updates


def _base() -> Any:
    return make_node("n").capacity(cpu="4", memory="8Gi", pods=110).label("zone", "a")


NODE_UPDATES: dict[str, tuple[Node, Node, ActionType | None]] = {
    "nothing": (_base().obj(), _base().obj(), None),
    "uncordon": (_base().unschedulable().obj(), _base().obj(), ActionType.UPDATE_NODE_TAINT),
    "cordon-is-not-helpful": (_base().obj(), _base().unschedulable().obj(), None),
    "allocatable": (
        _base().obj(),
        make_node("n").capacity(cpu="8", memory="8Gi", pods=110).label("zone", "a").obj(),
        ActionType.UPDATE_NODE_ALLOCATABLE,
    ),
    "label": (_base().obj(), _base().label("zone", "b").obj(), ActionType.UPDATE_NODE_LABEL),
    "taint": (_base().obj(), _base().taint("k", "v").obj(), ActionType.UPDATE_NODE_TAINT),
    "untaint": (_base().taint("k", "v").obj(), _base().obj(), ActionType.UPDATE_NODE_TAINT),
    "annotation": (
        _base().obj(),
        _base().annotation("a", "b").obj(),
        ActionType.UPDATE_NODE_ANNOTATION,
    ),
    "images-only": (_base().obj(), _base().image("nginx", 1000).obj(), None),
    "label-and-allocatable": (
        _base().obj(),
        make_node("n").capacity(cpu="8", memory="8Gi", pods=110).label("zone", "b").obj(),
        ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_LABEL,
    ),
}


@pytest.mark.parametrize("case", list(NODE_UPDATES.values()), ids=list(NODE_UPDATES))
def test_node_update_classification(case: tuple[Node, Node, ActionType | None]) -> None:
    old, new, action = case
    new = replace(new, meta=replace(new.meta, resource_version="99"))
    expected = None if action is None else ClusterEvent(EventResource.NODE, action)
    assert node_change_event(old, new) == expected


POD_UPDATES: dict[str, tuple[Any, Any, bool]] = {
    "resource-version-only": (pod("p"), pod("p"), False),
    "status-nominated": (pod("p"), pod("p").nominated("n1"), False),
    "label": (pod("p"), pod("p").label("a", "b"), True),
    "toleration": (pod("p"), pod("p").tolerate("k", value="v"), True),
    "requests": (pod("p"), pod("p", cpu="2"), True),
}


@pytest.mark.parametrize("case", list(POD_UPDATES.values()), ids=list(POD_UPDATES))
def test_pod_spec_updated(case: tuple[Any, Any, bool]) -> None:
    old_b, new_b, updated = case
    old = old_b.obj()
    new = new_b.obj()
    new = replace(new, meta=replace(new.meta, resource_version="42"), phase="Running")
    assert pod_spec_updated(old, new) is updated


# --------------------------------------------------------------------- pods


@pytest.fixture
def h(make_harness: Any) -> Harness:
    h = make_harness(config(PERMIT))
    h.apply(node("n1", cpu="2"))
    h.start()
    return h


def on_pod(h: Harness, old: Pod | None, new: Pod | None) -> None:
    h.coord.handlers.on_pod(old, new)
    h.coord.handlers.flush()


def with_uid(b: Any, name: str) -> Pod:
    return b.uid(f"uid-{name}").obj()


def test_unassigned_add_goes_to_the_queue(h: Harness) -> None:
    p = with_uid(pod("p"), "p")
    h.coord.handlers.on_pod(None, p)
    assert h.queue.location("default/p") is None, "batched until flush"
    h.coord.handlers.flush()
    assert h.queue.location("default/p") is Location.ACTIVE
    assert h.cache.get_pod("default/p") is None


def test_a_burst_on_a_frozen_clock_is_queued_in_arrival_order(h: Harness) -> None:
    """The clock does not move during the burst: every pod's timestamp must still be a
    microsecond of its own, so activeQ orders them as they arrived, not by pod key
    (the names arrive in descending order: any two sharing a timestamp would swap)."""
    names = [f"p-{999 - i}" for i in range(300)]
    for name in names:
        h.coord.handlers.on_pod(None, with_uid(pod(name), name))
    h.coord.handlers.flush()
    assert h.queue.peek_active(len(names)) == [f"default/{n}" for n in names]


def test_add_then_delete_in_one_batch_never_reaches_the_queue(h: Harness) -> None:
    p = with_uid(pod("p"), "p")
    h.coord.handlers.on_pod(None, p)
    h.coord.handlers.on_pod(p, None)
    h.coord.handlers.flush()
    assert h.queue.location("default/p") is None


@pytest.mark.parametrize(
    "builder",
    [pod("p").scheduler_name("other-scheduler"), pod("p").label("x", "y")],
    ids=["other-scheduler", "terminating"],
)
def test_pods_not_ours_to_schedule_are_not_queued(h: Harness, builder: Any) -> None:
    p = with_uid(builder, "p")
    if p.labels.get("x"):
        p = replace(p, meta=replace(p.meta, deletion_timestamp=1.0))
    on_pod(h, None, p)
    assert h.queue.location("default/p") is None


def test_unassigned_delete_removes_from_queue(h: Harness) -> None:
    p = with_uid(pod("p"), "p")
    on_pod(h, None, p)
    on_pod(h, p, None)
    assert h.queue.location("default/p") is None


def test_status_only_update_leaves_an_unschedulable_pod_alone(h: Harness) -> None:
    h.apply(pod("big", cpu="3"))
    h.cycle()
    assert h.queue.location("default/big") is Location.UNSCHEDULABLE
    # The failure handler's own status write comes back through the watch.
    h.coord.poll_informer()
    assert h.queue.location("default/big") is Location.UNSCHEDULABLE
    big = h.coord.informer.pods["default/big"]
    # A spec change (a new label) is offered to the hints of the plugin that rejected
    # it: NodeResourcesFit's cannot be helped by a label, so it stays (QueueingHints).
    relabeled = replace(big, meta=replace(big.meta, labels={"new": "label"}, resource_version="99"))
    on_pod(h, big, relabeled)
    assert h.queue.location("default/big") is Location.UNSCHEDULABLE


def test_binding_of_an_assumed_pod_confirms_it(h: Harness) -> None:
    h.apply(pod("p").label("permit", "wait"))
    h.cycle()
    assert h.cache.is_assumed("default/p")
    old = h.coord.informer.pods["default/p"]
    bound = replace(old, node_name="n1")
    on_pod(h, old, bound)
    assert not h.cache.is_assumed("default/p")
    assert h.cache.pod_node("default/p") == "n1"
    assert h.requested_cpu("n1") == 1000
    assert h.queue.location("default/p") is None
    assert h.coord.stats.bound_node["default/p"] == "n1"
    h.coord.frameworks[PROFILE].handle.waiting_pods.reject("default/p", PERMIT, "test over")


def test_binding_by_someone_else_takes_a_queued_pod_out(h: Harness) -> None:
    p = with_uid(pod("p"), "p")
    on_pod(h, None, p)
    assert h.queue.location("default/p") is Location.ACTIVE
    on_pod(h, p, replace(p, node_name="n1"))
    assert h.queue.location("default/p") is None
    assert h.cache.pod_node("default/p") == "n1"
    assert not h.cache.is_assumed("default/p")


def test_assigned_pod_update_and_delete_go_to_the_cache(h: Harness) -> None:
    running = with_uid(pod("running", cpu="1").node("n1"), "running")
    on_pod(h, None, running)
    assert h.requested_cpu("n1") == 1000
    # A pending pod that does not fit next to it.
    h.apply(pod("waiting", cpu="2"))
    h.cycle()
    assert h.queue.location("default/waiting") is Location.UNSCHEDULABLE

    resized = with_uid(pod("running", cpu="1500m").node("n1"), "running")
    on_pod(h, running, resized)
    assert h.requested_cpu("n1") == 1500
    assert h.queue.location("default/waiting") is Location.UNSCHEDULABLE

    on_pod(h, resized, None)
    assert h.cache.get_pod("default/running") is None
    assert h.requested_cpu("n1") == 0
    assert h.queue.location("default/waiting") is Location.BACKOFF


def test_assigned_pods_deleted_in_one_batch_are_one_scan_of_the_pool(
    h: Harness, redis_client: redis.Redis
) -> None:
    running = [with_uid(pod(f"r{i}", cpu="500m").node("n1"), f"r{i}") for i in range(4)]
    for p in running:
        on_pod(h, None, p)
    h.apply(pod("waiting", cpu="1"))
    h.cycle()
    assert h.queue.location("default/waiting") is Location.UNSCHEDULABLE
    before = _pool_scans(redis_client)
    for p in running[:3]:  # one informer batch: deletes wait for its end
        h.coord.handlers.on_pod(p, None)
        assert h.cache.get_pod(p.key) is None, "the cache forgets at once"
    assert h.queue.location("default/waiting") is Location.UNSCHEDULABLE
    h.coord.handlers.flush()
    assert h.queue.location("default/waiting") is Location.BACKOFF
    assert _pool_scans(redis_client) == before + 1
    assert h.requested_cpu("n1") == 500


def _pool_scans(client: redis.Redis) -> int:
    stats = client.info("commandstats").get("cmdstat_zrangebyscore") or {}
    return int(stats.get("calls", 0))


def test_deleting_a_pod_waiting_on_permit_rejects_it(h: Harness) -> None:
    h.apply(pod("p").label("permit", "wait"))
    h.cycle()
    waiting = h.coord.frameworks[PROFILE].handle.waiting_pods.get("default/p")
    assert waiting is not None
    h.store.delete("Pod", "default/p")
    h.coord.poll_informer()
    assert waiting.wait().code.name == "UNSCHEDULABLE"
    h.settle()
    assert h.cache.get_pod("default/p") is None
    assert h.requested_cpu("n1") == 0
    assert h.queue.location("default/p") is None


# --------------------------------------------------------------------- nodes


def test_node_events_go_to_the_cache_and_move_pods(h: Harness) -> None:
    h.apply(pod("big", cpu="3"))
    h.cycle()
    assert h.queue.location("default/big") is Location.UNSCHEDULABLE
    assert h.queue.get("default/big").unschedulable_plugins == {names.NODE_RESOURCES_FIT}
    old = h.cache.nodes["n1"]

    # An annotation does not concern NodeResourcesFit: no move.
    annotated = (
        make_node("n1").capacity(cpu="2", memory="32Gi", pods=110).annotation("a", "b").obj()
    )
    h.coord.handlers.on_node(old, annotated)
    h.coord.handlers.flush()  # the informer flushes after each batch of events
    assert h.queue.location("default/big") is Location.UNSCHEDULABLE
    # More allocatable does.
    grown = make_node("n1").capacity(cpu="4", memory="32Gi", pods=110).annotation("a", "b").obj()
    h.coord.handlers.on_node(annotated, grown)
    h.coord.handlers.flush()
    assert h.cache.nodes["n1"] is grown
    assert h.queue.location("default/big") is Location.BACKOFF

    h.coord.handlers.on_node(grown, None)
    assert "n1" not in h.cache.nodes
    assert "n1" not in h.cache.sink.table.index


def test_node_add_moves_pods(h: Harness) -> None:
    h.apply(pod("big", cpu="3"))
    h.cycle()
    # NodeResourcesFit's hint: a node that could not hold the pod even empty (no
    # memory here) leaves it waiting.
    h.coord.handlers.on_node(None, make_node("n2").capacity(cpu="8", pods=110).obj())
    h.coord.handlers.flush()  # the informer flushes after each batch of events
    assert "n2" in h.cache.nodes
    assert h.queue.location("default/big") is Location.UNSCHEDULABLE
    h.coord.handlers.on_node(None, node("n3", cpu="8").obj())
    h.coord.handlers.flush()
    assert h.queue.location("default/big") is Location.BACKOFF


def test_other_kinds_go_to_the_cache(h: Harness) -> None:
    ns = make_namespace("team", {"tier": "gold"})
    h.coord.handlers.on_other("Namespace", None, ns)
    assert h.coord.handlers.namespace_labels("team") == {"tier": "gold"}
    pdb = make_pdb("budget", match_labels={"app": "web"}, min_available=1)
    h.coord.handlers.on_other("PodDisruptionBudget", None, pdb)
    assert "default/budget" in h.cache.pdbs
    h.coord.handlers.on_other("PodDisruptionBudget", pdb, None)
    h.coord.handlers.on_other("Namespace", ns, None)
    assert h.cache.pdbs == {}
    assert h.coord.handlers.namespace_labels("team") == {}
