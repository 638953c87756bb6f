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

RAY = ("--executor", "ray", "--shards")
#: each mode's arguments and its shard count (0: in-process, no shards)
MODES: dict[str, tuple[tuple[str, ...], int]] = {
    "local": ((), 0),
    "auto": ((*RAY, "2"), 2),
    "shards": ((*RAY, "2", "--shard-dispatch", "shards"), 2),
    "shards1": ((*RAY, "1", "--shard-dispatch", "shards"), 1),
    "replica": ((*RAY, "2", "--shard-dispatch", "replica"), 2),
}


def _kind(proc: Any, me: int) -> str:
    """``shard_cpu_parts``' kinds with "other" split: the workload's feeder process (in
    every mode: it writes the pods), Ray's workers (the binding tasks run in them;
    ``ray::`` processes but its agents) and Ray's daemons."""
    kind = _parts_kind(proc, me)
    if kind != "other":
        return kind
    cmd = " ".join(proc.cmdline())
    if "cluster_sched.workload.feeder" in cmd:
        return "feeder"
    return "ray_workers" if cmd.startswith("ray::") and "Agent" not in cmd else "ray_daemons"


_parts_kind = shard_cpu_parts._kind


def measure(workload: Path, *extra: str) -> dict[str, Any]:
    """``shard_cpu_parts.measure`` with Ray's processes split (``_kind``)."""
    cmd = [sys.executable, __file__, "child", str(workload), *extra]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _printed(run: dict[str, Any]) -> str:
    cpu = ", ".join(f"{k} {v * 1e6:.0f}" for k, v in sorted(run["cpu_per_pod"].items()))
    return (
        f"{run['nodes']:,} nodes, {run['mode']}: {run['throughput']:.1f} pods/s; CPU per pod "
        f"(µs): {cpu}; peak RSS {run['peak_rss_gib']:.2f} GiB; attempts answered by "
        f"the shards {run.get('reduced_attempts')} of {run['pods']:,} pods; "
        f"load {run['load']}; other jobs {run['other_jobs_cores']:.2f} cores; "
        f"own-binding watch entries {run.get('own_watch')} of {run.get('scheduled')} bound"
    )


