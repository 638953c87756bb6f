"""``cluster-sched perf CONFIG.yaml``: upstream scheduler_perf test cases, run as they are.

Every selected workload is planned first (so a bad config fails before anything runs),
then each runs on a fresh store and a fresh scheduler, as upstream starts a fresh API
server per workload. Per workload: ``DIR/<test>_<workload>.json`` holds upstream's data
items, and one line says PASS or FAIL against the workload's ``threshold``.

Exit code: 0 every workload passed, 1 one failed (a threshold missed, pods never
scheduled), 2 the config or the environment is wrong.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_sched.config.load import load_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import InvalidObjectError
from cluster_sched.features import FeatureGates, parse_feature_gates
from cluster_sched.gc_policy import survivors_frozen
from cluster_sched.redis_server import redis_session, resolve_url
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.scheduler.metrics_state import attach_metrics
from cluster_sched.store.store import Store
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.workload.cli_args import (
    EXIT_FAILED,
    EXIT_OK,
    add_executor_options,
    add_feature_gates_option,
    add_feeder_option,
    add_redis_option,
    seconds,
    seed,
)
from cluster_sched.workload.feeder import DEFAULT_FEEDER, FeederProcess
from cluster_sched.workload.perf.config import (
    PlannedWorkload,
    feature_gates_of,
    load_test_cases,
    select_workloads,
)
from cluster_sched.workload.perf.executor import Outcome, WorkloadExecutor
from cluster_sched.workload.perf.metrics import write_data_items

__all__ = ["register_perf", "run_perf", "run_workload", "verdict"]

#: Seconds an op may wait for its pods (upstream: 10 minutes).
DEFAULT_TIMEOUT = 600.0


def register_perf(sub: Any) -> None:
    p = sub.add_parser(
        "perf",
        help="run upstream scheduler_perf test cases (a performance-config.yaml)",
        description=(
            "Run the test cases of an upstream scheduler_perf performance-config.yaml "
            "through the real scheduler and write upstream's data items per workload."
        ),
    )
    p.add_argument("config", metavar="CONFIG.yaml", help="a scheduler_perf performance-config.yaml")
    p.add_argument(
        "--test", metavar="NAME", help="test cases to run (shell wildcards; default all)"
    )
    p.add_argument(
        "--workload", metavar="NAME", help="workloads to run (shell wildcards; default all)"
    )
    p.add_argument(
        "--output",
        default=".",
        metavar="DIR",
        help="directory for <test>_<workload>.json (default: the current directory)",
    )
    p.add_argument(
        "--topic",
        default="",
        metavar="NAME",
        help=(
            "topic name for thresholds written as a topic -> value map (upstream passes "
            "one per benchmark, e.g. dra; default: the empty topic)"
        ),
    )
    p.add_argument("--seed", type=seed, default=None, help="seed for tie-breaking among top nodes")
    p.add_argument(
        "--timeout",
        type=seconds(),
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long an op may wait for its pods (default {DEFAULT_TIMEOUT:g}, as upstream)",
    )
    add_executor_options(p)
    add_feeder_option(p)
    add_redis_option(p, private_fallback=True)
    add_feature_gates_option(p)
    p.set_defaults(func=_cmd_perf)


def cli_features(args: argparse.Namespace) -> FeatureGates:
    """``--feature-gates`` (absent in callers that build their own namespace)."""
    return parse_feature_gates(getattr(args, "feature_gates", None))


def batching_summary(coord: Coordinator) -> list[str]:
    """OpportunisticBatching's counters per profile (upstream's metric labels), one line
    each; nothing for a profile that never kept a list (no pod was signable)."""
    out = []
    for profile, batch in sorted(coord.algorithm.batches.items()):
        if set(batch.attempts) <= {"no_hint"} and set(batch.flushes) <= {"pod_not_batchable"}:
            continue
        attempts = " ".join(f"{k}={v}" for k, v in sorted(batch.attempts.items()))
        flushes = " ".join(f"{k}={v}" for k, v in sorted(batch.flushes.items()))
        out.append(
            f"{profile}: scheduler_batch_attempts_total {attempts or '-'}; "
            f"scheduler_batch_cache_flushed_total {flushes or '-'}"
        )
    return out


def _collect(into: list[str]) -> Callable[[Store, Coordinator], None]:
    def inspect(_store: Store, coord: Coordinator) -> None:
        into.extend(batching_summary(coord))

    return inspect


def _cmd_perf(args: argparse.Namespace) -> int:
    return run_perf(args)


def _output_dir(path: str) -> Path:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InvalidObjectError("is not a directory (--output)", source=path)
    return out


def run_perf(args: argparse.Namespace) -> int:
    planned = select_workloads(load_test_cases(args.config), args.test, args.workload, args.config)
    for p in planned:
        p.workload.threshold = p.workload.for_topic(getattr(args, "topic", ""))
    configs: dict[str, SchedulerConfiguration] = {}
    for p in planned:
        path = p.case.scheduler_config_path
        key = str(path) if path is not None else ""
        if key not in configs:
            configs[key] = load_config(key or None)
    out = _output_dir(args.output)
    failed = 0
    for p in planned:
        _features, warnings = feature_gates_of(p.feature_gates, cli_features(args))
        for warning in warnings:
            print(f"warning: {p.name}: {warning}", file=sys.stderr)
        print(f"running {p.name}", flush=True)
        path = p.case.scheduler_config_path
        batching: list[str] = []
        with survivors_frozen():  # full collections skip what survived them (gc_policy)
            outcome = run_workload(
                p, configs[str(path) if path is not None else ""], args, _collect(batching)
            )
        for line_ in batching:
            print(f"  {line_}", flush=True)
        for warning in outcome.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if outcome.items:
            target = out / f"{p.case.name}_{p.workload.name}.json".replace("/", "_")
            write_data_items(target, outcome.items)
        line = verdict(p, outcome)
        failed += line.startswith("FAIL")
        print(line, flush=True)
    return EXIT_FAILED if failed else EXIT_OK


def run_workload(
    planned: PlannedWorkload,
    config: SchedulerConfiguration,
    args: argparse.Namespace,
    inspect: Callable[[Store, Coordinator], None] | None = None,
) -> Outcome:
    """One workload on a fresh store (its own key prefix on a shared Redis, removed
    afterwards) and a fresh scheduler with Prometheus metrics on, as upstream measures.

    ``inspect(store, coordinator)`` sees the final state before it is torn down (tests
    check the placements with an independent checker there)."""
    features = feature_gates_of(planned.feature_gates, cli_features(args))[0]
    shared = resolve_url(args.redis) is not None
    prefix = f"{{csperf-{uuid.uuid4().hex[:12]}}}" if shared else "{cs}"
    feeder: FeederProcess | None = None
    with redis_session(args.redis) as session:
        store = Store(session.client, prefix=prefix)
        coord = new_scheduler(
            store,
            session.client,
            config,
            options=ExecutorOptions(
                executor=args.executor,
                shards=args.shards,
                ray_address=args.ray_address,
                config_path=str(planned.case.scheduler_config_path or "") or None,
                redis_url=session.url,
                compiled=args.compiled,
                shard_prefetch=args.shard_prefetch,
                shard_dispatch=getattr(args, "shard_dispatch", "auto"),
                shard_relay=getattr(args, "shard_relay", "auto"),
            ),
            seed=args.seed,
            prefix=prefix,
            batch_size=args.batch_size,
            metrics=Metrics(),
            features=features,
        )
        try:
            attach_metrics(coord, coord.metrics)  # pending pods incl. gated, at scrape
            coord.start()
            coord.queue.run()
            if getattr(args, "feeder", DEFAULT_FEEDER) == "process":
                feeder = FeederProcess(session.url, prefix)
            executor = WorkloadExecutor(
                planned,
                coord,
                store,
                timeout=args.timeout,
                seed=args.seed,
                features=features,
                feeder=feeder,
            )
            outcome = executor.run()
            if inspect is not None:
                inspect(store, coord)
            return outcome
        finally:
            if feeder is not None:
                feeder.close()
            coord.close()
            if shared:
                keys = list(session.client.scan_iter(match=f"{prefix}*", count=1000))
                for start in range(0, len(keys), 1000):
                    session.client.unlink(*keys[start : start + 1000])


def verdict(planned: PlannedWorkload, outcome: Outcome) -> str:
    """``PASS|FAIL <test>/<workload>: ...`` against the workload's threshold (upstream
    compares the selected metric's bucket; 0 means no threshold)."""
    w = planned.workload
    sel = w.selector
    if outcome.failures:
        return f"FAIL {planned.name}: " + "; ".join(outcome.failures)
    measured = [
        i
        for i in outcome.items
        if i.labels.get("Metric") == sel.name
        and all(i.labels.get(k) == v for k, v in sel.labels.items())
        and sel.data_bucket in i.data
    ]
    if not measured:
        return f"FAIL {planned.name}: no data for {sel.name} {sel.data_bucket}"
    item = measured[0]
    value = f"{sel.name} {sel.data_bucket} {item.data[sel.data_bucket]:.1f} {item.unit}"
    if w.threshold == 0:
        return f"PASS {planned.name}: {value} (no threshold)"
    op = "<" if sel.expect_lower else ">"
    return f"PASS {planned.name}: {value} {op} threshold {w.threshold:g}"
