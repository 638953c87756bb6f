"""What a binding task costs: CPU per task over every process (the driver, the raylet,
the GCS, the worker, Redis), and per job in the worker, for ``workers/ray_binding.py``'s
``BATCH_WAIT``.

A private Redis and a local Ray; the binding task (``bind_task``) sent ``--tasks`` times
with no jobs (the task's own cost), then with ``--jobs`` SchedulingBasic pods each (each
pod bound once), one every ``--gap`` seconds, half of them waited for at once; each
process's CPU time before and after (psutil), divided by the tasks (and by the jobs).
``--records``: the jobs as binding records (``RayBindingExecutor._lean``'s form: no
manifest, no CycleState) instead of whole jobs (their CycleState empty here; a real
cycle's is ~940 bytes, so whole jobs cost more than shown).
Run: PYTHONPATH=. .venv/bin/python benchmarks/ray_binding_bench.py [--tasks 300]
[--jobs 64] [--records]. A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import psutil

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.state_codec import encode_state, encode_value
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from workers.binding_task import remote_bind_task
from workers.ray_runtime import ensure_ray


def _cpu() -> dict[str, float]:
    me = psutil.Process()
    out: dict[str, float] = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            cmd = " ".join(proc.cmdline())
            name = "driver" if proc.pid == me.pid else proc.name()
            if cmd.startswith("ray::") and "Agent" not in cmd:
                name = "worker"
            t = proc.cpu_times()
            out[name] = out.get(name, 0.0) + t.user + t.system
        except psutil.Error:
            continue
    return out


def _round(send: Any, payloads: list[bytes], gap: float) -> dict[str, float]:
    import ray

    before = _cpu()
    for i, payload in enumerate(payloads):
        ref = send(payload)
        if i % 2:
            ray.get(ref)
        time.sleep(gap)
    time.sleep(1.0)
    after = _cpu()
    return {k: after[k] - before.get(k, 0.0) for k in after}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=64)
    ap.add_argument("--gap", type=float, default=0.01)
    ap.add_argument("--records", action="store_true", help="jobs as binding records")
    args = ap.parse_args()
    ensure_ray()
    import ray

    with RedisServer() as server:
        store = Store(connect(server.url))
        nodes = [make_node(f"n{i}").capacity(cpu="1000", memory="4Ti", pods=100_000) for i in range(10)]  # fmt: skip
        store.apply_many([n.manifest() for n in nodes])
        total = args.tasks * args.jobs
        store.apply_many([make_pod(f"p{i}").req(cpu="1m").manifest() for i in range(total)])
        fence = [store.fence.key, store.fence.token]
        remote = remote_bind_task()

        def send(payload: bytes) -> Any:
            return remote.remote(payload, server.url, store.keys.prefix, "")

        empty = encode_value({"config": b"", "jobs": [], "fence": fence})
        ray.get([send(empty) for _ in range(4)])  # workers warm
        time.sleep(2.0)
        idle = _round(send, [], 0.0)
        base = _round(send, [empty] * args.tasks, args.gap)
        payloads = []
        for t in range(args.tasks):
            wire, records = [], []
            for i in range(t * args.jobs, (t + 1) * args.jobs):
                pod = parse_object(store.get("Pod", f"default/p{i}"))
                assert isinstance(pod, Pod)
                if args.records:
                    records.append([pod.namespace, pod.name, pod.uid, f"n{i % 10}", "default-scheduler", dict(pod.requests), i, {}])  # fmt: skip
                else:
                    wire.append([pod.raw, f"n{i % 10}", "default-scheduler", encode_state(CycleState()), i, {}, False])  # fmt: skip
            payloads.append(encode_value({"config": b"", "jobs": wire, "records": records, "fence": fence}))  # fmt: skip
        full = _round(send, payloads, args.gap)
    seconds = args.tasks * args.gap + 1.0
    print(f"idle Ray over 1 s: {sum(idle.values()) * 1e3:.1f} ms CPU")
    print(f"empty task, CPU per task (ms), idle share ~{sum(idle.values()) * seconds / args.tasks * 1e3:.2f} included:")  # fmt: skip
    for k, v in sorted(base.items()):
        print(f"  {k}: {v / args.tasks * 1e3:.2f}")
    print(f"  all: {sum(base.values()) / args.tasks * 1e3:.2f}")
    extra = {k: full.get(k, 0.0) - base.get(k, 0.0) for k in full}
    print(f"{args.jobs} jobs a task, CPU per job beyond the empty task's (µs):")
    for k, v in sorted(extra.items()):
        print(f"  {k}: {v / total * 1e6:.1f}")
    print(f"  all: {sum(extra.values()) / total * 1e6:.1f}")


if __name__ == "__main__":
    main()
