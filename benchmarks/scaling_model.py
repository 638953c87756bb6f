"""A scaling model from measured parts: predicted pods/s at 1-64 shards for 5k, 100k and
1M nodes, validated against what 1 and 2 Ray shards measure on this machine.

Parts, each measured here in this run:
- ``t_kernel(W)`` / ``t_numpy(W)``: evaluating one pod over a window of W nodes with the
  compiled path's fused kernel / the numpy Filter + Score a shard runs, where
  W = numFeasibleNodesToFind(N) (500 at 5k nodes, 5,000 at 100k, 50,000 at 1M);
- ``t_attempt(S)``: one whole scheduling attempt through S real Ray shard actors holding
  the N nodes (``Scheduler.schedule_pod`` over ``ShardedSource``: PreFilter on the
  coordinator, the Filter call and the Score call to every shard with the pod, its
  CycleState and the previous pod's assume as a delta, the merge, host selection),
  median over many pods, for S = 1 and 2; ``t_attempt_local``: the same attempt on the
  coordinator's own table (numpy path);
- ``t_loop``: the coordinator's per-pod time outside the attempt (queue pop, binding,
  watch), from a measured in-process ``--no-compiled`` run: 1/throughput - t_attempt_local.

Model (per pod; the coordinator is serial and waits for the shards' answers):
- in-process / cost-based dispatch: 1 / (t_loop_c + t_kernel(W)) (compiled path);
- shards, per-pod protocol: 1 / (t_loop + t_fixed(S) + t_numpy(W / S) * max(1, S / C))
  with t_fixed(S) = a + b S the protocol's cost outside the shards' evaluation (fitted to
  t_attempt(1) and t_attempt(2) minus their evaluation), and C the cores shards can use
  (the coordinator is idle while it waits: all of them). Predictions at 4-64 shards
  assume one core per shard (C >= S).
Validation: the model's figure for 1 and 2 shards on this machine against full
``cluster-sched run --executor ray --shards S --no-compiled`` runs. A benchmark: it prints
figures and asserts nothing.

Run: PYTHONPATH=. .venv/bin/python benchmarks/scaling_model.py [--nodes 5000] [--pods 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.cache.cache import Cache
from cluster_sched.cli import main as cli_main
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.kernels import KernelProfile, PodQuery, PodRequests, evaluate_pod, warm_up
from cluster_sched.scheduler.algorithm import Scheduler, num_feasible_nodes_to_find
from cluster_sched.scheduler.nodesource import LocalSource, NodeSource
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.scheduler.shard_core import ShardCore
from cluster_sched.scheduler.sharding import ShardedSource, ShardRouter
from cluster_sched.testing.builders import make_pod

SIZES = (5_000, 100_000, 1_000_000)
SHARDS = (1, 2, 4, 16, 64)


def _node(i: int) -> Node:
    alloc = {CPU: 4000, MEMORY: 32 << 30, PODS: 110}
    return Node(
        ObjectMeta(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}),
        allocatable=alloc,
        capacity=alloc,
    )


def _timed(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def eval_times(window: int) -> tuple[float, float]:
    """(t_kernel, t_numpy) for one pod over ``window`` nodes, every node feasible."""
    core = ShardCore(0)
    core.apply([["node", _node(i), i] for i in range(window)])
    fwk = core.frameworks["default-scheduler"]
    pod = make_pod("p").req(cpu="100m", memory="500Mi").obj()
    rows = np.arange(window, dtype=np.int64)
    state = core.prepare_state("default-scheduler", pod, scoring=True, rows=rows)
    profile = KernelProfile.from_framework(fwk)
    assert profile is not None
    query = PodQuery(PodRequests.of_pod(pod, profile))
    warm_up()
    t_kernel = _timed(lambda: evaluate_pod(core.table, profile, query, window, rows), 50)
    t_numpy = _timed(
        lambda: (
            core.filter("default-scheduler", pod, state, rows),
            core.score("default-scheduler", pod, state, rows),
        ),
        20,
    )
    return t_kernel, t_numpy


def attempt_time(nodes: int, shards: int, pods: int = 300) -> float:
    """Median seconds of one whole attempt (numpy path) over ``nodes`` nodes held by
    ``shards`` Ray shard actors (0: the coordinator's own table), each pod assumed before
    the next, so every shard call also carries the previous assume as a delta."""
    router = ShardRouter(max(1, shards))
    cache = Cache(router)
    for i in range(nodes):
        cache.add_node(_node(i))
    clients = []
    if shards:
        from workers.ray_shard import ray_shard_clients

        clients = ray_shard_clients(shards)
        source: NodeSource = ShardedSource(router, list(clients))  # type: ignore[arg-type]
    else:
        source = LocalSource(router.table)
    profile = default_config().profiles[0]
    handle = Handle(profile_name=profile.scheduler_name, rng=random.Random(0))
    handle.snapshot = cache.snapshot
    fwk = new_framework(profile, handle)
    sched = Scheduler(0, random.Random(7))
    times = []
    try:
        for i in range(pods + 20):  # the first 20 load the shards and warm up
            pod = make_pod(f"p{i}").req(cpu="100m", memory="500Mi").obj()
            start = time.perf_counter()
            res = sched.schedule_pod(
                fwk, CycleState(), pod, router.table, cache.snapshot, None, source
            )
            times.append(time.perf_counter() - start)
            host = res.suggested_host
            cache.assume_pod(replace(pod, node_name=host), host)
    finally:
        for c in clients:
            c.close()
    return statistics.median(times[20:])


def _workload(nodes: int, pods: int, path: Path) -> Path:
    path.write_text(
        f"""apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {{name: scaling-{nodes}}}
spec:
  nodeGroups:
  - count: {nodes}
    template:
      apiVersion: v1
      kind: Node
      metadata: {{name: node}}
      status:
        allocatable: {{cpu: "4", memory: 32Gi, pods: "110"}}
        capacity: {{cpu: "4", memory: 32Gi, pods: "110"}}
  podGroups:
  - name: measured
    count: {pods}
    template:
      apiVersion: v1
      kind: Pod
      metadata: {{name: pod, namespace: default}}
      spec:
        containers:
        - name: c
          image: registry.k8s.io/pause:3.10
          resources: {{requests: {{cpu: 100m, memory: 500Mi}}}}
"""
    )
    return path


def measured(workload: Path, *extra: str) -> float:
    """pods/s (first pop to last bind) of one ``cluster-sched run``."""
    with tempfile.TemporaryDirectory() as out:
        argv = ["run", str(workload), "--output", out, "--quiet", "--no-report", "--seed", "1"]
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main([*argv, *extra])
        if rc != 0:
            raise SystemExit(f"cluster-sched run exited {rc}")
        return float(json.loads((Path(out) / "summary.json").read_text())["throughput"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000, help="nodes of the validation runs")
    ap.add_argument("--pods", type=int, default=2000, help="pods of the validation runs")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    windows = {n: num_feasible_nodes_to_find(0, n) for n in (*SIZES, args.nodes)}
    evals = {w: eval_times(w) for w in sorted(set(windows.values()))}
    for w, (k, n) in evals.items():
        print(f"window {w:>6} nodes: compiled {k * 1e6:8.1f} us/pod, numpy {n * 1e6:8.1f} us/pod")
    w0 = windows[args.nodes]
    t_local = attempt_time(args.nodes, 0)
    t_att = {s: attempt_time(args.nodes, s) for s in (1, 2)}
    # the protocol's cost outside the shards' evaluation, per shard count
    fixed = {s: t_att[s] - evals[w0][1] / s * max(1.0, s / cores) for s in (1, 2)}
    b = fixed[2] - fixed[1]
    a = fixed[1] - b
    print(
        f"attempt at {args.nodes} nodes (numpy path): local {t_local * 1e6:.0f} us, "
        f"1 Ray shard {t_att[1] * 1e6:.0f} us, 2 Ray shards {t_att[2] * 1e6:.0f} us; "
        f"protocol cost outside evaluation t_fixed(S) = {a * 1e6:.0f} + {b * 1e6:.0f} S us"
    )
    with tempfile.TemporaryDirectory() as tmp:
        wl = _workload(args.nodes, args.pods, Path(tmp) / "w.yaml")
        local_c = measured(wl)
        local_n = measured(wl, "--no-compiled")
        ray = {
            s: measured(wl, "--executor", "ray", "--shards", str(s), "--no-compiled")
            for s in (1, 2)
        }
        ray_dispatch = measured(wl, "--executor", "ray", "--shards", "2")
    t_loop_c = max(1.0 / local_c - evals[w0][0], 0.0)
    t_loop_n = max(1.0 / local_n - t_local, 0.0)
    print(
        f"\nmeasured at {args.nodes} nodes / {args.pods} pods: in-process {local_c:.0f} pods/s "
        f"(numpy path {local_n:.0f}); t_loop compiled {t_loop_c * 1e6:.0f} us, "
        f"numpy {t_loop_n * 1e6:.0f} us"
    )

    def per_pod(n: int, s: int, c: int) -> float:
        return 1.0 / (t_loop_n + a + b * s + evals[windows[n]][1] / s * max(1.0, s / c))

    print(f"\nvalidation (Ray, per-pod protocol, --no-compiled; C = {cores} cores):")
    for s in (1, 2):
        pred = per_pod(args.nodes, s, cores)
        print(
            f"  {s} shard(s): measured {ray[s]:.0f} pods/s, predicted {pred:.0f} ({ray[s] / pred:.2f}x)"
        )
    pred_dispatch = 1.0 / (t_loop_c + evals[w0][0])
    print(
        f"  2 shards, cost-based dispatch: measured {ray_dispatch:.0f} pods/s, "
        f"predicted {pred_dispatch:.0f} ({ray_dispatch / pred_dispatch:.2f}x)"
    )

    print("\npredicted pods/s (one core per shard):")
    print(
        "| nodes | window | in-process / dispatch | "
        + " | ".join(f"{s} shards per-pod" for s in SHARDS)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(SHARDS))
    for n in SIZES:
        inproc = 1.0 / (t_loop_c + evals[windows[n]][0])
        cells = " | ".join(f"{per_pod(n, s, s):,.0f}" for s in SHARDS)
        print(f"| {n:,} | {windows[n]:,} | {inproc:,.0f} | {cells} |")


if __name__ == "__main__":
    main()
