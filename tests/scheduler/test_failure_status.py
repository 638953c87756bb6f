"""The failure handler writes a failed pod's PodScheduled=False condition from the
informer's copy of the pod: a compare-and-set without reading the pod while that copy
is current; when the copy is stale (someone else wrote the pod after the informer last
saw it) the write loses, reads the stored pod and keeps that writer's change."""

from __future__ import annotations

import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config
from cluster_sched.scheduler.assembly import new_scheduler
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod


def _hmgets(client: redis.Redis) -> int:
    stats = client.info("commandstats").get("cmdstat_hmget") or {}
    return int(stats.get("calls", 0))


def _fail_once(client: redis.Redis, *, stale: bool) -> tuple[int, dict]:  # type: ignore[type-arg]
    """One failed attempt of a pod too big for the only node; the reads (HMGETs) it made
    and the stored pod after it. ``stale``: another client labels the pod first."""
    client.flushall()
    c = new_scheduler(Store(client), client, load_config(None), clock=FakeClock(1_000.0), seed=3)
    try:
        c.store.apply_many(
            [
                make_node("n1").capacity(cpu="1", memory="1Gi", pods=110).manifest(),
                make_pod("big").req(cpu="2").manifest(),
            ]
        )
        c.poll_informer()
        c.start()
        if stale:  # the informer has not seen this when the attempt fails
            c.store.apply(make_pod("big").req(cpu="2").label("team", "a").manifest())
        info = c.queue.pop(timeout=2.0)
        assert info is not None and info.pod_key == "default/big"
        reads = _hmgets(client)
        c.schedule_one(info, c.queue.last_pop_cycle)
        reads = _hmgets(client) - reads
        stored = c.store.get("Pod", "default/big")
        assert stored is not None
        (event,) = c.store.events(key="default/big", reason="FailedScheduling")
        (cond,) = [x for x in stored["status"]["conditions"] if x["type"] == "PodScheduled"]
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
        assert "Insufficient cpu" in cond["message"] and event["message"] == cond["message"]
        return reads, stored
    finally:
        c.close()


def test_the_failed_pods_status_is_written_from_the_informers_copy(
    redis_client: redis.Redis,
) -> None:
    current_reads, current = _fail_once(redis_client, stale=False)
    stale_reads, stale = _fail_once(redis_client, stale=True)
    # The same attempt, but for the pod's read after a lost compare-and-set.
    assert stale_reads == current_reads + 1
    assert stale["metadata"]["labels"] == {"team": "a"}
    assert current["metadata"].get("labels", {}) == {}
