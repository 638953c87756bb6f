"""The dispatch rule's parts and its check: full runs alternated by mode, and the rule's
constants fitted from them (``cluster_sched/scheduler/shards/dispatch.py``).

``run``: whole ``cluster-sched run``s of SchedulingBasic's 3-zone shape
(``write_basic_workload``) at ``--nodes`` / ``--pods``, one mode after the other, round
by round, each in a fresh process (``shard_cpu_parts.measure``: pods/s, CPU per pod by
process kind, peak RSS); each run is printed with the load average and appended to
``--save``. Modes: ``local`` (in-process), and with ``--executor ray --shards 2``:
``auto`` (the dispatch rule), ``shards`` and ``replica`` (forced).

``fit``: the rule's constants as lines in the window W through two sizes (the means of
each mode's runs at each): the replica side from ``replica`` runs (else ``auto`` runs
that sent nothing to the shards, else the in-process coordinator plus what the Ray
executor added to it at the other size), the shards side from ``shards`` runs (else ``auto``
runs that did), the rest (Redis, Ray's daemons and binding workers) per side over its
Ray runs;
then each size's predicted time per pod on either side against the measured rates.

Run (wrap each in ``flock /work/wt/bench.lock``; a 1,000,000-node run takes minutes):
PYTHONPATH=. .venv/bin/python benchmarks/dispatch_bench.py run --nodes 100000 --pods
10000 --rounds 3 --modes local auto --save P100K; ... fit P100K P1M.
A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from cluster_sched.testing.workload_file import write_basic_workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shard_cpu_parts

RAY = ("--executor", "ray", "--shards", "2")
MODES: dict[str, tuple[str, ...]] = {
    "local": (),
    "auto": RAY,
    "shards": (*RAY, "--shard-dispatch", "shards"),
    "replica": (*RAY, "--shard-dispatch", "replica"),
}
SHARDS = 2


def _kind(proc: Any, me: int) -> str:
    """``shard_cpu_parts``' kinds with "other" split: Ray's workers (the binding tasks
    run in them; ``ray::`` processes but its agents) and Ray's daemons."""
    kind = _parts_kind(proc, me)
    if kind != "other":
        return kind
    cmd = " ".join(proc.cmdline())
    return "ray_workers" if cmd.startswith("ray::") and "Agent" not in cmd else "ray_daemons"


_parts_kind = shard_cpu_parts._kind


def measure(workload: Path, *extra: str) -> dict[str, Any]:
    """``shard_cpu_parts.measure`` with Ray's processes split (``_kind``)."""
    cmd = [sys.executable, __file__, "child", str(workload), *extra]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _line(run: dict[str, Any]) -> str:
    cpu = ", ".join(f"{k} {v * 1e6:.0f}" for k, v in sorted(run["cpu_per_pod"].items()))
    return (
        f"{run['nodes']:,} nodes, {run['mode']}: {run['throughput']:.1f} pods/s; CPU per pod "
        f"(µs): {cpu}; peak RSS {run['peak_rss_gib']:.2f} GiB; attempts answered by "
        f"the shards {run.get('reduced_attempts')} of {run['pods']:,} pods; "
        f"load {run['load']}; other jobs {run['other_jobs_cores']:.2f} cores"
    )


