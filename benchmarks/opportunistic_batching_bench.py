"""OpportunisticBatching on vs off, alternated run by run (issue 26, finding 4).

Where the gate applies (signable pods, one per node: here N nodes with 1 cpu and N pods
requesting 1 cpu, ``examples/scheduler_perf/scheduler-config-list-spreading.yaml``)
scheduling must be at least as fast with it on as off: upstream added it to save work.
Each pair runs ``cluster-sched run W --config ... --feature-gates
OpportunisticBatching=true|false --quiet --no-report`` in a fresh process (the order
within a pair alternates), prints pods/s, attempt p50, CPU per pod (the process's, binding
threads included), the scheduling loop's own CPU per pod (the coordinator thread's
``Coordinator.step`` time: the work the gate saves, least disturbed by a crowded
machine), the compiled path's shape hits and the gate's counters, then the same-run
reference ``/work/shared/tools/limit_probe.py N PODS numba``. The last lines give the
on/off ratio range over the pairs (throughput: on / off; the others: off / on, so >= 1.0
means the gate is no slower). A benchmark, not a test: it asserts nothing.

Run: .venv/bin/python benchmarks/opportunistic_batching_bench.py [--nodes 1000 5000]
     [--pairs 3] [--probe /work/shared/tools/limit_probe.py]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "scheduler_perf" / "scheduler-config-list-spreading.yaml"
PROBE = Path("/work/shared/tools/limit_probe.py")


def write_workload(path: Path, n: int) -> Path:
    """``n`` nodes of 1 cpu and ``n`` pods requesting 1 cpu: one pod per node."""
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": f"one-per-node-{n}"},
        "spec": {
            "nodeGroups": [
                {
                    "count": n,
                    "template": {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {"name": "node"},
                        "status": {"allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"}},
                    },
                }
            ],
            "podGroups": [
                {
                    "name": "pods",
                    "count": n,
                    "template": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "pod", "namespace": "default"},
                        "spec": {
                            "containers": [
                                {
                                    "name": "pause",
                                    "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ]
                        },
                    },
                }
            ],
        },
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _cli_argv(workload: Path, gate: bool, out: str) -> list[str]:
    return [
        "run", str(workload), "--config", str(CONFIG),
        "--feature-gates", f"OpportunisticBatching={str(gate).lower()}",
        "--quiet", "--no-report", "--output", out, "--seed", "1",
    ]  # fmt: skip


def child(workload: Path, gate: bool, out: str) -> int:
    """In the run's own process: ``cluster-sched run`` with the coordinator thread's CPU
    time in ``Coordinator.step`` summed, written beside summary.json."""
    import contextlib
    import io
    import time

    from cluster_sched.cli import main as cli_main
    from cluster_sched.scheduler.coordinator import Coordinator

    spent = [0.0]
    step = Coordinator.step

    def timed(coord: Coordinator, pop_timeout: float = 0.05) -> bool:
        began = time.thread_time()
        try:
            return step(coord, pop_timeout)
        finally:
            spent[0] += time.thread_time() - began

    Coordinator.step = timed  # type: ignore[method-assign]
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli_main(_cli_argv(workload, gate, out))
    (Path(out) / "loop_cpu.json").write_text(json.dumps({"seconds": spent[0]}))
    return rc


def run_once(workload: Path, gate: bool) -> dict[str, Any]:
    """One ``cluster-sched run`` in its own process; its summary.json, plus
    ``loop_cpu_us_per_pod``."""
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, __file__, "--child", str(workload), str(gate).lower(), out]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"cluster-sched run exited {done.returncode}: {done.stderr[-500:]}")
        summary: dict[str, Any] = json.loads((Path(out) / "summary.json").read_text())
        loop = json.loads((Path(out) / "loop_cpu.json").read_text())["seconds"]
    summary["loop_cpu_us_per_pod"] = loop * 1e6 / max(int(summary["scheduled"]), 1)
    return summary


def probe(n: int, path: Path) -> float:
    """limit_probe.py's pods/s for ``n`` nodes and pods (numba)."""
    done = subprocess.run(
        [sys.executable, str(path), str(n), str(n), "numba"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.split()[0])


def _line(gate: bool, s: dict[str, Any]) -> str:
    batching = (s.get("opportunistic_batching") or {}).get("default-scheduler", {})
    attempts = batching.get("attempts", {})
    flushes = batching.get("flushes", {})
    hits = (s.get("compiled_path") or {}).get("shape_hits", 0)
    return (
        f"  gate {'on ' if gate else 'off'}: {s['scheduled']}/{s['pods']} scheduled, "
        f"{float(s['throughput']):7.1f} pods/s, attempt p50 "
        f"{s['attempt_latency_ms']['p50']:.3f} ms, cpu {s['process_cpu_us_per_pod']:.1f} us/pod "
        f"(loop {s['loop_cpu_us_per_pod']:.1f}), "
        f"shape hits {hits}, batching {dict(attempts) or '-'} flushed {dict(flushes) or '-'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--probe", type=Path, default=PROBE)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workload, gate, out = args.child
        return child(Path(workload), gate == "true", out)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            workload = write_workload(Path(tmp) / f"w{n}.yaml", n)
            print(f"{n} nodes x 1 cpu, {n} pods x 1 cpu, {CONFIG.name}")
            ratios: dict[str, list[float]] = {
                "pods/s": [], "attempt p50": [], "cpu/pod": [], "loop cpu/pod": []
            }  # fmt: skip
            for pair in range(args.pairs):
                order = (True, False) if pair % 2 == 0 else (False, True)
                got = {}
                for gate in order:
                    got[gate] = run_once(workload, gate)
                    print(_line(gate, got[gate]))
                on, off = got[True], got[False]
                ratios["pods/s"].append(float(on["throughput"]) / float(off["throughput"]))
                ratios["attempt p50"].append(
                    off["attempt_latency_ms"]["p50"] / max(on["attempt_latency_ms"]["p50"], 1e-9)
                )
                ratios["cpu/pod"].append(
                    off["process_cpu_us_per_pod"] / max(on["process_cpu_us_per_pod"], 1e-9)
                )
                ratios["loop cpu/pod"].append(
                    off["loop_cpu_us_per_pod"] / max(on["loop_cpu_us_per_pod"], 1e-9)
                )
                ref = probe(n, args.probe) if args.probe.exists() else float("nan")
                print(
                    f"  pair {pair + 1}: on/off pods/s {ratios['pods/s'][-1]:.2f}x; "
                    f"limit_probe {ref:.0f} pods/s (gate on at "
                    f"{float(on['throughput']) / ref:.3f} of it, off at "
                    f"{float(off['throughput']) / ref:.3f})"
                )
            for name, values in ratios.items():
                print(
                    f"  on vs off, {name} (>= 1.0: gate no slower): "
                    f"{min(values):.2f}x .. {max(values):.2f}x, median "
                    f"{statistics.median(values):.2f}x over {len(values)} pairs"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
