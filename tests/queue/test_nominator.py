"""The nominator: nominations kept in order, moved, and cleared."""

from __future__ import annotations

from dataclasses import replace

import redis

from cluster_sched.queue import Location, Nominator, SchedulingQueue
from cluster_sched.store.batch import ScriptBatch
from tests.queue.queue_helpers import info


def test_nominated_pods_are_kept_per_node_in_nomination_order(redis_client: redis.Redis) -> None:
    nominator = Nominator(redis_client)
    nominator.add_nominated_pod("ns/low", "node-1", 1)
    nominator.add_nominated_pod("ns/high", "node-1", 100)
    nominator.add_nominated_pod("ns/other", "node-2", 5)
    assert nominator.nominated_pods_for_node("node-1") == ["ns/low", "ns/high"]
    assert nominator.nominated_pods_with_priority("node-1") == [("ns/low", 1), ("ns/high", 100)]
    assert nominator.nominated_node_for_pod("ns/other") == "node-2"
    assert nominator.nominated_pods_for_node("node-3") == []


def test_renominating_moves_the_pod(redis_client: redis.Redis) -> None:
    nominator = Nominator(redis_client)
    nominator.add_nominated_pod("ns/p", "node-1", 1)
    nominator.add_nominated_pod("ns/p", "node-2", 1)
    assert nominator.nominated_pods_for_node("node-1") == []
    assert nominator.nominated_pods_for_node("node-2") == ["ns/p"]
    nominator.add_nominated_pod("ns/p", "", 1)  # no node: the nomination is dropped
    assert nominator.nominated_node_for_pod("ns/p") is None


def test_delete_clears_and_is_idempotent(redis_client: redis.Redis) -> None:
    nominator = Nominator(redis_client)
    nominator.add_nominated_pod("ns/p", "node-1", 1)
    nominator.delete_nominated_pod_if_exists("ns/p")
    nominator.delete_nominated_pod_if_exists("ns/p")
    assert nominator.nominated_node_for_pod("ns/p") is None
    assert nominator.nominated_pods_for_node("node-1") == []


def test_update_keeps_the_reserved_node_when_neither_pod_names_one(
    redis_client: redis.Redis,
) -> None:
    nominator = Nominator(redis_client)
    nominator.add_nominated_pod("ns/p", "node-1", 1)
    nominator.update_nominated_pod("ns/p", "ns/p", "")
    assert nominator.nominated_node_for_pod("ns/p") == "node-1"
    nominator.update_nominated_pod("ns/p", "ns/p", "node-2", old_node_name="node-1")
    assert nominator.nominated_node_for_pod("ns/p") == "node-2"
    nominator.update_nominated_pod("ns/p", "ns/p", "", old_node_name="node-2")
    assert nominator.nominated_node_for_pod("ns/p") is None


def test_prefixes_are_independent(redis_client: redis.Redis) -> None:
    Nominator(redis_client, prefix="{a}").add_nominated_pod("ns/p", "node-1", 1)
    assert Nominator(redis_client, prefix="{b}").nominated_node_for_pod("ns/p") is None


def test_queue_restores_nominations_on_add_and_clears_them_on_delete(
    queue: SchedulingQueue,
) -> None:
    queue.add(info("a", ts=queue.clock.now(), nominated_node_name="node-1"))
    assert queue.nominator.nominated_pods_for_node("node-1") == ["default/a"]
    assert queue.delete("default/a") is Location.ACTIVE
    assert queue.nominator.nominated_pods_for_node("node-1") == []


def test_queue_update_carries_the_nomination(queue: SchedulingQueue) -> None:
    pod = info("a", ts=queue.clock.now())
    queue.add(pod)
    queue.nominator.add_nominated_pod("default/a", "node-1", 0)  # preemption, in memory
    # An update whose pods do not name a node yet keeps the reservation.
    queue.update(pod, replace(pod, priority=1), pod_updated=False)
    assert queue.nominator.nominated_node_for_pod("default/a") == "node-1"
    # The status now names the node; then it is removed.
    named = replace(pod, nominated_node_name="node-1")
    queue.update(pod, named, pod_updated=False)
    queue.update(named, pod, pod_updated=False)
    assert queue.nominator.nominated_node_for_pod("default/a") is None


def test_live_items_are_the_views_items_with_each_pod_looked_up_once(
    redis_client: redis.Redis,
) -> None:
    known = {"ns/a": "A", "ns/b": "B", "ns/d": "D"}
    looked_up: list[str] = []

    def lookup(key: str) -> object:
        looked_up.append(key)
        return known.get(key)

    nominator = Nominator(redis_client, pod_lookup=lookup)  # type: ignore[arg-type]
    nominator.add_nominated_pod("ns/a", "node-1", 1)
    nominator.add_nominated_pod("ns/gone", "node-1", 1)  # not known: left out
    nominator.add_nominated_pod("ns/b", "node-1", 1)
    nominator.add_nominated_pod("ns/c", "node-2", 1)  # a node with no known pod: left out
    nominator.add_nominated_pod("ns/d", "node-3", 1)
    view = nominator.nominated_pods()
    looked_up.clear()
    live = view.live_items()
    assert sorted(looked_up) == ["ns/a", "ns/b", "ns/c", "ns/d", "ns/gone"]
    assert live == [(node, list(pods)) for node, pods in view.items()]
    assert live == [("node-1", ["A", "B"]), ("node-3", ["D"])]


