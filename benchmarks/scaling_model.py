"""A scaling model from measured parts: predicted pods/s at 1-64 shards for 5k, 100k and
1M nodes, validated against what 1 and 2 Ray shards measure on this machine.

Parts, each measured here in this run:
- ``t_kernel(W)`` / ``t_numpy(W)``: evaluating one pod over a window of W nodes with the
  compiled path's fused kernel / the numpy Filter + Score a shard runs, where
  W = numFeasibleNodesToFind(N) (500 at 5k nodes, 5,000 at 100k, 50,000 at 1M);
- ``t_attempt(P, S)``: whole scheduling attempts per pod through S real Ray shard actors
  holding the N nodes, each pod assumed before the next, for both shard protocols P:
  *per-pod* (one Filter call per pod, carrying speculative scores, plus a Score call
  when they cannot serve) and *batched* (``shard_prefetch``: a batch's first Filter
  questions answered in one call per 16 pods per shard, verified per pod), for S = 1
  and 2; ``t_attempt_local``: the same attempts on the coordinator's table (numpy path);
- ``t_loop``: the coordinator's per-pod time outside the attempt (queue pop, binding,
  watch): in-process from a measured ``run`` (1/throughput - t_kernel(W)); for the Ray
  executor (binding cycles as Ray tasks, Ray's daemons sharing the cores) from a
  measured ``--executor ray --shards 2`` run whose attempts the compiled path answers
  on the replica (cost-based dispatch), the same way.

Model (per pod; the coordinator is serial):
- in-process / cost-based dispatch: 1 / (t_loop_c + t_kernel(W)) (compiled path);
- shards, protocol P: 1 / (t_loop_ray + a_P + b_P S + t_numpy(W / S) * max(1, S / C)), where
  a_P + b_P S is the protocol's cost outside the shards' evaluation (fitted to
  t_attempt(P, 1) and t_attempt(P, 2) minus their evaluation) and C the cores the shards
  can use (here: all of them). Predictions at 4-64 shards assume one core per shard.
Validation: the model's figures for 1 and 2 shards against full ``cluster-sched run
--executor ray --shards S --no-compiled --batch-size 64`` runs, ``--no-shard-prefetch``
for the per-pod protocol (the same popped batches: the loop around the attempt is the
dispatch run's). Parts and full runs are measured in rounds, back to back, and each
round's prediction is compared with that round's runs (this machine's speed drifts by
tens of percent between minutes); the table uses the rounds' median parts. A benchmark:
it prints figures and asserts nothing.

Run: PYTHONPATH=. .venv/bin/python benchmarks/scaling_model.py [--nodes 5000] [--pods 2000]
[--rounds 3]
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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.cache.cache import Cache
from cluster_sched.cli import main as cli_main
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.kernels import KernelProfile, PodQuery, PodRequests, evaluate_pod, warm_up
from cluster_sched.scheduler.algorithm import Scheduler, num_feasible_nodes_to_find
from cluster_sched.scheduler.nodesource import LocalSource
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.source import ShardedSource, ShardRouter
from cluster_sched.testing.builders import make_pod
from cluster_sched.testing.workload_file import write_basic_workload

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
    """The fastest of ``repeat`` calls: pure computation, so slower calls measured
    interference (timeit's convention)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


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


def attempt_time(nodes: int, shards: int, batch: int = 1, pods: int = 640) -> float:
    """Seconds per pod of whole attempts (numpy path) over ``nodes`` nodes held by
    ``shards`` Ray shard actors (0: the coordinator's own table), each pod assumed before
    the next. ``batch`` > 1: pods go in batches whose first Filter questions the shards
    answer in one call each (``shard_prefetch``); 1: the per-pod protocol (one Filter
    call per pod, with speculative scores). The first batch warms up and is not timed;
    the figure is the median over groups of at least 32 pods of their mean (two cores
    shared with Ray's daemons make single groups slow now and then)."""
    router = ShardRouter(max(1, shards))
    cache = Cache(router)
    for i in range(nodes):
        cache.add_node(_node(i))
    clients = []
    if shards:
        from workers.ray_shard import ray_shard_clients

        clients = ray_shard_clients(shards)
        source: Any = ShardedSource(router, list(clients))  # type: ignore[arg-type]
    else:
        source = LocalSource(router.table)
    profile = default_config().profiles[0]
    handle = Handle(profile_name=profile.scheduler_name, rng=random.Random(0))
    handle.snapshot = cache.snapshot
    fwk = new_framework(profile, handle)
    sched = Scheduler(0, random.Random(7))
    size = max(1, batch)
    chunks = [
        [make_pod(f"p{i}-{j}").req(cpu="100m", memory="500Mi").obj() for j in range(size)]
        for i in range(max(2, pods // size + 1))
    ]
    group = max(size, 32)
    groups: list[float] = []
    timed, counted = 0.0, 0
    try:
        for k, chunk in enumerate(chunks):
            start = time.perf_counter()
            if size > 1 and shards:
                source.prefetch_batch(
                    {fwk.profile_name: fwk},
                    chunk,
                    cache.snapshot,
                    sched.next_start_node_index,
                    sched.percentage_of_nodes_to_score,
                    False,
                )
            for pod in chunk:
                res = sched.schedule_pod(
                    fwk, CycleState(), pod, router.table, cache.snapshot, None, source
                )
                host = res.suggested_host
                assert host is not None, "every node fits these pods"
                cache.assume_pod(replace(pod, node_name=host), host)
            if size > 1 and shards:
                source.end_batch()
            if k:
                timed += time.perf_counter() - start
                counted += size
                if counted >= group:
                    groups.append(timed / counted)
                    timed, counted = 0.0, 0
    finally:
        for c in clients:
            c.close()
    return statistics.median(groups)


def measured(workload: Path, *extra: str) -> float:
    """pods/s (first pop to last bind) of one ``cluster-sched run``."""
    with tempfile.TemporaryDirectory() as out:
        argv = ["run", str(workload), "--output", out, "--quiet", "--no-report", "--seed", "1"]
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main([*argv, *extra])
        if rc != 0:
            raise SystemExit(f"cluster-sched run exited {rc}")
        return float(json.loads((Path(out) / "summary.json").read_text())["throughput"])


def ray_args(shards: int) -> list[str]:
    """Every attempt to the shards (the compiled path would answer these pods itself)."""
    return ["--executor", "ray", "--shards", str(shards), "--no-compiled"]


PROTOCOL_FLAG = {"per-pod": "--no-shard-prefetch", "batched": "--shard-prefetch"}


@dataclass
class Round:
    """One round's parts and full runs, measured back to back: this machine's speed
    drifts between minutes (Ray's daemons, neighbours), so a prediction is compared with
    the runs of its own round."""

    t_local: float
    t_att: dict[tuple[str, int], float]
    fit: dict[str, tuple[float, float]]
    local_c: float
    ray: dict[tuple[str, int], float]
    dispatch: float
    t_loop_c: float
    t_loop_r: float


def measure_round(
    wl: Path, nodes: int, protocols: dict[str, int], evals: tuple[float, float], cores: int
) -> Round:
    t_kernel, t_numpy = evals
    t_local = attempt_time(nodes, 0)
    t_att = {(p, s): attempt_time(nodes, s, b) for p, b in protocols.items() for s in (1, 2)}
    # per protocol, its cost outside the shards' evaluation: t_fixed(S) = a + b S
    fit: dict[str, tuple[float, float]] = {}
    for p in protocols:
        fixed = {s: t_att[p, s] - t_numpy / s * max(1.0, s / cores) for s in (1, 2)}
        fit[p] = (2 * fixed[1] - fixed[2], fixed[2] - fixed[1])
    local_c = measured(wl)
    # Both protocols under the same popped batches, so the loop outside the attempt is
    # the one the dispatch run measures; only how the shards are asked differs.
    batch = ("--batch-size", str(max(protocols.values())))
    ray = {
        (p, s): measured(wl, *ray_args(s), *batch, PROTOCOL_FLAG[p])
        for p in protocols
        for s in (1, 2)
    }
    # The Ray executor's loop (binding as Ray tasks, Ray's daemons on the same cores),
    # from the dispatch run, whose attempts are the compiled path's on the replica.
    dispatch = measured(wl, "--executor", "ray", "--shards", "2", *batch)
    t_loop_c = max(1.0 / local_c - t_kernel, 0.0)
    t_loop_r = max(1.0 / dispatch - t_kernel, 0.0)
    return Round(t_local, t_att, fit, local_c, ray, dispatch, t_loop_c, t_loop_r)


def predicted_rate(
    t_loop_r: float, fit: tuple[float, float], t_numpy: float, shards: int, cores: int
) -> float:
    a, b = fit
    return 1.0 / (t_loop_r + a + b * shards + t_numpy / shards * max(1.0, shards / cores))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000, help="nodes of the validation runs")
    ap.add_argument("--pods", type=int, default=2000, help="pods of the validation runs")
    ap.add_argument("--batch", type=int, default=64, help="batch size (run's --batch-size)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of parts + full runs")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    windows = {n: num_feasible_nodes_to_find(0, n) for n in (*SIZES, args.nodes)}
    evals = {w: eval_times(w) for w in sorted(set(windows.values()))}
    for w, (k, n) in evals.items():
        print(f"window {w:>6} nodes: compiled {k * 1e6:8.1f} us/pod, numpy {n * 1e6:8.1f} us/pod")
    w0 = windows[args.nodes]
    protocols = {"per-pod": 1, "batched": args.batch}
    rounds: list[Round] = []
    ratios: dict[tuple[str, int], list[float]] = {(p, s): [] for p in protocols for s in (1, 2)}
    with tempfile.TemporaryDirectory() as tmp:
        wl = write_basic_workload(Path(tmp) / "w.yaml", args.nodes, args.pods)
        for k in range(args.rounds):
            r = measure_round(wl, args.nodes, protocols, evals[w0], cores)
            rounds.append(r)
            print(
                f"\nround {k + 1}: attempt at {args.nodes} nodes (numpy path) local "
                f"{r.t_local * 1e6:.0f} us; in-process {r.local_c:.0f} pods/s, Ray 2 shards "
                f"with dispatch {r.dispatch:.0f} ({r.dispatch / r.local_c:.2f}x); t_loop "
                f"compiled {r.t_loop_c * 1e6:.0f} us, Ray executor {r.t_loop_r * 1e6:.0f} us"
            )
            for p in protocols:
                a, b = r.fit[p]
                print(
                    f"  {p}: attempt 1 / 2 Ray shards {r.t_att[p, 1] * 1e6:.0f} / "
                    f"{r.t_att[p, 2] * 1e6:.0f} us, t_fixed(S) = {a * 1e6:.0f} + {b * 1e6:.0f} S us"
                )
                for s in (1, 2):
                    pred = predicted_rate(r.t_loop_r, r.fit[p], evals[w0][1], s, cores)
                    ratios[p, s].append(r.ray[p, s] / pred)
                    print(
                        f"    {s} shard(s) (--no-compiled): measured {r.ray[p, s]:.0f} pods/s, "
                        f"predicted {pred:.0f} ({r.ray[p, s] / pred:.2f}x)"
                    )
    print(f"\nvalidation, measured / predicted over {args.rounds} rounds (C = {cores} cores):")
    for (p, s), got in ratios.items():
        print(
            f"  {p}, {s} shard(s): median {statistics.median(got):.2f}x "
            f"(range {min(got):.2f}-{max(got):.2f}x)"
        )

    t_loop_c = statistics.median([r.t_loop_c for r in rounds])
    t_loop_r = statistics.median([r.t_loop_r for r in rounds])
    fit = {
        p: (
            statistics.median([r.fit[p][0] for r in rounds]),
            statistics.median([r.fit[p][1] for r in rounds]),
        )
        for p in protocols
    }
    print("\npredicted pods/s (one core per shard; the rounds' median parts):")
    cols = [(p, s) for p in protocols for s in SHARDS]
    print(
        "| nodes | window | in-process / dispatch | "
        + " | ".join(f"{s} {p}" for p, s in cols)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(cols))
    for n in SIZES:
        inproc = 1.0 / (t_loop_c + evals[windows[n]][0])
        cells = " | ".join(
            f"{predicted_rate(t_loop_r, fit[p], evals[windows[n]][1], s, s):,.0f}" for p, s in cols
        )
        print(f"| {n:,} | {windows[n]:,} | {inproc:,.0f} | {cells} |")


if __name__ == "__main__":
    main()
