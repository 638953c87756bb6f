"""Poison inputs against a running coordinator: every other pod is still scheduled.

Each poison is written the way it reaches a real deployment: objects through the store
(which keys objects but leaves their content to the parser), garbage straight into Redis
with redis-py. The coordinator must start, keep polling, report the bad input once, and
schedule every other pod; a restart (a new coordinator on the same Redis) too.
"""

from __future__ import annotations

from typing import Any

import redis

from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.coordinator_harness import Harness, node, pod

GARBAGE = b"\xc1\x00 not msgpack"


def _schedule_all(h: Harness, count: int) -> None:
    for _ in range(count):
        h.cycle()
    h.settle()


def _prebound(name: str, node_name: str, **requests: str) -> dict[str, Any]:
    doc = make_pod(name).req(**requests).manifest()
    doc["spec"]["nodeName"] = node_name
    return doc


def test_prebound_pod_asking_1Ei_cpu_is_reported_and_restarts_schedule_the_rest(
    make_harness: Any,
) -> None:
    """It used to crash the coordinator with OverflowError at start, on every restart."""
    h: Harness = make_harness()
    h.apply(node("n1"), pod("a"))
    h.store.apply(_prebound("huge", "n1", cpu="1Ei"))
    h.start()
    _schedule_all(h, 1)
    assert h.node_of("default/a") == "n1"
    (line,) = h.coord.invalid_objects
    assert "Pod default/huge" in line and "requests.cpu" in line and "int64" in line

    again: Harness = make_harness()
    again.apply(pod("b"))
    again.start()
    _schedule_all(again, 1)
    assert again.node_of("default/b") == "n1"


def test_node_with_1e20_cpu_and_memory_is_reported_and_pods_schedule_elsewhere(
    make_harness: Any,
) -> None:
    """It used to make every cycle fail: NodeResourcesFit returned an invalid score -1."""
    h: Harness = make_harness()
    big = make_node("big").capacity(cpu="1", memory="1Gi", pods=110).manifest()
    big["status"]["allocatable"] = {"cpu": "1e20", "memory": "1e20", "pods": "110"}
    h.apply(node("n1"), node("n2"), pod("a"), pod("b"))
    h.store.apply(big)
    h.start()
    _schedule_all(h, 2)
    assert {h.node_of("default/a"), h.node_of("default/b")} <= {"n1", "n2"}
    (line,) = h.coord.invalid_objects
    assert "Node big" in line and "status.allocatable" in line


def test_largest_valid_node_and_overcommitted_prebound_pods_keep_scheduling(
    make_harness: Any,
) -> None:
    """Values the parser accepts, at the int64 edge: a node as large as can be, and pods
    bound by hand whose requests sum past int64 on one node. Scores stay valid (the
    table saturates, the scorers compute exactly) and every pod is placed."""
    h: Harness = make_harness()
    big = make_node("big").capacity(cpu="1", memory="1Gi", pods=110).manifest()
    big["status"]["allocatable"] = {
        "cpu": "9223372036854775807m",
        "memory": "9223372036854775807",
        "pods": "110",
    }
    h.apply(node("n1"))
    h.store.apply(big)
    h.store.apply_many(
        [_prebound(f"heavy-{i}", "n1", cpu="1", memory="7Ei") for i in range(3)]
        + [_prebound("half", "big", cpu="4611686018427387903m", memory="4Ei")]
    )
    h.apply(pod("a"), pod("b"), pod("c"))
    h.start()
    _schedule_all(h, 3)
    assert [h.node_of(f"default/{p}") for p in "abc"] == ["big", "big", "big"]
    assert h.coord.invalid_objects == []
    table = h.cache.sink.table
    row, mem = table.index["n1"], table.resource_col("memory")
    assert table.requested[mem, row] == 2**63 - 1  # saturated: 3 x 7Ei passes int64
    assert table.overflow.exact(0, mem, row) == 3 * 7 * 2**60


def test_garbage_in_the_event_stream_does_not_end_the_coordinator(
    h: Harness, redis_client: redis.Redis
) -> None:
    h.apply(node("n1"))
    h.start()
    redis_client.xadd(h.store.keys.events, {"type": "ADDED", "kind": "Pod"})
    redis_client.xadd(h.store.keys.events, {b"junk": GARBAGE})
    h.apply(pod("a"))
    _schedule_all(h, 1)
    assert h.node_of("default/a") == "n1"
    assert h.coord.informer.unreadable == 2
    assert h.coord.informer.relists == 0


def test_an_unreadable_write_in_the_stream_makes_the_informer_relist(
    h: Harness, redis_client: redis.Redis
) -> None:
    """A real write (it has the next resourceVersion) whose object cannot be read: the
    informer relists, so it holds the object as stored rather than a stale copy."""
    h.apply(node("n1"))
    h.start()
    rv = int(redis_client.incr(h.store.keys.rv))
    changed = make_node("n1").capacity(cpu="8", memory="32Gi", pods=110).manifest()
    h.store.apply(changed)  # the hash now holds the new node; its event follows ours
    fields = {"type": "MODIFIED", "kind": "Node", "key": "n1", "rv": str(rv), "obj": GARBAGE}
    redis_client.xadd(h.store.keys.events, fields)
    h.apply(pod("a", cpu="6"))
    _schedule_all(h, 1)
    assert h.coord.informer.relists >= 1
    assert h.node_of("default/a") == "n1"


def test_garbage_in_the_pod_hash_does_not_stop_a_new_coordinator(
    h: Harness, redis_client: redis.Redis
) -> None:
    h.apply(node("n1"), pod("a"))
    redis_client.hset(h.store.keys.obj("Pod"), "default/junk", GARBAGE)
    h.start()
    _schedule_all(h, 1)
    assert h.node_of("default/a") == "n1"
    (line,) = h.coord.invalid_objects
    assert "Pod default/junk" in line and "unreadable" in line
    assert h.coord.informer.unreadable == 1


def test_garbage_queue_record_does_not_crash_loop_a_restarting_coordinator(
    make_harness: Any, redis_client: redis.Redis
) -> None:
    """A coordinator died with a pod in flight whose queue record is now garbage: the
    next one starts (its start-up requeue moves the record aside), and its listing queues
    that pod afresh from the pod object, so every pod is scheduled."""
    first: Harness = make_harness()
    first.apply(node("n1"), pod("a"), pod("b"))
    first.start()
    popped = first.queue.pop(timeout=2.0)  # the coordinator "dies" mid-cycle
    assert popped is not None
    redis_client.hset(first.queue.keys.info, popped.pod_key, GARBAGE)
    first.close()

    second: Harness = make_harness()
    second.clock.step(1)
    second.start()
    _schedule_all(second, 2)
    assert [second.node_of(k) for k in ("default/a", "default/b")] == ["n1", "n1"]
    assert redis_client.hget(second.queue.keys.dead_letter, popped.pod_key) == GARBAGE
    assert second.queue.quarantined == 1
