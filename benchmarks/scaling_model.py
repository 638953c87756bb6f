"""The reduced protocol's scaling model, refitted from full runs: CPU per pod by process,
predicted pods/s at 1-64 shards, validated against the measured runs it came from.

The model is the dispatch rule's shard side (``scheduler/shards/dispatch.py``,
``DispatchRule.shard_time_us``), with the same constants, fitted by the same code
(``dispatch_bench.fit_rule``) from the same runs: one model, one fit.

Parts (``shard_cpu_parts``: whole ``cluster-sched run``s, each process's CPU over the
scheduling window divided by the pods), at each ``--nodes`` size N, window
W = numFeasibleNodesToFind(N) (5,000 at 100k nodes, 50,000 at 1M), SchedulingBasic's
3-zone shape (``write_basic_workload``); modes (``dispatch_bench.MODES``):

- ``local`` (in-process): the pods/s and the coordinator's CPU per pod (the compiled path
  on the replica: window evaluation included);
- ``shards1``, ``shards``: Ray with S = 1 and 2 shards, every attempt the compiled path
  can take sent to them (``--shard-dispatch shards``, pipelined): the coordinator's CPU
  per pod ``c(S) = a + b*S`` (``a = coordinator_us + coordinator_row_us * W``; ``b``, the
  coordinator's cost per extra shard, from ``shard_protocol_bench.py``: the full runs'
  difference is within their noise), each shard's ``h(S) = f + g*W/S``
  (``shard_us + shard_row_us * W / S``: with row scores cached a window's answer is a max
  and a compare over the shard's rows of it, ``shards/window.py``, so ``g`` is that scan
  and ``f`` the rest, per pod: the chunk's decode, its deltas, the rows pod deltas
  changed recomputed, the reply), and the rest ``o`` (Redis, Ray's daemons and binding
  workers; ``shard_rest_us``); ``a`` and ``f + g*x`` are least-squares lines over both
  sizes and both shard counts;
- ``replica``: Ray with 2 shards and every attempt on the replica (the dispatch rule's
  other side, not in the model).

The coordinator's time per pod is not its CPU alone: ``q`` (``wait_us``) is its time off
the CPU where the attempts stay on the replica (1 / pods/s less its CPU per pod in the
``replica`` runs: its loop's Redis round trips, and being descheduled by the others on
shared cores), ``r`` (``shard_wait_us``) its wait for the shards' replies
(``summary.json``'s ``shard_wait_us_per_pod``, measured by the coordinator). Since row
scores are cached a shard answers far faster than the coordinator commits, so the
coordinator is the bound and these waits decide its rate: without them the model
predicted 1.13-1.35x the measured rates (1.0-1.25x with them) (the form before had ``max(c(S), h(S), ...)``, right
while a shard's evaluation, ~1 ms per pod at 1M nodes, was the bound).

Model, C cores: the coordinator is serial, each shard is serial, everything shares the
cores:

    pods/s(S) = 1 / max(c(S) + q + r, h(S), (c(S) + S*h(S) + o) / C)

``1 / (c(S) + q + r)`` is the coordinator's serial bound, printed beside. Validation: the model with
the cores each run had (this machine's, less what other jobs took meanwhile:
``shard_cpu_parts``) against the measured 1- and 2-shard runs (the throughput is not an
input: the parts are CPU times). The table gives every shard a core of its own
(C = S + 2: the coordinator's and one for the rest), so pods/s rise with S while the
shards' evaluation h(S) or the total CPU is the bound and stop at the coordinator's
serial bound.

The shard relay (``workers/ray_relay.py``, ``--shard-relay``): the coordinator makes one
call per chunk for every shard, so its CPU per pod is ``c(S) = a + t + b_relay*S``
(``relay_call_us`` t: the relay's one call against a shard's; ``relay_per_shard_us``
b_relay: the decode, the column merge and the shard's deltas; both from
``shard_protocol_bench.py``'s relay coordinators), and the relay is one more serial part,
``e + k*S`` (``relay_us``, ``relay_shard_us``: its process's CPU per pod, same bench),
whose CPU shares the cores:

    pods/s(S) = 1 / max(c(S) + q + r, h(S), e + k*S, (c(S) + S*h(S) + e + k*S + o) / C)

The relay tables give the relay a core too (C = S + 3); the coordinator's bound then
hardly falls with S, and the relay's, 1 / (e + k*S), takes over past S ~ (c - e) / k.
``--table`` prints the direct and the relay tables from the dispatch rule's constants
alone (no runs).

Run (wrap each in ``flock /work/wt/bench.lock``; one 1M-node run takes ~3-5 minutes and
~9 GiB): PYTHONPATH=. .venv/bin/python benchmarks/scaling_model.py --nodes 100000 --pods
10000 --save P1 [--modes local shards1 shards replica]; the same with --nodes 1000000
--pods 30000 --save P2 (``--modes`` one at a time: each invocation appends to ``--save``);
then ``--parts P1 P2 --per-shard-us B`` (B: ``shard_protocol_bench.py``).
A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.shards.dispatch import DispatchRule

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dispatch_bench import MODES, break_even, fit_rule, run_modes, shard_groups

SHARDS = (1, 2, 4, 16, 64)


def report(runs: list[dict[str, Any]], rule: DispatchRule) -> None:
    """The fitted parts, the validation and the table (module docstring)."""
    cores = os.cpu_count() or 1
    groups = shard_groups(runs)
    for n in sorted({r["nodes"] for r in runs}):
        w = num_feasible_nodes_to_find(0, n)
        a = rule.coordinator_us + rule.coordinator_row_us * w
        print(
            f"{n:,} nodes (window {w:,}): coordinator a={a:.0f} µs + b={rule.per_shard_us:.1f}"
            f" µs per shard; shard f={rule.shard_us:.0f} µs + g={rule.shard_row_us * 1e3:.2f}"
            f" ns per window row of its share; rest o={rule.shard_rest_us:.0f} µs; coordinator"
            f" off its CPU q={rule.wait_us:.0f} µs + waiting for the shards"
            f" r={rule.shard_wait_us:.0f} µs"
        )
        for (gn, s), got in sorted(groups.items()):
            if gn != n:
                continue
            c = statistics.fmean(r["cpu_per_pod"].get("coordinator", 0.0) for r in got) * 1e6
            h = statistics.fmean(r["cpu_per_pod"].get("shards", 0.0) for r in got) * 1e6 / s
            rate = statistics.fmean(r["throughput"] for r in got)
            have = max(1.0, cores - statistics.fmean(r["other_jobs_cores"] for r in got))
            model = 1e6 / rule.shard_time_us(w, s, have)
            fit_c, fit_h = rule.shard_parts_us(w, s)
            print(f"  validation, {s} shard(s), {len(got)} run(s), {have:.2f} of {cores} cores free of other jobs: measured {rate:.0f} pods/s, model {model:.0f} ({rate / model:.2f}x); coordinator {c:.0f} µs (model {fit_c:.0f}), each shard {h:.0f} (model {fit_h:.0f})")  # fmt: skip
    print(
        f"\nbreak-even window of the dispatch rule, 2 shards on {cores} cores: {break_even(rule)}"
    )
    tables(rule, sorted({r["nodes"] for r in runs}), runs)


def tables(rule: DispatchRule, sizes: list[int], runs: list[dict[str, Any]]) -> None:
    """Predicted pods/s per shard count, direct calls and through the relay, with a core
    per shard (and the relay's) and on this machine's cores."""
    cores = os.cpu_count() or 1
    for relay in (False, True):
        for title, own in (("a core per shard", True), (f"this machine's {cores} cores", False)):
            how = "through the relay" if relay else "direct calls"
            bounds = "the coordinator's / the relay's serial bound" if relay else "the coordinator's serial bound"  # fmt: skip
            print(f"\npredicted pods/s, {how}, {title} ({bounds} in brackets):")
            print("| nodes | window | in-process (measured) | replica path (model) | " + " | ".join(f"{s} shard{'s' * (s > 1)}" for s in SHARDS) + " |")  # fmt: skip
            print("|---" * (4 + len(SHARDS)) + "|")
            for n in sizes:
                w = num_feasible_nodes_to_find(0, n)
                local = [r["throughput"] for r in runs if r["nodes"] == n and r["mode"] == "local"]
                cells = []
                for s in SHARDS:
                    bound = 1e6 / rule.serial_bound_us(w, s, relay)
                    have = s + 2 + relay if own else cores
                    rate = 1e6 / rule.shard_time_us(w, s, have, relay)
                    hop = f" / {1e6 / rule.relay_time_us(s, relay):,.0f}" if relay else ""
                    cells.append(f"{rate:,.0f} ({bound:,.0f}{hop})")
                shown = f"{statistics.fmean(local):,.0f}" if local else "-"
                replica = 1e6 / rule.replica_time_us(w)
                print(f"| {n:,} | {w:,} | {shown} | {replica:,.0f} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument(
        "--modes",
        nargs="+",
        choices=sorted(MODES),
        default=["local", "shards1", "shards", "replica"],
    )
    ap.add_argument("--parts", type=Path, nargs="+", help="runs saved by --save (no runs)")
    ap.add_argument("--save", type=Path, help="append the measured runs here")
    ap.add_argument(
        "--table",
        action="store_true",
        help="only the tables, from the dispatch rule's constants (no runs)",
    )
    ap.add_argument(
        "--per-shard-us",
        type=float,
        default=DispatchRule().per_shard_us,
        help="the coordinator's CPU per extra shard per pod, from shard_protocol_bench.py",
    )
    args = ap.parse_args()
    if args.table:
        tables(DispatchRule(), [100_000, 1_000_000], [])
        return
    if args.parts is None:
        run_modes(args.nodes, args.pods, args.modes, save=args.save)
        return
    runs = [r for path in args.parts for r in json.loads(path.read_text())]
    rule = fit_rule(runs, args.per_shard_us)
    print(f"fitted (the dispatch rule's constants): {rule}\n")
    report(runs, rule)


if __name__ == "__main__":
    main()
