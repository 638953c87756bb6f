"""CPU per pod of the scheduling loop's pop path: batches popped as the coordinator pops
them (``pop_many``), each carrying the previous batch's Done calls (``done_later``), on
a private redis-server. Prints, per round, this process's CPU and the redis-server's
CPU (from /proc, so Linux only) per pod: Redis shares the machine's cores with the
coordinator, so its time per pod counts as much as the loop's (issue 23).

Run: ``python benchmarks/pop_done_cpu.py [--pods 11000] [--batch 64] [--rounds 3]``;
for an older checkout, ``PYTHONPATH=<checkout> python benchmarks/pop_done_cpu.py``.
A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import time

from cluster_sched.queue import QueuedPodInfo, SchedulingQueue
from cluster_sched.redis_server import RedisServer, connect


def _server_cpu(pid: int) -> float:
    """utime + stime of process ``pid``, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=11_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with RedisServer(aof_rewrite=False) as server:  # as a run's private server
        queue = SchedulingQueue(connect(server.url), prefix="{cs}")
        now = queue.clock.now()
        infos = [
            QueuedPodInfo(f"default/measured-pod-{i}", 0, now + i * 1e-6) for i in range(args.pods)
        ]
        for _ in range(args.rounds):
            queue.add_many(infos)
            redis0, cpu0 = _server_cpu(server.pid), time.process_time()
            popped = 0
            while batch := queue.pop_many(args.batch, timeout=0):
                popped += len(batch)
                for p in batch:
                    queue.done_later(p.info.pod_key)
            queue.flush_done()
            cpu, redis = time.process_time() - cpu0, _server_cpu(server.pid) - redis0
            print(
                f"{popped} pods in batches of {args.batch}: client CPU "
                f"{1e6 * cpu / popped:.1f} us/pod, redis-server CPU {1e6 * redis / popped:.1f} us/pod"
            )
        queue.close()


if __name__ == "__main__":
    main()
