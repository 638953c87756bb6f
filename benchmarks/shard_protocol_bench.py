"""What a shard costs the coordinator, per pod, by protocol and shard count; the reduced
protocol's scaling model from those parts, validated against full runs.

Parts, measured here (real Ray shard actors holding the nodes, each pod assumed before
the next, batches of 64 pods; the first batch warms up and is not timed; every part's
coordinator set up at once and their batches run in turn, so the machine's load drifts
alike for each shard count, ``--sequential``: one part after the other as before):

- ``coordinator CPU per pod``: the coordinator process's CPU time (``time.process_time``:
  the shards are other processes) per whole attempt, for the compiled path on the
  coordinator's replica, the batched protocol (``shard_prefetch``, the numpy path:
  per shard, the batch encoded and every row's Filter answer and scores decoded and
  merged) and the reduced protocol (``shard_merge``: one payload for every shard,
  reductions back), at 1 and 2 shards: the cost per extra shard is the difference;
  and the reduced protocol through the shard relay (``relay``, ``workers.ray_relay``:
  one call per chunk for every shard), at 1, 2 and 3 shards, with the relay process's
  own CPU per pod (its ``cpu_seconds`` read around the timed batches);
- ``shard busy per pod``: the reduced protocol's evaluation time per pod in each shard
  (the actors report it), at 1 and 2 shards, fitted as ``f + g * W / S`` (W the window);
- ``loop``: the coordinator's time per pod outside the attempt, from a full
  ``cluster-sched run --executor ray --shard-dispatch replica`` (1 / pods/s minus the
  compiled attempt).

``--calls N``: the calls alone, N chunks of 64 pods' questions per protocol and shard
count (1-3) in turn, each shard holding ``--nodes``, no scheduling loop around them: the
coordinator's process CPU and main-thread CPU per chunk (share, submit, wait, decode,
merge) and the relay process's CPU per chunk. Without the loop's ~250 µs per pod of
its own (and its noise) the cost per extra shard stands out: a round of the whole
attempts gives it within ±10 µs per pod, this within ~1.

Model (the coordinator and the shards overlap: the batch's chunks are all in flight):
pods/s(S) = 1 / max(loop + a + b*S, f + g*W/S), with a + b*S the reduced protocol's
coordinator CPU per pod (fitted to S = 1, 2); the first term alone is the coordinator's
serial bound, printed beside. Predictions at 4-64 shards assume one core per shard.
Validation (``--validate``): the model at 1 and 2 shards against full runs with
``--shard-dispatch shards`` on the same workload. A benchmark: it prints, asserts nothing.

Run: PYTHONPATH=. .venv/bin/python benchmarks/shard_protocol_bench.py [--nodes 20000]
[--validate] [--pods 3000] [--attempt-pods 640] [--sequential] [--no-relay]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.kernels import warm_up
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.nodesource import LocalSource
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from cluster_sched.scheduler.shards.source import ShardedSource, ShardRouter
from cluster_sched.testing.builders import make_pod
from cluster_sched.testing.workload_file import write_basic_workload

SHARDS = (1, 2, 4, 16, 64)
#: the reduced protocol's coordinators: direct calls, and through the shard relay
REDUCED = ("reduced", "relay")
SIZES = (100_000, 1_000_000)


def _node(i: int) -> Node:
    alloc = {CPU: 4000, MEMORY: 32 << 30, PODS: 110}
    labels = {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}"}
    return Node(ObjectMeta(f"n{i}", labels=labels), allocatable=alloc, capacity=alloc)


class _Setup:
    """One coordinator's state for the parts' runs: a cache of ``nodes`` nodes, its
    source (``shards`` Ray shard actors, or the replica alone), a scheduler and the
    batches of 64 pods it schedules (each pod assumed before the next)."""

    def __init__(self, nodes: int, shards: int, protocol: str, pods: int) -> None:
        self.shards, self.protocol = shards, protocol
        self.router = ShardRouter(max(1, shards))
        self.cache = Cache(self.router)
        for i in range(nodes):
            self.cache.add_node(_node(i))
        self.clients: list[Any] = []
        self.relay: Any = None
        #: the relay's (process CPU, CPU in its calls, wall) at the first timed batch
        self.relay_cpu: list[tuple[float, float, float]] = []
        self.relay_idle = 0.0
        if shards:
            from workers.ray_shard import ray_shard_clients

            self.clients = list(ray_shard_clients(shards, relay=protocol == "relay"))
            self.relay = self.clients[0].relay
            self.source: Any = ShardedSource(
                self.router,
                self.clients,
                dispatch=DispatchRule("shards", relay="on" if protocol == "relay" else "off"),
            )
        else:
            self.source = LocalSource(self.router.table)
        profile = default_config().profiles[0]
        handle = Handle(profile_name=profile.scheduler_name, rng=random.Random(0))
        handle.snapshot = self.cache.snapshot
        self.fwk = new_framework(profile, handle)
        self.fast = FastPath(share_pre_cycle=True) if protocol in (*REDUCED, "replica") else None
        self.sched = Scheduler(0, random.Random(7), fast=self.fast)
        self.frameworks = {self.fwk.profile_name: self.fwk}
        self.batches = [
            [make_pod(f"p{i}-{j}").req(cpu="100m", memory="500Mi").obj() for j in range(64)]
            for i in range(pods // 64 + 1)
        ]
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.threads: list[float] = []

    def step(self, k: int) -> None:
        """Schedule batch ``k`` (timed per pod unless it is the first: warm-up)."""
        batch, cache, sched, source = self.batches[k], self.cache, self.sched, self.source
        if k == 1 and self.relay is not None:  # its idle rate (Ray's threads), then start
            idle = self.relay.cpu_seconds()[0], time.perf_counter()
            time.sleep(1.0)
            self.relay_cpu = [(*self.relay.cpu_seconds(), time.perf_counter())]
            self.relay_idle = (self.relay_cpu[0][0] - idle[0]) / (self.relay_cpu[0][2] - idle[1])
        wall, cpu, thread = time.perf_counter(), time.process_time(), time.thread_time()
        args = (cache.snapshot, sched.next_start_node_index, 0)
        if self.protocol == "batched":
            source.prefetch_batch(self.frameworks, batch, *args, False)
        elif self.protocol in REDUCED:
            pre_cycle = self.fast.pre_cycle if self.fast else None
            source.reduce_batch(self.frameworks, batch, *args, len(batch), pre_cycle)
        for pod in batch:
            res = sched.schedule_pod(self.fwk, CycleState(), pod, self.router.table, cache.snapshot, None, source)  # fmt: skip
            host = res.suggested_host
            assert host is not None, "every node fits these pods"
            cache.assume_pod(replace(pod, node_name=host), host)
        if self.shards:
            source.end_batch()
        if k:
            self.walls.append((time.perf_counter() - wall) / len(batch))
            self.cpus.append((time.process_time() - cpu) / len(batch))
            self.threads.append((time.thread_time() - thread) / len(batch))

    def result(self) -> dict[str, float]:
        out = {
            "wall": statistics.median(self.walls),
            "cpu": statistics.median(self.cpus),
            "thread": statistics.median(self.threads),
        }
        if self.protocol in REDUCED:
            b = self.source.reduced.batch
            out["busy"] = b.busy / max(1, b.pods_sent) / max(1, self.shards)
            out["answered"] = b.hits / max(1, b.pods_sent)
        if self.relay is not None and self.relay_cpu:
            timed = sum(len(b) for b in self.batches[1:])
            (whole, in_calls), (whole0, in_calls0, wall0) = self.relay.cpu_seconds(), self.relay_cpu[0]  # fmt: skip
            # the relay process's CPU less its idle rate while the other coordinators ran
            # (interleaved, it idles most of the span: ~8 ms/s of Ray's threads here)
            others = time.perf_counter() - wall0 - sum(self.walls) * len(self.batches[0])
            out["relay_cpu"] = (whole - whole0 - self.relay_idle * max(0.0, others)) / timed
            out["relay_whole_cpu"] = (whole - whole0) / timed
            out["relay_call_cpu"] = (in_calls - in_calls0) / timed
            out["relayed"] = self.source.reduced.batch.relayed
        return out

    def close(self) -> None:
        for c in self.clients:
            c.close()


def attempts(nodes: int, shards: int, protocol: str, pods: int = 640) -> dict[str, float]:
    """Per pod: wall and coordinator CPU seconds, and shard busy seconds (reduced)."""
    return interleaved(nodes, [(protocol, shards)], pods)[(protocol, shards)]


def interleaved(
    nodes: int, runs: list[tuple[str, int]], pods: int = 640
) -> dict[tuple[str, int], dict[str, float]]:
    """``attempts`` of every (protocol, shards) in ``runs`` at once, batch by batch in
    turn: on a shared machine the load drifts over minutes, and runs one after the
    other (1, then 2, then 3 shards) read that drift as a cost per shard (rounds gave
    -2 to 49 µs). In turn, each shard count sees the same drift."""
    setups: list[_Setup] = []
    try:
        for protocol, shards in runs:
            setups.append(_Setup(nodes, shards, protocol, pods))
        for k in range(len(setups[0].batches)):
            for setup in setups:
                setup.step(k)
        return {(s.protocol, s.shards): s.result() for s in setups}
    finally:
        for s in setups:
            s.close()


def _print_relay(parts: dict[tuple[str, int], dict[str, float]], xs: list[float]) -> None:
    """Through the relay: the coordinator's cost per extra shard (process and main
    thread), its one call against the direct protocol's, and the relay's own CPU per pod
    as e + k * S (its serial bound)."""
    ys = [parts[("relay", int(s))]["cpu"] for s in xs]
    ts = [parts[("relay", int(s))]["thread"] for s in xs]
    rs = [parts[("relay", int(s))]["relay_cpu"] for s in xs]
    cs = [parts[("relay", int(s))]["relay_call_cpu"] for s in xs]
    fit, relay = statistics.linear_regression(xs, ys), statistics.linear_regression(xs, rs)
    calls = statistics.linear_regression(xs, cs)
    direct = statistics.linear_regression(xs, [parts[("reduced", int(s))]["cpu"] for s in xs])
    print(
        f"  relay: coordinator CPU per extra shard per pod {fit.slope * 1e6:.1f} µs "
        f"(main thread {statistics.linear_regression(xs, ts).slope * 1e6:.1f} µs), "
        f"intercept {fit.intercept * 1e6:.0f} against direct {direct.intercept * 1e6:.0f} µs"
    )
    print(
        f"  relay process CPU per pod: e={relay.intercept * 1e6:.1f} µs + k={relay.slope * 1e6:.1f}"
        f" µs/shard (1-3 shards: {', '.join(f'{r * 1e6:.0f}' for r in rs)}; per pod per shard"
        f" {', '.join(f'{r / s * 1e6:.0f}' for r, s in zip(rs, xs, strict=True))})"
    )
    print(
        f"  relay CPU in its calls per pod: e={calls.intercept * 1e6:.1f} µs + k={calls.slope * 1e6:.1f}"
        f" µs/shard (1-3 shards: {', '.join(f'{r * 1e6:.0f}' for r in cs)})"
    )


def chunk_calls(nodes: int, rounds: int) -> None:
    """``--calls`` (module docstring): per protocol and shard count, the medians per
    chunk, and least squares over the shard counts per pod (64 pods a chunk)."""
    from cluster_sched.scheduler.shards.merge import ReducedBatch, predict_windows
    from cluster_sched.scheduler.shards.replies import MergedChunk
    from workers.ray_shard import RayShardClient, ray_shard_clients
    from workers.shard_wire import snapshot_facts

    counts = (1, 2, 3)
    setups: dict[tuple[str, int], tuple[list[Any], bytes, list[tuple[float, float]]]] = {}
    pods = [make_pod(f"p{j}").req(cpu="100m", memory="500Mi").obj() for j in range(64)]
    try:
        for protocol in REDUCED:
            for s in counts:
                setup = _Setup(nodes, 0, "replica", 0)  # the cache and framework only
                router = ShardRouter(s)
                cache = Cache(router)
                for i in range(nodes):
                    cache.add_node(_node(i))
                setup.fwk.handle.snapshot = cache.snapshot
                items = predict_windows(setup.frameworks, pods, router.table, cache.snapshot, 0, None)  # fmt: skip
                payload = ReducedBatch().encode(items, router.table, cache.snapshot, snapshot_facts, True, router.shard_of_row, s)[0][0]  # fmt: skip
                clients = list(ray_shard_clients(s, relay=protocol == "relay"))
                for shard, c in enumerate(clients):
                    c.submit_apply(router.take_deltas(shard)).result()
                setups[(protocol, s)] = (clients, payload, [])
        relay_cpu: dict[int, list[float]] = {}
        for k in range(rounds + 10):  # the first 10 warm up
            for (protocol, s), (clients, payload, got) in setups.items():
                cpu, thread = time.process_time(), time.thread_time()
                if protocol == "relay":
                    sent = clients[0].submit_reduce_all(clients, lambda _: [], payload)
                    replies = [p.result()[2] for p, _ in sent]
                else:
                    shared = clients[0].share(payload)
                    calls = [c.submit_reduce([], shared, len(payload))[0] for c in clients]
                    replies = [r[2] for r in RayShardClient.gather(calls)]
                MergedChunk(replies, len(pods))
                if k >= 10:
                    got.append((time.process_time() - cpu, time.thread_time() - thread))
                if protocol == "relay" and k in (10, rounds + 9):
                    relay_cpu.setdefault(s, []).append(clients[0].relay.cpu_seconds()[0])
        print(f"calls alone ({rounds} chunks of 64 pods each, {nodes} nodes): coordinator CPU per chunk, µs")  # fmt: skip
        for protocol in REDUCED:
            cpus = [statistics.median(c for c, _ in setups[(protocol, s)][2]) for s in counts]
            threads = [statistics.median(t for _, t in setups[(protocol, s)][2]) for s in counts]
            fit = statistics.linear_regression(counts, cpus)
            main = statistics.linear_regression(counts, threads)
            print(
                f"  {protocol:8} 1-3 shards: {', '.join(f'{c * 1e6:.0f}' for c in cpus)} (main thread"
                f" {', '.join(f'{t * 1e6:.0f}' for t in threads)}); per extra shard per pod"
                f" {fit.slope / 64 * 1e6:.2f} µs (main thread {main.slope / 64 * 1e6:.2f})"
            )
        per_chunk = [(relay_cpu[s][1] - relay_cpu[s][0]) / (rounds - 1) for s in counts]
        fit = statistics.linear_regression(counts, per_chunk)
        print(
            f"  relay process CPU per chunk (idle rate included): {', '.join(f'{c * 1e6:.0f}' for c in per_chunk)};"
            f" per pod e={fit.intercept / 64 * 1e6:.1f} + k={fit.slope / 64 * 1e6:.1f} µs/shard"
        )
    finally:
        for clients, _, _ in setups.values():
            for c in clients:
                c.close()


def full_run(workload: Path, *extra: str) -> float:
    """pods/s (first pop to last bind) of one ``cluster-sched run``."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "cluster_sched.cli", "run", str(workload), "--quiet"]
        cmd += ["--no-report", "--output", out, *extra]
        subprocess.run(cmd, check=True, capture_output=True)
        return float(json.loads((Path(out) / "summary.json").read_text())["throughput"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--pods", type=int, default=3000, help="pods of each --validate run")
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--batched", action="store_true", help="also the batched protocol")
    ap.add_argument("--attempt-pods", type=int, default=640, help="pods of each part's run")
    ap.add_argument(
        "--sequential",
        action="store_true",
        help="each part's run after the other (as before), not batch by batch in turn",
    )
    ap.add_argument(
        "--loop-us", type=float, default=450.0, help="loop time without --validate (README)"
    )
    ap.add_argument("--no-relay", action="store_true", help="no relay coordinators")
    ap.add_argument("--calls", type=int, default=0, help="only the calls alone, N chunks each")
    args = ap.parse_args()
    warm_up()
    if args.calls:
        chunk_calls(args.nodes, args.calls)
        return
    width = num_feasible_nodes_to_find(0, args.nodes)
    print(f"{args.nodes} nodes, window {width}: per pod, µs (wall / coordinator CPU)")
    parts: dict[tuple[str, int], dict[str, float]] = {}
    runs = [("replica", 0), ("batched", 1), ("batched", 2)] if args.batched else [("replica", 0)]
    runs += [(p, s) for p in REDUCED[: 1 if args.no_relay else 2] for s in (1, 2, 3)]
    if args.sequential:
        for protocol, shards in runs:
            parts[(protocol, shards)] = attempts(args.nodes, shards, protocol, args.attempt_pods)
    else:
        parts = interleaved(args.nodes, runs, args.attempt_pods)
    for protocol, shards in runs:
        got = parts[(protocol, shards)]
        extra = f", shard busy {got['busy'] * 1e6:.0f}" if "busy" in got else ""
        extra += f", answered {got['answered']:.0%}" if "answered" in got else ""
        if "relay_cpu" in got:
            extra += f", relay CPU {got['relay_cpu'] * 1e6:.0f} (with its idle time {got['relay_whole_cpu'] * 1e6:.0f}, in its calls {got['relay_call_cpu'] * 1e6:.0f}; {got['relayed']:.0f} relayed)"  # fmt: skip
        print(
            f"  {protocol:8} {shards} shard(s): {got['wall'] * 1e6:7.0f} / {got['cpu'] * 1e6:6.0f}"
            f" (main thread {got['thread'] * 1e6:.0f})" + extra
        )
    if args.batched:
        b = parts[("batched", 2)]["cpu"] - parts[("batched", 1)]["cpu"]
        print(f"  batched: coordinator CPU per extra shard per pod {b * 1e6:.0f} µs")
    # a + b*S fitted to S = 1, 2, 3 by least squares (process CPU: Ray's client threads too)
    xs = [1.0, 2.0, 3.0]
    ys = [parts[("reduced", s)]["cpu"] for s in (1, 2, 3)]
    fit_b = statistics.linear_regression(xs, ys).slope
    ts = [parts[("reduced", s)]["thread"] for s in (1, 2, 3)]
    print(
        f"  reduced: coordinator CPU per extra shard per pod {fit_b * 1e6:.1f} µs "
        f"(main thread {statistics.linear_regression(xs, ts).slope * 1e6:.1f} µs)"
    )
    if not args.no_relay:
        _print_relay(parts, xs)
    b = max(0.0, fit_b)
    a = statistics.fmean(ys) - b * 2
    busy1, busy2 = parts[("reduced", 1)]["busy"], parts[("reduced", 2)]["busy"]
    g = max(0.0, (busy1 - busy2) / (width - width / 2))  # per window row
    f = max(0.0, busy1 - g * width)
    kernel = parts[("replica", 0)]["cpu"]
    loop = args.loop_us / 1e6
    measured: dict[int, float] = {}
    if args.validate:
        with tempfile.TemporaryDirectory() as tmp:
            wl = write_basic_workload(Path(tmp) / "w.yaml", args.nodes, args.pods, zones=("a", "b", "c"))  # fmt: skip
            ray = ["--executor", "ray", "--shards"]
            replica = full_run(wl, *ray, "2", "--shard-dispatch", "replica")
            loop = max(0.0, 1 / replica - kernel)
            for s in (1, 2):
                measured[s] = full_run(wl, *ray, str(s), "--shard-dispatch", "shards")
            print(f"  full runs: replica dispatch {replica:.0f} pods/s (loop {loop * 1e6:.0f} µs)")
    print(f"model: coordinator a={a * 1e6:.0f} µs + b={b * 1e6:.1f} µs/shard; shard f={f * 1e6:.0f} µs + g={g * 1e9:.1f} ns/row")  # fmt: skip
    for s, got in measured.items():
        pred = 1 / max(loop + a + b * s, f + g * width / s)
        print(f"  validation {s} shard(s): measured {got:.0f} pods/s, model {pred:.0f} ({got / pred:.2f}x)")  # fmt: skip
    print("| nodes | window | in-process | " + " | ".join(f"{s} shards (serial bound)" for s in SHARDS) + " |")  # fmt: skip
    print("|---" * (3 + len(SHARDS)) + "|")
    for n in SIZES:
        w = num_feasible_nodes_to_find(0, n)
        local = 1 / (loop + kernel * w / width)
        cells = []
        for s in SHARDS:
            bound = 1 / (loop + a + b * s)
            cells.append(f"{min(bound, 1 / (f + g * w / s)):,.0f} ({bound:,.0f})")
        print(f"| {n:,} | {w:,} | {local:,.0f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