def _calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats").get(f"cmdstat_{command}") or {}
    return int(stats.get("calls", 0))


def test_a_nomination_this_process_knows_is_one_round_trip(redis_client: redis.Redis) -> None:
    nominator = Nominator(redis_client)
    nominator.add_nominated_pod("ns/p", "node-1", 5)
    reads, runs = _calls(redis_client, "hget"), _calls(redis_client, "evalsha")
    nominator.add_nominated_pod("ns/p", "node-2", 5)  # moved
    nominator.update_nominated_pod("ns/p", "ns/p", "node-3", old_node_name="node-2", priority=5)
    nominator.delete_nominated_pod_if_exists("ns/p")
    # Each change is one script run, whose own HGET is the only read of the node.
    assert _calls(redis_client, "evalsha") - runs == 3
    assert _calls(redis_client, "hget") - reads == 3
    assert nominator.nominated_node_for_pod("ns/p") is None
    assert nominator.nominated_pods_for_node("node-3") == []


def test_a_nomination_changed_by_another_process_is_reread_not_overwritten_blindly(
    redis_client: redis.Redis,
) -> None:
    a, b = Nominator(redis_client), Nominator(redis_client)
    a.add_nominated_pod("ns/p", "node-1", 5)
    b.add_nominated_pod("ns/p", "node-2", 5)  # a's view still says node-1
    a.add_nominated_pod("ns/p", "node-3", 7)
    assert a.nominated_node_for_pod("ns/p") == "node-3"
    assert [a.nominated_pods_for_node(n) for n in ("node-1", "node-2", "node-3")] == [
        [],
        [],
        ["ns/p"],
    ]
    assert a.nominated_pods_with_priority("node-3") == [("ns/p", 7)]
    b.update_nominated_pod("ns/p", "ns/p", "", old_node_name="node-3", priority=7)  # stale view
    assert a.nominated_node_for_pod("ns/p") is None
    assert a.nominated_pods_for_node("node-3") == []


def test_renominating_the_last_nominee_unchanged_is_not_written(redis_client: redis.Redis) -> None:
    """Same node, already its last nominee, same priority: the script would change
    nothing (upstream's delete-then-append of the last pod), so it is not run; any other
    re-nomination is written and moves the pod to the end."""
    nominator = Nominator(redis_client)
    nominator.add_nominated_pod("ns/a", "node-1", 5)
    nominator.add_nominated_pod("ns/b", "node-1", 5)
    runs = _calls(redis_client, "evalsha")
    nominator.add_nominated_pod("ns/b", "node-1", 5)
    nominator.update_nominated_pod("ns/b", "ns/b", "node-1", old_node_name="", priority=5)
    assert _calls(redis_client, "evalsha") == runs
    nominator.add_nominated_pod("ns/a", "node-1", 5)  # not the last one: moved to the end
    assert _calls(redis_client, "evalsha") == runs + 1
    assert nominator.nominated_pods_for_node("node-1") == ["ns/b", "ns/a"]
    nominator.add_nominated_pod("ns/a", "node-1", 7)  # another priority
    assert _calls(redis_client, "evalsha") == runs + 2
    assert nominator.nominated_pods_with_priority("node-1") == [("ns/b", 5), ("ns/a", 7)]
    assert [k for k, _ in nominator.nominated_pods().live_items()] == []  # no pod known
    restarted = Nominator(redis_client)
    restarted.load()  # priorities unknown after a load: written again
    restarted.add_nominated_pod("ns/a", "node-1", 7)
    assert _calls(redis_client, "evalsha") == runs + 3


def test_a_batched_nomination_lands_and_is_remembered(redis_client: redis.Redis) -> None:
    nominator = Nominator(redis_client)
    batch = ScriptBatch()
    finish = nominator.add_nominated_pod_in(batch, "ns/p", "node-1", 7)
    assert nominator.nominated_node_for_pod("ns/p") is None  # nothing sent yet
    batch.execute()
    finish()
    assert nominator.nominated_pods_with_priority("node-1") == [("ns/p", 7)]
    assert nominator.has_nomination("ns/p")


def test_a_batched_nomination_another_process_overtook_is_set_again(
    redis_client: redis.Redis,
) -> None:
    """The batched call guesses this process's view as the current node; another process
    moved the pod meanwhile, so the call is refused (it wrote nothing) and the finisher
    sets the nomination the usual way: one node holds the pod, in Redis and in memory."""
    ours, other = Nominator(redis_client), Nominator(redis_client)
    other.add_nominated_pod("ns/p", "node-2", 7)
    batch = ScriptBatch()
    finish = ours.add_nominated_pod_in(batch, "ns/p", "node-1", 7)
    batch.execute()
    finish()
    assert ours.nominated_node_for_pod("ns/p") == "node-1"
    assert ours.nominated_pods_for_node("node-2") == []
    assert ours.nominated_pods_for_node("node-1") == ["ns/p"]
    assert ours.has_nomination("ns/p")