def run_modes(
    nodes: int, pods: int, modes: list[str], rounds: int = 1, save: Path | None = None
) -> list[dict[str, Any]]:
    """``rounds`` of one run per mode at ``nodes`` / ``pods``, each printed and appended
    to ``save`` (its earlier runs kept); returns every run saved."""
    saved: list[dict[str, Any]] = []
    if save is not None and save.exists():
        saved = json.loads(save.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        wl = write_basic_workload(Path(tmp) / "w.yaml", nodes, pods, ("a", "b", "c"))
        for _ in range(rounds):
            for mode in modes:
                got = measure(wl, *MODES[mode][0])
                got.update(
                    mode=mode,
                    shards=MODES[mode][1],
                    nodes=nodes,
                    at=time.strftime("%H:%M:%S"),
                    load=" ".join(f"{x:.2f}" for x in os.getloadavg()),
                )
                print(_printed(got), flush=True)
                saved.append(got)
                if save is not None:
                    save.write_text(json.dumps(saved))
    return saved


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
    shards = [r for r in runs if r["mode"] in ("shards", "shards1")] or [
        r for r in runs if r["mode"] == "auto" and r.get("reduced_attempts")
    ]
    return replica, shards


def _fitted_line(xs: list[float], ys: list[float], floor: bool = False) -> tuple[float, float]:
    """Least squares ``y = intercept + slope * x``; ``floor``: a slope below 0 (noise on a
    part that cannot shrink with x) is taken as 0, the intercept as the mean."""
    fitted = statistics.linear_regression(xs, ys)
    if floor and fitted.slope < 0:
        return statistics.fmean(ys), 0.0
    return fitted.intercept, fitted.slope


def shard_groups(runs: list[dict[str, Any]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """The runs answered by the shards, by (nodes, shards)."""
    groups: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for n in sorted({r["nodes"] for r in runs}):
        for r in _sides([r for r in runs if r["nodes"] == n])[1]:
            groups.setdefault((n, int(r.get("shards", 2))), []).append(r)
    return groups


def fit_rule(runs: list[dict[str, Any]], per_shard_us: float) -> DispatchRule:
    """The rule's constants from runs at two sizes (module docstring), with the
    coordinator's cost per extra shard ``per_shard_us`` measured apart.

    Shards side, over every (size, shard count) measured, each group's mean: the
    coordinator's ``c - per_shard_us * S`` as a line in W, each shard's ``shards CPU / S``
    as a line in W / S, the rest's mean, the coordinator's wait for the shards' replies
    (``shard_wait_us_per_pod``) its mean. Replica side: the coordinator as a line in W
    through the two sizes, the rest's mean, and the coordinator's time off its CPU
    (1 / pods/s less its CPU per pod) its median over the runs (a run that shared the
    machine with other jobs waits longer: one such run should not move it)."""
    sizes = sorted({r["nodes"] for r in runs})
    if len(sizes) != 2:
        raise SystemExit(f"a fit needs runs at two sizes, got {sizes}")
    groups = shard_groups(runs)
    if {n for n, _ in groups} != set(sizes):
        raise SystemExit(f"runs answered by the shards needed at {sizes}, got {sorted(groups)}")
    width = {n: num_feasible_nodes_to_find(0, n) for n in sizes}
    keys = sorted(groups)
    coordinator_us, coordinator_row_us = _fitted_line(
        [width[n] for n, _ in keys],
        [_mean(groups[k], "coordinator") - per_shard_us * k[1] for k in keys],
    )
    shard_us, shard_row_us = _fitted_line(
        [width[n] / s for n, s in keys],
        [_mean(groups[k], "shards") / k[1] for k in keys],
        floor=True,
    )
    shard_rest = statistics.fmean(_rest(groups[k]) for k in keys)
    # a size without Ray runs on the replica: its in-process coordinator plus what the
    # Ray executor added to it where both were measured
    at = {n: [r for r in runs if r["nodes"] == n] for n in sizes}
    local = {n: [r for r in at[n] if r["mode"] == "local"] for n in sizes}
    replica = {n: _sides(at[n])[0] for n in sizes}
    added = [
        _mean(replica[n], "coordinator") - _mean(local[n], "coordinator")
        for n in sizes
        if replica[n] and local[n]
    ]
    coordinator = {}
    for n in sizes:
        if not (replica[n] or (local[n] and added)):
            raise SystemExit(f"{n:,} nodes: runs on the replica needed (replica, auto or local)")
        coordinator[n] = (
            _mean(replica[n], "coordinator")
            if replica[n]
            else _mean(local[n], "coordinator") + statistics.fmean(added)
        )
    replica_us, replica_row_us = _fitted_line(
        [width[n] for n in sizes], [coordinator[n] for n in sizes]
    )
    replica_rest = [_rest(replica[n]) for n in sizes if replica[n]]
    # the coordinator's time off its CPU: the wall time per pod less its CPU, where the
    # attempts were on the replica; and its wait for the shards' replies (it measures it)
    wait = [
        1e6 / r["throughput"] - r["cpu_per_pod"]["coordinator"] * 1e6
        for n in sizes
        for r in replica[n] or local[n]
    ]
    shard_wait = [
        statistics.fmean(r.get("shard_wait_us_per_pod") or 0.0 for r in groups[k]) for k in keys
    ]
    return DispatchRule(
        replica_us=round(replica_us, 1),
        replica_row_us=round(replica_row_us, 5),
        coordinator_us=round(coordinator_us, 1),
        coordinator_row_us=round(coordinator_row_us, 5),
        per_shard_us=per_shard_us,
        shard_us=round(shard_us, 1),
        shard_row_us=round(shard_row_us, 6),
        replica_rest_us=round(statistics.fmean(replica_rest), 1),
        shard_rest_us=round(shard_rest, 1),
        wait_us=round(statistics.median(wait), 1),
        shard_wait_us=round(statistics.fmean(shard_wait), 1),
    )


def break_even(rule: DispatchRule, shards: int = 2) -> int | None:
    """The smallest window (in steps of 500 rows) whose batches the rule gives to
    ``shards`` shards."""
    return next((w for w in range(500, 1_000_001, 500) if rule.use_shards(w, shards, 64)), None)


def fit(paths: list[Path], per_shard_us: float) -> None:
    runs = [r for p in paths for r in json.loads(p.read_text())]
    rule = fit_rule(runs, per_shard_us)
    print(f"fitted: {rule}")
    for n in sorted({r["nodes"] for r in runs}):
        w = num_feasible_nodes_to_find(0, n)
        rep, sh = rule.replica_time_us(w), rule.shard_time_us(w, 2)
        at = [r for r in runs if r["nodes"] == n]
        got = {
            m: statistics.fmean(r["throughput"] for r in at if r["mode"] == m)
            for m in MODES
            if any(r["mode"] == m for r in at)
        }
        print(f"{n:,} nodes: 2 shards, replica {1e6 / rep:,.0f} pods/s, shards {1e6 / sh:,.0f} -> {'shards' if rule.use_shards(w, 2, 64) else 'replica'}; measured " + ", ".join(f"{m} {v:,.0f}" for m, v in got.items()))  # fmt: skip
    print(f"break-even window with 2 shards on {rule.cores:g} cores: {break_even(rule)}")


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
    f.add_argument(
        "--per-shard-us",
        type=float,
        default=DispatchRule().per_shard_us,
        help="the coordinator's CPU per extra shard per pod (shard_protocol_bench.py)",
    )
    args = ap.parse_args()
    if args.cmd == "run":
        run_modes(args.nodes, args.pods, args.modes, args.rounds, args.save)
    else:
        fit(args.parts, args.per_shard_us)


if __name__ == "__main__":
    main()
