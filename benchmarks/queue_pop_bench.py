"""Pop cost per pod: one pod per round trip (``pop``) vs a batch (``pop_many``).

Run: ``python benchmarks/queue_pop_bench.py [--pods 20000] [--batch 64] [--redis URL]``.
Without ``--redis`` a private redis-server is started. Prints microseconds per pod for
``pop``, ``pop_many(batch)``, and the failure path: ``add_unschedulable_if_not_present``
per pod vs ``add_unschedulable_if_not_present_many`` per batch.
"""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import replace

from cluster_sched.queue import Popped, QueuedPodInfo, SchedulingQueue
from cluster_sched.redis_server import RedisServer, connect


def _fill(queue: SchedulingQueue, pods: int) -> None:
    now = queue.clock.now()
    queue.add_many(
        [QueuedPodInfo(f"ns-{i % 10}/pod-{i}", i % 3, now + i * 1e-6) for i in range(pods)]
    )


def _per_pod_us(seconds: float, pods: int) -> float:
    return seconds / pods * 1e6


def run(url: str, pods: int, batch: int) -> None:
    client = connect(url)
    single = SchedulingQueue(client, prefix=f"{{bench{uuid.uuid4().hex}}}")
    many = SchedulingQueue(client, prefix=f"{{bench{uuid.uuid4().hex}}}")
    _fill(single, pods)
    _fill(many, pods)

    t0 = time.perf_counter()
    popped_single: list[Popped] = []
    while (info := single.pop(timeout=0)) is not None:
        popped_single.append(Popped(info, single.last_pop_cycle))
    t1 = time.perf_counter()
    popped_many: list[Popped] = []
    while chunk := many.pop_many(batch, timeout=0):
        popped_many += chunk
    t2 = time.perf_counter()
    assert [p.info.pod_key for p in popped_single] == [p.info.pod_key for p in popped_many]

    rejected = frozenset({"NodeResourcesFit"})
    failed_single = [
        Popped(replace(p.info, unschedulable_plugins=rejected), p.cycle) for p in popped_single
    ]
    failed_many = [
        Popped(replace(p.info, unschedulable_plugins=rejected), p.cycle) for p in popped_many
    ]
    t3 = time.perf_counter()
    for info, cycle in failed_single:
        single.add_unschedulable_if_not_present(info, cycle)
    t4 = time.perf_counter()
    for start in range(0, len(failed_many), batch):
        many.add_unschedulable_if_not_present_many(failed_many[start : start + batch])
    t5 = time.perf_counter()

    print(f"pods: {pods}, batch: {batch}")
    print(f"pop:                                {_per_pod_us(t1 - t0, pods):8.1f} us/pod")
    print(f"pop_many({batch}):                       {_per_pod_us(t2 - t1, pods):8.1f} us/pod")
    print(f"add_unschedulable_if_not_present:   {_per_pod_us(t4 - t3, pods):8.1f} us/pod")
    print(f"add_unschedulable_..._many({batch}):     {_per_pod_us(t5 - t4, pods):8.1f} us/pod")
    for queue in (single, many):
        queue.close()
        client.delete(*queue.keys.core)
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--redis", default=None, help="Redis URL (default: a private server)")
    args = parser.parse_args()
    if args.redis:
        run(args.redis, args.pods, args.batch)
        return
    with RedisServer() as server:
        run(server.url, args.pods, args.batch)


if __name__ == "__main__":
    main()