def run(args: argparse.Namespace) -> None:
    saved: list[dict[str, Any]] = []
    if args.save is not None and args.save.exists():
        saved = json.loads(args.save.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        wl = write_basic_workload(Path(tmp) / "w.yaml", args.nodes, args.pods, ("a", "b", "c"))
        for _ in range(args.rounds):
            for mode in args.modes:
                got = measure(wl, *MODES[mode])
                got.update(
                    mode=mode,
                    nodes=args.nodes,
                    at=time.strftime("%H:%M:%S"),
                    load=" ".join(f"{x:.2f}" for x in os.getloadavg()),
                )
                print(_line(got), flush=True)
                saved.append(got)
                if args.save is not None:
                    args.save.write_text(json.dumps(saved))


def _mean(runs: list[dict[str, Any]], kind: str) -> float:
    return statistics.fmean(r["cpu_per_pod"].get(kind, 0.0) for r in runs) * 1e6


def _rest(runs: list[dict[str, Any]]) -> float:
    """Redis, Ray's daemons and workers: everything but the coordinator and the shards."""
    return (
        statistics.fmean(
            sum(v for k, v in r["cpu_per_pod"].items() if k not in ("coordinator", "shards"))
            for r in runs
        )
        * 1e6
    )


def _sides(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The runs whose attempts went to the replica, and those answered by the shards."""
    replica = [r for r in runs if r["mode"] == "replica"] or [
        r for r in runs if r["mode"] == "auto" and not r.get("reduced_attempts")
    ]
    shards = [r for r in runs if r["mode"] == "shards"] or [
        r for r in runs if r["mode"] == "auto" and r.get("reduced_attempts")
    ]
    return replica, shards


def fit(paths: list[Path]) -> None:
    runs = [r for p in paths for r in json.loads(p.read_text())]
    sizes = sorted({r["nodes"] for r in runs})
    if len(sizes) != 2:
        raise SystemExit(f"fit needs runs at two sizes, got {sizes}")
    parts: dict[int, dict[str, float]] = {}
    # a size without Ray runs on the replica: its in-process coordinator plus what the
    # Ray executor added to it where both were measured
    added = [
        _mean(_sides(at)[0], "coordinator") - _mean(local, "coordinator")
        for at in ([r for r in runs if r["nodes"] == n] for n in sizes)
        if _sides(at)[0] and (local := [r for r in at if r["mode"] == "local"])
    ]
    for n in sizes:
        at = [r for r in runs if r["nodes"] == n]
        replica, shards = _sides(at)
        local = [r for r in at if r["mode"] == "local"]
        if not shards or not (replica or (local and added)):
            raise SystemExit(f"{n:,} nodes: runs of both sides needed (replica and shards)")
        parts[n] = {
            "width": num_feasible_nodes_to_find(0, n),
            "replica": _mean(replica, "coordinator")
            if replica
            else _mean(local, "coordinator") + statistics.fmean(added),
            "coordinator": _mean(shards, "coordinator"),
            "shard": _mean(shards, "shards") / SHARDS,
            "shard_rest": _rest(shards),
        }
        if replica:
            parts[n]["replica_rest"] = _rest(replica)
        print(f"{n:,} nodes: " + ", ".join(f"{k} {v:,.0f}" for k, v in parts[n].items()))
    lo, hi = parts[sizes[0]], parts[sizes[1]]
    dw = hi["width"] - lo["width"]

    def line(key: str, per: float = 1.0) -> tuple[float, float]:
        slope = (hi[key] - lo[key]) / (dw / per)
        return lo[key] - slope * lo["width"] / per, slope

    replica_us, replica_row_us = line("replica")
    coordinator_us, coordinator_row_us = line("coordinator")
    coordinator_us -= DispatchRule().per_shard_us * SHARDS  # the per-shard part, measured apart
    shard_us, shard_row_us = line("shard", SHARDS)
    # the binding path's own cost does not follow the window: one mean per side
    replica_rest = [p["replica_rest"] for p in parts.values() if "replica_rest" in p]
    shard_rest = statistics.fmean(p["shard_rest"] for p in parts.values())
    rule = DispatchRule(
        replica_us=round(replica_us, 1),
        replica_row_us=round(replica_row_us, 5),
        coordinator_us=round(coordinator_us, 1),
        coordinator_row_us=round(coordinator_row_us, 5),
        shard_us=round(shard_us, 1),
        shard_row_us=round(shard_row_us, 5),
        replica_rest_us=round(statistics.fmean(replica_rest), 1),
        shard_rest_us=round(shard_rest, 1),
    )
    print(f"\nfitted: {rule}")
    for n in sizes:
        w = int(parts[n]["width"])
        rep, sh = rule.replica_time_us(w), rule.shard_time_us(w, SHARDS)
        at = [r for r in runs if r["nodes"] == n]
        got = {
            m: statistics.fmean(r["throughput"] for r in at if r["mode"] == m)
            for m in MODES
            if any(r["mode"] == m for r in at)
        }
        print(f"{n:,} nodes: replica {1e6 / rep:,.0f} pods/s, shards {1e6 / sh:,.0f} -> {'shards' if rule.use_shards(w, SHARDS, 64) else 'replica'}; measured " + ", ".join(f"{m} {v:,.0f}" for m, v in got.items()))  # fmt: skip
    w = next((w for w in range(1_000, 400_000, 1_000) if rule.use_shards(w, SHARDS, 64)), None)
    print(f"break-even window with {SHARDS} shards on {rule.cores:g} cores: {w}")


def main() -> None:
    if sys.argv[1:2] == ["child"]:
        shard_cpu_parts._kind = _kind
        print(json.dumps(shard_cpu_parts.child(sys.argv[2], sys.argv[3:])))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--nodes", type=int, required=True)
    r.add_argument("--pods", type=int, required=True)
    r.add_argument("--rounds", type=int, default=1)
    r.add_argument("--modes", nargs="+", choices=sorted(MODES), default=["local", "auto"])
    r.add_argument("--save", type=Path)
    f = sub.add_parser("fit")
    f.add_argument("parts", type=Path, nargs="+")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args)
    else:
        fit(args.parts)


if __name__ == "__main__":
    main()
