"""The reduced protocol's scaling model, refitted from full runs: CPU per pod by process,
predicted pods/s at 1-64 shards, validated against the measured runs it came from.

Parts (``shard_cpu_parts``: whole ``cluster-sched run``s, each process's CPU over the
scheduling window divided by the pods), at each ``--nodes`` size N, window
W = numFeasibleNodesToFind(N) (5,000 at 100k nodes, 50,000 at 1M):

- in-process: the pods/s and the coordinator's CPU per pod (the compiled path on the
  replica: window evaluation included);
- Ray with S = 1 and 2 shards, every attempt the compiled path can take sent to them
  (``--shard-dispatch shards``, pipelined): the coordinator's CPU per pod
  ``c(S) = a + b*S`` (``b``: the coordinator's cost per extra shard), each shard's
  ``h(S) = f + g*W/S`` (its evaluation scales with its share of the window: that is what
  shards take over), and the rest ``o`` (Redis, Ray's daemons and binding workers).

Model, C cores: the coordinator is serial, each shard is serial, everything shares the
cores (for the validation, the machine's cores less those other jobs took during the run,
``shard_cpu_parts``; this machine is shared):

    pods/s(S) = 1 / max(c(S), h(S), (c(S) + S*h(S) + o) / C)

``1 / c(S)`` is the coordinator's serial bound, printed beside. Validation: the model with
this machine's cores against the measured 1- and 2-shard runs (the throughput is not an
input: the parts are CPU times). The table gives every shard a core of its own
(C = S + 2: the coordinator's and one for the rest), so pods/s rise with S while the
shards' evaluation h(S) is the bound and stop at the coordinator's serial bound.

Run (each full run under ~5 minutes; 1M nodes needs ~8 GiB for the run's processes):
PYTHONPATH=. .venv/bin/python benchmarks/scaling_model.py --nodes 100000 1000000
[--pods 10000] [--per-shard-us B]; ``--parts FILE`` reads parts saved by an earlier
invocation (``--save``; several files are merged).
A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.testing.workload_file import write_basic_workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shard_cpu_parts import measure

SHARDS = (1, 2, 4, 16, 64)
RAY = ("--executor", "ray", "--shard-dispatch", "shards", "--shards")


def parts_at(nodes: int, pods: int) -> dict[str, Any]:
    """In-process, 1 and 2 forced Ray shards at ``nodes`` (module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        wl = write_basic_workload(Path(tmp) / "w.yaml", nodes, pods, zones=("a", "b", "c"))
        runs = {"local": measure(wl)}
        for s in (1, 2):
            runs[f"ray{s}"] = measure(wl, *RAY, str(s))
    for name, r in runs.items():
        cpu = ", ".join(f"{k} {v * 1e6:.0f}" for k, v in sorted(r["cpu_per_pod"].items()))
        print(f"  {nodes:,} nodes, {name}: {r['throughput']:.0f} pods/s; CPU per pod (µs): {cpu}; peak RSS {r['peak_rss_gib']:.1f} GiB")  # fmt: skip
    return runs


class Fit:
    """a + b*S (coordinator), f + g*W/S (each shard), o (the rest), per pod, seconds."""

    def __init__(self, nodes: int, runs: dict[str, Any], per_shard: float | None) -> None:
        self.nodes = nodes
        self.width = num_feasible_nodes_to_find(0, nodes)
        self.local = runs["local"]["throughput"]
        cpu = {s: runs[f"ray{s}"]["cpu_per_pod"] for s in (1, 2)}
        self.measured = {s: runs[f"ray{s}"]["throughput"] for s in (1, 2)}
        #: the cores the 1- and 2-shard runs had (the machine's, less what other jobs took)
        self.cores = {s: runs[f"ray{s}"].get("other_jobs_cores", 0.0) for s in (1, 2)}
        c = {s: cpu[s].get("coordinator", 0.0) for s in (1, 2)}
        # the full runs' difference is within their noise (tens of percent between runs
        # here): ``--per-shard-us`` takes shard_protocol_bench.py's measurement instead
        self.b = max(0.0, c[2] - c[1]) if per_shard is None else per_shard
        self.a = (c[1] + c[2] - 3 * self.b) / 2
        h = {s: cpu[s].get("shards", 0.0) / s for s in (1, 2)}
        self.g = max(0.0, (h[1] - h[2]) / (self.width - self.width / 2))
        self.f = max(0.0, h[1] - self.g * self.width)
        self.o = sum(cpu[s].get(k, 0.0) for s in (1, 2) for k in ("redis", "other")) / 2

    def coordinator(self, s: int) -> float:
        return max(self.a + self.b * s, 1e-9)

    def shard(self, s: int) -> float:
        return self.f + self.g * self.width / s

    def rate(self, s: int, cores: float) -> float:
        c, h = self.coordinator(s), self.shard(s)
        return 1.0 / max(c, h, (c + s * h + self.o) / cores)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--parts", type=Path, nargs="+", help="parts saved by --save (no runs)")
    ap.add_argument("--save", type=Path, help="write the measured parts here")
    ap.add_argument(
        "--per-shard-us",
        type=float,
        help="the coordinator's CPU per extra shard per pod, from shard_protocol_bench.py "
        "(default: the 2- and 1-shard runs' difference)",
    )
    args = ap.parse_args()
    if args.parts is not None:
        measured = {
            int(k): v for path in args.parts for k, v in json.loads(path.read_text()).items()
        }
    else:
        measured = {n: parts_at(n, args.pods) for n in args.nodes}
        if args.save is not None:
            args.save.write_text(json.dumps(measured))
    cores = os.cpu_count() or 1
    b = None if args.per_shard_us is None else args.per_shard_us / 1e6
    fits = [Fit(n, runs, b) for n, runs in sorted(measured.items())]
    for fit in fits:
        print(
            f"{fit.nodes:,} nodes (window {fit.width:,}): coordinator a={fit.a * 1e6:.0f} µs "
            f"+ b={fit.b * 1e6:.1f} µs per shard; shard f={fit.f * 1e6:.0f} µs + "
            f"g={fit.g * 1e9:.1f} ns per window row; rest o={fit.o * 1e6:.0f} µs"
        )
        for s, got in fit.measured.items():
            have = max(1.0, cores - fit.cores[s])
            pred = fit.rate(s, have)
            print(f"  validation, {s} shard(s), {have:.2f} of {cores} cores free of other jobs: measured {got:.0f} pods/s, model {pred:.0f} ({got / pred:.2f}x); with all {cores}: {fit.rate(s, cores):.0f}")  # fmt: skip
    print("\npredicted pods/s, a core per shard (the coordinator's serial bound in brackets):")
    print("| nodes | window | in-process (measured) | " + " | ".join(f"{s} shard{'s' * (s > 1)}" for s in SHARDS) + " |")  # fmt: skip
    print("|---" * (3 + len(SHARDS)) + "|")
    for fit in fits:
        cells = [f"{fit.rate(s, s + 2):,.0f} ({1 / fit.coordinator(s):,.0f})" for s in SHARDS]
        print(f"| {fit.nodes:,} | {fit.width:,} | {fit.local:,.0f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
