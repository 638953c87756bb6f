"""CLI commands beyond ``explain``: run, apply, serve."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_sched.errors import InvalidObjectError, UsageError
from cluster_sched.features import parse_feature_gates
from cluster_sched.kubeapi.cli import add_api_options, api_serving, check_api_args
from cluster_sched.scheduler.outage import add_outage_option
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import setup_tracing
from cluster_sched.workload.cli_args import (
    EXIT_INTERRUPTED,
    add_clock_options,
    add_executor_options,
    add_feature_gates_option,
    add_feeder_option,
    add_lenient_option,
    add_redis_option,
    port,
    seconds,
    seed,
)

Register = Callable[[Any], None]

#: Where ``serve --metrics-port`` listens unless told otherwise: this machine only.
DEFAULT_METRICS_ADDRESS = "127.0.0.1"


def _register_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run a whole evaluation of a workload")
    p.add_argument("workload", help="plain Kubernetes YAML, or a cluster-sched Workload file")
    p.add_argument("--config", help="KubeSchedulerConfiguration v1")
    p.add_argument("--seed", type=seed, default=None)
    p.add_argument(
        "--output",
        default=None,
        help="directory for placements.json, summary.json, report.html and plots/",
    )
    p.add_argument(
        "--no-report",
        action="store_true",
        help="with --output: skip report.html and plots/ (summary.json is complete anyway)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--group-timeout",
        type=seconds(),
        default=600.0,
        help="seconds a pod group may take (--clock real)",
    )
    add_tracing_options(p)
    add_lenient_option(p)
    _add_metrics_options(p)
    p.add_argument(
        "--metrics-linger",
        type=seconds(zero=True),
        default=0.0,
        metavar="SECONDS",
        help="with --metrics-port: keep serving the final metrics this long after the "
        "summary (Ctrl-C ends it early)",
    )
    add_executor_options(p)
    add_feeder_option(p)
    add_feature_gates_option(p)
    add_clock_options(p)
    add_redis_option(p, private_fallback=True)
    add_api_options(p, linger=True)
    p.set_defaults(func=_cmd_run)


def add_tracing_options(p: Any) -> None:
    """Where spans go: a collector, a file, the console (any together; none: off)."""
    p.add_argument(
        "--otlp-endpoint",
        default=None,
        help="OTLP/HTTP endpoint (default $OTEL_EXPORTER_OTLP_ENDPOINT); an unreachable "
        "one costs one warning line",
    )
    p.add_argument(
        "--trace-file",
        default=None,
        metavar="PATH",
        help="append spans to PATH as OTLP JSON lines (no collector needed)",
    )
    p.add_argument("--trace-console", action="store_true", help="print a line per span to stderr")


def _add_metrics_options(p: Any) -> None:
    p.add_argument(
        "--metrics-port",
        type=port,
        default=None,
        help="serve Prometheus metrics on this port (0: any free port, shown on stderr); "
        "a port in use exits 2 with one line on stderr",
    )
    p.add_argument(
        "--metrics-address",
        default=DEFAULT_METRICS_ADDRESS,
        help=f"interface the metrics server listens on (default {DEFAULT_METRICS_ADDRESS}; "
        "0.0.0.0 exposes it to the network)",
    )


def start_metrics(args: argparse.Namespace) -> Metrics:
    """The command's Metrics: serving on ``--metrics-port`` from now on, or disabled.
    A port that cannot be bound is a UsageError naming the option (exit 2)."""
    if args.metrics_port is None:
        return Metrics.disabled()
    metrics = Metrics()
    try:
        _server, port = metrics.start_http_server(args.metrics_port, addr=args.metrics_address)
    except OSError as err:
        reason = "address already in use" if err.errno == errno.EADDRINUSE else err.strerror
        raise UsageError(f"--metrics-port {args.metrics_port}: {reason or err}") from None
    if args.metrics_port == 0:
        print(f"metrics: http://{args.metrics_address}:{port}/metrics", file=sys.stderr, flush=True)
    return metrics


def print_summary(summary: dict[str, Any]) -> None:
    lat = summary["latency_ms"]
    att = summary["attempt_latency_ms"]
    virtual = summary.get("clock") == "virtual"
    if virtual:
        # Scheduling takes no simulated time: latency is the time pods were pending,
        # wall-clock figures say how fast the simulation ran.
        sim = summary.get("simulation_speed") or {}
        timing = [
            f"throughput     {summary['throughput']} pods per simulated s "
            f"(first pop to last bind, {summary['duration_s']} s simulated)",
            f"pending        p50 {lat['p50'] / 1e3:g} s  p90 {lat['p90'] / 1e3:g} s  "
            f"p99 {lat['p99'] / 1e3:g} s (simulated, queued to bound)",
            f"attempts/pod   mean {summary['attempts_per_pod']['mean']}  "
            f"max {summary['attempts_per_pod']['max']}",
            f"sim. speed     {sim.get('pods_per_wall_second', 0.0)} pods per wall second, "
            f"attempt p50 {att['p50']} ms, {sim.get('cpu_us_per_pod', 0.0)} µs CPU per pod "
            "(wall clock)",
        ]
    else:
        timing = [
            f"throughput     {summary['throughput']} pods/s (first pop to last bind, {summary['duration_s']} s)",
            f"latency        p50 {lat['p50']} ms  p90 {lat['p90']} ms  p99 {lat['p99']} ms (queued to bound)",
            f"attempt        p50 {att['p50']} ms  p90 {att['p90']} ms  p99 {att['p99']} ms (one scheduling cycle)",
            f"attempts/pod   mean {summary['attempts_per_pod']['mean']}  max {summary['attempts_per_pod']['max']}",
            f"cpu            {summary.get('process_cpu_us_per_pod', 0.0)} µs per pod in this process (first pop to last bind)",
        ]
    lines = [
        f"workload {summary['workload']}: {summary['nodes']} nodes, {summary['pods']} pods",
        f"scheduled      {summary['scheduled']}",
        f"unschedulable  {summary['unschedulable']}",
        f"gated          {summary.get('gated', 0)}",
        f"preempted      {summary['preempted']}",
        *timing,
    ]
    compiled = summary.get("compiled_path")
    if compiled:
        lines.append(
            f"compiled path  {compiled['shape_hits']} shape hits, "
            f"{compiled['shape_misses']} misses (answers from a pod shape's columns)"
        )
    for profile, batch in (summary.get("opportunistic_batching") or {}).items():
        attempts = " ".join(f"{k}={v}" for k, v in sorted(batch["attempts"].items()))
        flushes = " ".join(f"{k}={v}" for k, v in sorted(batch["flushes"].items()))
        lines.append(f"batching       {profile}: {attempts or '-'}; flushed {flushes or '-'}")
    placement = summary.get("placement")
    over = summary.get("over_time") or {}
    if virtual and over:
        lines.append(
            f"nodes in use   mean {over['nodes_in_use_mean']:.1f}, peak {over['nodes_in_use_max']:.0f}"
            f" of {summary['nodes']} (simulated time)"
        )
        util = over["utilisation_mean"]
        lines.append(
            "allocation     time mean "
            + ", ".join(f"{r} {v:.1%}" for r, v in util.items() if r != "pods")
        )
        for r, v in (over.get("unallocated_on_partly_used_nodes_mean") or {}).items():
            lines.append(
                f"fragmentation  {r}: {v:.1%} of capacity unallocated on partly used nodes (time mean)"
            )
    elif placement:
        cpu = placement["utilisation_used_nodes"]["cpu"]
        lines.append(
            f"nodes used     {placement['nodes_used']} of {placement['nodes_total']}"
            f"  (cpu on used nodes: mean {cpu['mean']:.1%}, p90 {cpu['p90']:.1%})"
        )
    waiting = summary.get("waiting") or {}
    if waiting.get("pods_waited") and not summary.get("unschedulable_reasons"):
        top = next(iter(waiting["failed_attempts_by_reason"]), "")
        lines.append(
            f"waited         {waiting['pods_waited']} pods failed at least one attempt "
            f"({waiting['failed_attempts']} failed attempts, most often: {top})"
        )
    for reason, pods in list((summary.get("unschedulable_reasons") or {}).items())[:5]:
        lines.append(f"unschedulable: {pods} pods: {reason}")
    for key in (summary.get("gated_pods") or [])[:5]:
        lines.append(f"gated: {key}")
    vt = summary.get("virtual_time")
    if vt:
        lines.append(
            f"virtual time   {vt['simulated_seconds']} s simulated in {vt['wall_seconds']} s "
            f"({vt['arrivals']} arrivals, {vt['completions']} completions, "
            f"{vt['running_at_end']} running at the end)"
        )
    for line in summary.get("invalid") or []:
        lines.append(f"skipped invalid object: {line}")
    created = summary.get("created_by_controllers") or {}
    if created:
        lines.append(
            f"controllers    {sum(created.values())} pods created by {len(created)} controllers"
        )
    if summary.get("terminal_pods_skipped"):
        lines.append(
            f"terminal       {summary['terminal_pods_skipped']} Succeeded/Failed pods left out"
        )
    print("\n".join(lines))


def _cmd_run(args: argparse.Namespace) -> int:
    from cluster_sched.workload.runner import RunOptions, run_evaluation

    check_api_args(args)
    metrics = start_metrics(args)
    result = run_evaluation(
        RunOptions(
            workload=args.workload,
            config=args.config,
            seed=args.seed,
            output=args.output,
            quiet=args.quiet,
            redis=args.redis,
            group_timeout=args.group_timeout,
            executor=args.executor,
            shards=args.shards,
            ray_address=args.ray_address,
            otlp_endpoint=args.otlp_endpoint,
            trace_file=args.trace_file,
            trace_console=args.trace_console,
            report=not args.no_report,
            batch_size=args.batch_size,
            compiled=args.compiled,
            shard_prefetch=args.shard_prefetch,
            shard_dispatch=args.shard_dispatch,
            shard_relay=args.shard_relay,
            feature_gates=args.feature_gates,
            lenient=args.lenient,
            metrics=metrics,
            clock=args.clock,
            horizon=args.horizon,
            api=lambda store, url: api_serving(args, store, url),
            record_results=args.record_results,
            feeder=args.feeder,
        )
    )
    for line in result.summary.get("warnings") or []:
        print(f"warning: {line}", file=sys.stderr)
    print_summary(result.summary)
    if args.output and not args.no_report:
        print(f"report         {Path(args.output) / 'report.html'}")
    if metrics.enabled and args.metrics_linger > 0:
        sys.stdout.flush()
        time.sleep(args.metrics_linger)  # the server thread keeps answering scrapes
    return 0


def _register_apply(sub: Any) -> None:
    p = sub.add_parser("apply", help="create or update objects in an existing store")
    p.add_argument(
        "-f", "--filename", action="append", required=True, help="manifest or Workload file"
    )
    add_redis_option(p, private_fallback=False)
    p.set_defaults(func=_cmd_apply)


def _cmd_apply(args: argparse.Namespace) -> int:
    from cluster_sched.redis_server import connect, resolve_url
    from cluster_sched.store.store import Store
    from cluster_sched.workload.spec import load_workload

    url = resolve_url(args.redis)
    if url is None:
        raise InvalidObjectError(
            "apply needs a store: pass --redis URL or set CLUSTER_SCHED_REDIS_URL"
        )
    store = Store(connect(url))
    invalid: list[str] = []
    total = 0
    for path in args.filename:
        w = load_workload(path)
        for line in w.warnings:
            print(f"warning: {line}", file=sys.stderr)
        invalid.extend(w.invalid)
        docs = [*w.objects, *w.node_docs]
        for group in w.pod_groups:
            docs.extend(group.manifests())
        for start in range(0, len(docs), 2000):
            results = store.apply_many(docs[start : start + 2000], source=path)
            total += len(results)
    for line in invalid:
        print(f"error: {line}", file=sys.stderr)
    print(f"applied {total} objects")
    return 2 if invalid else 0


def _register_serve(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run the coordinator against an existing store (Ctrl-C: exit 130, SIGTERM: 0)",
    )
    p.add_argument("--config", help="KubeSchedulerConfiguration v1")
    p.add_argument("--seed", type=seed, default=None)
    _add_metrics_options(p)
    add_tracing_options(p)
    add_executor_options(p)
    add_feature_gates_option(p)
    add_redis_option(p, private_fallback=False)
    add_outage_option(p)
    add_api_options(p)
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    check_api_args(args)  # before anything starts
    from cluster_sched.config.load import load_config, naming_config_file
    from cluster_sched.errors import StoreError
    from cluster_sched.gc_policy import survivors_frozen
    from cluster_sched.redis_server import connect, redact_url, resolve_url
    from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
    from cluster_sched.scheduler.coordinator import Coordinator
    from cluster_sched.scheduler.leader import standby
    from cluster_sched.scheduler.metrics_state import attach_metrics
    from cluster_sched.scheduler.outage import (
        StoreGuard,
        ensure_run_id,
        env_outage_timeout,
        first_contact,
        outage_timeout,
        serve_until,
    )
    from cluster_sched.store.fence import is_fenced_error
    from cluster_sched.store.store import Store

    url = resolve_url(args.redis)
    if url is None:
        raise InvalidObjectError(
            "serve needs a store: pass --redis URL or set CLUSTER_SCHED_REDIS_URL"
        )
    config = load_config(args.config)
    tracing = setup_tracing(
        args.otlp_endpoint, trace_file=args.trace_file, console=args.trace_console
    )
    metrics = start_metrics(args)
    timeout = (
        outage_timeout(args.store_outage_timeout)
        if args.store_outage_timeout is not None
        else env_outage_timeout()
    )
    stopped_by: int | None = None

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopped_by
        stopped_by = signum

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def contact() -> tuple[Any, Store, str]:
        client = connect(url, attempts=1)
        try:
            store = Store(client)
            return client, store, ensure_run_id(client, store.keys.prefix)
        except BaseException:
            client.close()
            raise

    # Started while Redis is down (or restarting): wait as a running coordinator would.
    reached = first_contact(
        contact, lambda: stopped_by is not None, timeout=timeout, metrics=metrics
    )
    if reached is None:
        tracing.shutdown()
        return EXIT_INTERRUPTED if stopped_by == signal.SIGINT else 0
    client, store, run_id = reached
    api = contextlib.ExitStack()  # the Kubernetes API (--api), up until serve ends
    api.enter_context(api_serving(args, store, url))
    guard = StoreGuard(
        client, prefix=store.keys.prefix, run_id=run_id, timeout=timeout, metrics=metrics
    )

    def start() -> Coordinator:
        # A fresh coordinator, also after an outage: it requeues pods left in flight,
        # reloads nominations and relists, as a restarted coordinator does.
        coord = new_scheduler(
            store,
            client,
            config,
            options=ExecutorOptions(
                executor=args.executor,
                shards=args.shards,
                ray_address=args.ray_address,
                config_path=args.config,
                redis_url=url,
                compiled=args.compiled,
                shard_prefetch=args.shard_prefetch,
                shard_dispatch=getattr(args, "shard_dispatch", "auto"),
                shard_relay=getattr(args, "shard_relay", "auto"),
            ),
            seed=args.seed,
            tracing=tracing,
            metrics=metrics,
            batch_size=args.batch_size,
            features=parse_feature_gates(args.feature_gates),
        )
        attach_metrics(coord, metrics)
        if args.record_results is not None:
            from cluster_sched.scheduler.explain.recording import install

            install(coord, args.record_results, args.seed)
        try:
            coord.start()
            coord.queue.run()
        except BaseException:
            coord.close()
            raise
        return coord

    def announce(coord: Any) -> None:
        if guard.outages == 0:
            shown = redact_url(url)  # the password stays out of logs
            print(json.dumps({"serving": shown, "profiles": sorted(coord.frameworks)}), flush=True)

    elector = standby(store, client, config, lambda: stopped_by is not None)
    if elector is not None and not elector.is_leader:
        api.close()
        tracing.shutdown()  # stopped while standing by: nothing was written
        return EXIT_INTERRUPTED if stopped_by == signal.SIGINT else 0
    try:
        # survivors_frozen: full collections skip what survived them (gc_policy);
        # profiles are built in start(): their errors name the configuration file
        with survivors_frozen(), naming_config_file(args.config):
            serve_until(
                start,
                guard,
                lambda: stopped_by is not None or (elector is not None and elector.lost),
                on_started=announce,
            )
    except StoreError as exc:
        if elector is None or not is_fenced_error(exc):
            raise
    finally:
        api.close()
        tracing.shutdown()
        if elector is not None:
            elector.close()
    if elector is not None and (elector.lost or stopped_by is None):
        print("leaderelection lost", file=sys.stderr)  # upstream's fatal OnStoppedLeading
        return 1
    if stopped_by == signal.SIGINT:
        # Ctrl-C: a clean stop all the same, reported as an interruption (exit 130).
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0  # SIGTERM: the orderly way to stop a deployment's coordinator


def register_commands() -> list[Register]:
    from cluster_sched.workload.more_commands import register_more

    return [_register_run, _register_apply, _register_serve, *register_more()]
