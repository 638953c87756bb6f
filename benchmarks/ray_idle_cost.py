"""What a private Ray instance costs per second when the scheduler asks little of it.

Starts Ray as the scheduler does (``ensure_ray``: a private local instance), two actors
with no logical CPUs (as shard actors are) and a one-CPU task every ``--every`` seconds
(as binding tasks are sent), then reports the CPU each of Ray's processes took over
``--seconds``, in ms per second (the driver's own included). At ~1,500 pods/s (100,000
nodes on 2 cores), 1 ms/s is ~0.7 µs per pod. What it showed on this machine (load 2-20):
each Ray worker process ~6-7 ms/s idle (the core worker's 10 ms signal check), the raylet
~12-16, the GCS ~6-8, the log monitor ~8 with Ray's defaults and ~3.5 with
``ray_runtime.LOG_MONITOR_ENV``.

Run: PYTHONPATH=. .venv/bin/python benchmarks/ray_idle_cost.py [--seconds 20]
A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import time

import psutil
import ray

from workers.ray_runtime import ensure_ray


def _kind(proc: psutil.Process) -> str:
    cmd = " ".join(proc.cmdline())
    if cmd.startswith("ray::"):
        return cmd.split()[0]
    name = proc.name()
    for daemon in ("raylet", "gcs_server", "log_monitor", "dashboard", "monitor"):
        if daemon in name or f"{daemon}.py" in cmd or f"{daemon}.err" in cmd:
            return daemon
    return name


def _cpu(me: psutil.Process) -> dict[int, tuple[str, float]]:
    out = {}
    for proc in me.children(recursive=True):
        try:
            cpu = proc.cpu_times()
            out[proc.pid] = (_kind(proc), cpu.user + cpu.system)
        except psutil.Error:
            continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--every", type=float, default=0.17, help="seconds between two tasks")
    args = ap.parse_args()
    ensure_ray()

    @ray.remote(num_cpus=0)
    class ShardActor:
        def ping(self) -> int:
            return 1

    @ray.remote(num_cpus=1, max_retries=0)
    def bind_task(x: int) -> int:
        return x

    actors = [ShardActor.remote() for _ in range(2)]  # type: ignore[attr-defined]
    ray.get([a.ping.remote() for a in actors])
    ray.get([bind_task.remote(1) for _ in range(2)])
    time.sleep(5)  # start-up over
    me = psutil.Process()
    before, driver, t0 = _cpu(me), time.process_time(), time.time()
    while time.time() - t0 < args.seconds:
        ray.get(bind_task.remote(1))
        time.sleep(args.every)
    after, span = _cpu(me), time.time() - t0
    by_kind: dict[str, float] = {"driver": time.process_time() - driver}
    for pid, (kind, t1) in after.items():
        by_kind[kind] = by_kind.get(kind, 0.0) + t1 - before.get(pid, (kind, 0.0))[1]
    per_s = {k: round(v / span * 1e3, 1) for k, v in sorted(by_kind.items(), key=lambda x: -x[1])}
    print(json.dumps({"ms_per_s": per_s, "total": round(sum(per_s.values()), 1)}))
    ray.shutdown()


if __name__ == "__main__":
    main()
