"""CLI commands for sweeps and traces: ``compare`` and ``import-trace``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cluster_sched.errors import UsageError
from cluster_sched.workload.cli_args import (
    add_clock_options,
    add_feature_gates_option,
    int_at_least,
)

__all__ = ["register_more"]


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--seeds takes integers joined by commas, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise UsageError(f"--seeds takes integers of 0 or more joined by commas, got {text!r}")
    return seeds


def _register_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="run every (workload, config, seed) as an independent evaluation and compare",
    )
    p.add_argument("workload", help="a workload file (more with --workload)")
    p.add_argument(
        "--workload",
        dest="more_workloads",
        action="append",
        default=[],
        metavar="FILE",
        help="another workload to run every config and seed on",
    )
    p.add_argument(
        "--config",
        dest="configs",
        action="append",
        default=[],
        required=True,
        help="a KubeSchedulerConfiguration; repeat it (the first is the baseline)",
    )
    p.add_argument("--seeds", default="1", help="seeds joined by commas (default 1)")
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where evaluations run: local processes, or one Ray task each",
    )
    p.add_argument(
        "--parallel",
        type=int_at_least(1),
        default=1,
        help="--executor local: evaluations at a time (1: one after another, in-process)",
    )
    p.add_argument("--ray-address", default=None, help="join this Ray cluster (default: local)")
    p.add_argument("--output", required=True, help="directory for compare.json and compare.html")
    p.add_argument("--no-report", action="store_true", help="write compare.json only")
    add_clock_options(p)
    add_feature_gates_option(p)
    p.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    from cluster_sched.workload.compare import CompareOptions, run_compare

    data = run_compare(
        CompareOptions(
            workloads=[args.workload, *args.more_workloads],
            configs=args.configs,
            seeds=_seeds(args.seeds),
            output=args.output,
            executor=args.executor,
            parallel=args.parallel,
            ray_address=args.ray_address,
            clock=args.clock,
            horizon=args.horizon,
            feature_gates=args.feature_gates,
        ),
        report=not args.no_report,
        progress=lambda line: print(line, file=sys.stderr),
    )
    for workload in data["workloads"]:
        print(f"workload {workload} (baseline {data['baseline']})")
        for name, per_config in data["figures"][workload].items():
            cells = "  ".join(f"{c}: {s['mean']:.4g}" for c, s in per_config.items())
            marks = data["differences"][workload].get(name, {})
            flagged = [f"{c} {d['verdict'] or 'differs'}" for c, d in marks.items() if d["marked"]]
            print(f"  {name:32} {cells}{'  <- ' + ', '.join(flagged) if flagged else ''}")
    out = Path(args.output)
    print(f"compare        {out / 'compare.json'}")
    if not args.no_report:
        print(f"report         {out / 'compare.html'}")
    return 0


def _register_import_trace(sub: Any) -> None:
    p = sub.add_parser(
        "import-trace",
        help="turn a cluster trace into a replayable Workload (run it with --clock virtual)",
    )
    p.add_argument(
        "--format",
        choices=("openb",),
        default="openb",
        help="openb: Alibaba cluster-trace-gpu-v2023 openb_pod_list/openb_node_list",
    )
    p.add_argument("--pods", required=True, help="openb_pod_list.csv")
    p.add_argument("--nodes", required=True, help="openb_node_list.csv")
    p.add_argument("--output", required=True, help="directory for workload.yaml and pods.jsonl")
    p.add_argument("--name", default="openb", help="the Workload's name")
    p.set_defaults(func=_cmd_import_trace)


def _cmd_import_trace(args: argparse.Namespace) -> int:
    from cluster_sched.workload.openb import import_openb

    path = import_openb(Path(args.pods), Path(args.nodes), Path(args.output), name=args.name)
    print(f"workload       {path}")
    return 0


def register_more() -> list[Any]:
    return [_register_compare, _register_import_trace]
