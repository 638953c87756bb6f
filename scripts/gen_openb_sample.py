"""Generate the small openb-format sample under examples/traces/openb-sample/.

The real cluster-trace-gpu-v2023 files (openb_pod_list.csv, openb_node_list.csv) are
downloaded from github.com/alibaba/clusterdata; this machine has no network, so the
sample is synthetic: same columns and value conventions (milli-CPU, MiB, GPU counts and
milli-GPU shares, GPU model names, qos classes, phases, times in seconds), drawn from a
fixed seed. Replace the two CSVs with the real ones and rerun the import to replay the
real trace.

Run: .venv/bin/python scripts/gen_openb_sample.py [--nodes 24] [--pods 300]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from cluster_sched.workload.openb import NODE_COLUMNS, POD_COLUMNS

OUT = Path(__file__).resolve().parents[1] / "examples" / "traces" / "openb-sample"
MODELS = ["V100M16", "V100M32", "P100", "T4", "A10", "G2"]
QOS = ["LS", "BE", "Burstable", "Guaranteed"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=24)
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2023)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "openb_node_list.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(NODE_COLUMNS)
        for i in range(args.nodes):
            gpu = int(rng.choice([0, 2, 4, 8], p=[0.2, 0.2, 0.3, 0.3]))
            model = str(rng.choice(MODELS)) if gpu else ""
            cpu = int(rng.choice([32, 64, 96, 128])) * 1000
            w.writerow([f"openb-node-{i:04d}", cpu, cpu // 1000 * 4096, gpu, model])
    with (OUT / "openb_pod_list.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(POD_COLUMNS)
        created = 0
        for i in range(args.pods):
            created += int(rng.exponential(4))
            num_gpu = int(rng.choice([0, 1, 2, 4, 8], p=[0.4, 0.45, 0.1, 0.05, 0.0]))
            gpu_milli = (
                int(rng.choice([100, 250, 500, 1000])) if num_gpu == 1 else (1000 if num_gpu else 0)
            )
            spec = ""
            if num_gpu and rng.random() < 0.3:
                spec = "|".join(
                    sorted(rng.choice(MODELS, size=int(rng.integers(1, 3)), replace=False))
                )
            cpu = int(rng.choice([1, 2, 4, 8, 16])) * 1000
            phase = str(rng.choice(["Succeeded", "Running", "Failed"], p=[0.8, 0.05, 0.15]))
            scheduled = created + int(rng.integers(0, 5))
            deleted = "" if phase == "Running" else str(scheduled + int(rng.exponential(1200)) + 1)
            w.writerow(
                [
                    f"openb-pod-{i:04d}",
                    cpu,
                    cpu // 1000 * int(rng.choice([2048, 4096])),
                    num_gpu,
                    gpu_milli,
                    spec,
                    str(rng.choice(QOS)),
                    phase,
                    created,
                    deleted,
                    scheduled,
                ]
            )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
