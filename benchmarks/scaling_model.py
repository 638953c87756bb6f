"""A scaling model from measured parts: predicted pods/s at 1-64 shards for 5k, 100k and
1M nodes, validated against what 1 and 2 Ray shards measure on this machine.

Parts, each measured here in this run:
- ``t_rt``: one Ray shard-actor call (an empty delta batch), median of 200;
- ``t_kernel(W)``: the compiled path's evaluation of one pod over a window of W nodes
  (``kernels.evaluate_pod``), and ``t_numpy(W)``: the numpy Filter + Score a shard runs
  over W rows (``ShardCore.filter`` + ``score``), where W = numFeasibleNodesToFind(N)
  (500 at 5k nodes, 5,000 at 100k, 50,000 at 1M);
- ``t_serial``: the coordinator's per-pod time outside Filter/Score, from a measured
  in-process run: 1/throughput - t_eval(W), for the compiled and the numpy path.

Model (per pod, the coordinator is serial; shards evaluate their part of the window in
parallel, one core each):
- in-process:                  t_serial_c + t_kernel(W)
- shards, per-pod protocol:    t_serial_n + 2 t_rt + t_numpy(W) / S   (Filter and Score
  calls per pod: the attempts the compiled path declines, and ``--no-compiled``)
- shards, cost-based dispatch: as in-process for the pods the compiled path answers on
  the replica (Deployment-like pods); the shards then only receive deltas.
The per-pod protocol is validated against measured Ray runs with 1 and 2 shards
(``--no-compiled``). A benchmark: it prints figures and asserts nothing.

Run: PYTHONPATH=. .venv/bin/python benchmarks/scaling_model.py [--nodes 5000] [--pods 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.cli import main as cli_main
from cluster_sched.kernels import KernelProfile, PodQuery, PodRequests, evaluate_pod, warm_up
from cluster_sched.scheduler.algorithm import num_feasible_nodes_to_find
from cluster_sched.scheduler.shard_core import ShardCore
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


def round_trip() -> float:
    """Median seconds of one call to a Ray shard actor (an empty delta batch)."""
    from workers.ray_shard import ray_shard_clients

    (client,) = ray_shard_clients(1)
    try:
        for _ in range(20):
            client.submit_apply([]).result()
        return _timed(lambda: client.submit_apply([]).result(), 200)
    finally:
        client.close()


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
    windows = {n: num_feasible_nodes_to_find(0, n) for n in (*SIZES, args.nodes)}
    evals = {w: eval_times(w) for w in sorted(set(windows.values()))}
    t_rt = round_trip()
    print(f"Ray shard call round trip: {t_rt * 1e3:.2f} ms")
    for w, (k, n) in evals.items():
        print(f"window {w:>6} nodes: compiled {k * 1e6:8.1f} us/pod, numpy {n * 1e6:8.1f} us/pod")
    with tempfile.TemporaryDirectory() as tmp:
        wl = _workload(args.nodes, args.pods, Path(tmp) / "w.yaml")
        local_c = measured(wl)
        local_n = measured(wl, "--no-compiled")
        ray = {
            s: measured(wl, "--executor", "ray", "--shards", str(s), "--no-compiled")
            for s in (1, 2)
        }
        ray_dispatch = measured(wl, "--executor", "ray", "--shards", "2")
    w0 = windows[args.nodes]
    t_serial_c = max(1.0 / local_c - evals[w0][0], 0.0)
    t_serial_n = max(1.0 / local_n - evals[w0][1], 0.0)
    print(
        f"\nmeasured at {args.nodes} nodes / {args.pods} pods: in-process {local_c:.0f} pods/s "
        f"(numpy path {local_n:.0f}); t_serial compiled {t_serial_c * 1e6:.0f} us, "
        f"numpy {t_serial_n * 1e6:.0f} us"
    )

    def per_pod(n: int, s: int) -> float:
        return 1.0 / (t_serial_n + 2 * t_rt + evals[windows[n]][1] / s)

    print("\nvalidation (Ray, per-pod protocol, --no-compiled):")
    for s in (1, 2):
        pred = per_pod(args.nodes, s)
        print(
            f"  {s} shard(s): measured {ray[s]:.0f} pods/s, predicted {pred:.0f} ({ray[s] / pred:.2f}x)"
        )
    pred_dispatch = 1.0 / (t_serial_c + evals[w0][0])
    print(
        f"  2 shards, cost-based dispatch: measured {ray_dispatch:.0f} pods/s, predicted {pred_dispatch:.0f}"
    )

    print("\npredicted pods/s (one core per shard):")
    print(
        "| nodes | window | in-process / dispatch | "
        + " | ".join(f"{s} shards per-pod" for s in SHARDS)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(SHARDS))
    for n in SIZES:
        inproc = 1.0 / (t_serial_c + evals[windows[n]][0])
        cells = " | ".join(f"{per_pod(n, s):,.0f}" for s in SHARDS)
        print(f"| {n:,} | {windows[n]:,} | {inproc:,.0f} | {cells} |")


if __name__ == "__main__":
    main()
