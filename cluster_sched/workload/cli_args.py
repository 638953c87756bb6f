"""Command-line options and exit codes shared by the commands (run, perf, apply, serve).

One definition per option, so every command's ``--help`` says the same true thing.
"""

from __future__ import annotations

import argparse

from cluster_sched.scheduler.assembly import EXECUTORS
from cluster_sched.scheduler.coordinator import DEFAULT_BATCH_SIZE

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "add_clock_options",
    "add_executor_options",
    "add_feature_gates_option",
    "add_lenient_option",
    "add_redis_option",
]

EXIT_OK = 0
"""Done, and everything passed."""
EXIT_FAILED = 1
"""An evaluation ran but something failed (a perf threshold missed, pods never scheduled)."""
EXIT_USAGE = 2
"""Usage or input error: a bad option, manifest, config or path; Redis unreachable."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C), as a shell reports a process SIGINT ended."""


def add_redis_option(p: argparse.ArgumentParser, *, private_fallback: bool) -> None:
    """``--redis URL``. Commands that run a whole evaluation start a private
    redis-server when no URL is given; commands that work on an existing store
    (apply, serve) need one and say so."""
    if private_fallback:
        text = (
            "Redis URL of the store (default: $CLUSTER_SCHED_REDIS_URL, else a private "
            "redis-server started for this run)"
        )
    else:
        text = (
            "Redis URL of an existing store (default: $CLUSTER_SCHED_REDIS_URL; "
            "one of them is required)"
        )
    p.add_argument("--redis", default=None, metavar="URL", help=text)


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """``--executor``, ``--shards``, ``--batch-size``, ``--ray-address``: where and how
    the cycles run."""
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where Filter/Score run: the coordinator's table, in-process shards, or Ray actors",
    )
    p.add_argument("--shards", type=int, default=1, help="node shards for --executor shards|ray")
    p.add_argument(
        "--compiled",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="attempts on the in-process table take the compiled (numba) path when it applies",
    )
    p.add_argument(
        "--shard-prefetch",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="shards answer a popped batch's first Filter questions in one call per 16 "
        "pods (no: one call per attempt, to measure the per-pod protocol)",
    )
    p.add_argument(
        "--shard-dispatch",
        choices=("auto", "shards", "replica"),
        default="auto",
        help="attempts the compiled path can take: by the measured-cost rule (auto), "
        "always to the shards' reductions, or always on the coordinator's replica",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=DEFAULT_BATCH_SIZE,
        help="pods popped per queue round trip and scheduled in order (1: pop one at a time)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="join an existing Ray cluster (default: start a local one)",
    )


def add_feature_gates_option(p: argparse.ArgumentParser) -> None:
    """``--feature-gates Name=true,Name2=false``: upstream's flag, v1.35 defaults."""
    p.add_argument(
        "--feature-gates",
        default=None,
        metavar="Name=bool,...",
        help="switch kube-scheduler feature gates (v1.35 defaults; see the README's list)",
    )


def add_lenient_option(p: argparse.ArgumentParser) -> None:
    """``--lenient``: a field Kubernetes does not know is a warning, not an error."""
    p.add_argument(
        "--lenient",
        action="store_true",
        help="a field Kubernetes does not know (a typo) is a warning instead of an error",
    )


def add_clock_options(p: argparse.ArgumentParser) -> None:
    """``--clock real|virtual`` and ``--horizon``: whether the run waits for real time or
    jumps through simulated time (pod lifetimes, arrival processes, traces)."""
    p.add_argument(
        "--clock",
        choices=("real", "virtual"),
        default="real",
        help="virtual: simulated time that jumps to the next event (arrival, completion, "
        "backoff/flush, timeout); results repeat exactly for a seed",
    )
    p.add_argument(
        "--horizon",
        type=float,
        default=None,
        metavar="SECONDS",
        help="--clock virtual: stop after this many simulated seconds",
    )
