"""``cluster-sched run``: a whole evaluation of a workload against the real loop.

Objects and nodes are written to the store first, then each pod group in turn; the
coordinator runs in this thread, so the evaluation exercises exactly the path a
deployment does: store → watch → queue → cycle → binding → watch. The pods are written
by a client process beside it (``--feeder process``, ``workload.feeder``: what the
scheduler is charged for is what its watch brings) or, ``--feeder inline``, from this
thread between turns (the interleaving is then fixed by the loop's turns).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cluster_sched.clock import VirtualClock
from cluster_sched.config.load import load_config, naming_config_file
from cluster_sched.errors import UsageError
from cluster_sched.features import parse_feature_gates
from cluster_sched.gc_policy import collect_everything, survivors_frozen
from cluster_sched.queue.types import Location
from cluster_sched.redis_server import redis_session
from cluster_sched.report import report_summary
from cluster_sched.report.record import RunRecord
from cluster_sched.report.series import over_time_figures
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import DEFAULT_BATCH_SIZE, Coordinator
from cluster_sched.scheduler.metrics_state import attach_metrics
from cluster_sched.store.store import Store
from cluster_sched.telemetry.memory import peak_rss_bytes, redis_memory
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import setup_tracing
from cluster_sched.workload.feeder import (
    APPLY_BATCH,
    DEFAULT_FEEDER,
    FEEDERS,
    FeederProcess,
    InlineFeeder,
    group_feed,
    group_message,
)
from cluster_sched.workload.final_state import final_record, informer_view, listing
from cluster_sched.workload.spec import Workload, load_workload
from cluster_sched.workload.virtual import VirtualRun, VirtualStats, virtual_figures
from cluster_sched.workload.virtual_binding import InlineBindingExecutor

#: ``--clock`` choices.
CLOCKS = ("real", "virtual")

#: A burst is written a chunk every this many loop turns, one batch per turn (InlineFeeder).
FEED_TURNS = 8
#: A group that makes no progress for this long (seconds of wall time) is declared settled
#: even if pods still bounce through backoff: they are counted as unschedulable.
STALL_SECONDS = 30.0
#: While the loop is busy, ``drive``'s condition is checked at least this often (seconds).
UNTIL_EVERY = 0.01
#: While another process feeds and a turn found nothing to do, the loop waits this long
#: on the watch (milliseconds; new entries end the wait at once) instead of spinning.
FEED_WAIT_MS = 5


@dataclass(slots=True)
class RunOptions:
    workload: str
    config: str | None = None
    seed: int | None = None
    output: str | None = None
    quiet: bool = False
    redis: str | None = None
    prefix: str = "{cs}"
    executor: str = "local"
    shards: int = 1
    ray_address: str | None = None
    otlp_endpoint: str | None = None
    #: append spans to this file as OTLP JSON lines
    trace_file: str | None = None
    #: print a line per span to stderr
    trace_console: bool = False
    #: pods popped per queue round trip (1: the plain serial loop)
    batch_size: int = DEFAULT_BATCH_SIZE
    #: the compiled path for attempts on the in-process table
    compiled: bool = True
    #: shards answer a popped batch's first Filter questions ahead (``shard_prefetch``)
    shard_prefetch: bool = True
    #: the compiled path's attempts: "auto" (``shard_dispatch``), "shards", "replica"
    shard_dispatch: str = "auto"
    #: Ray shards' chunks through one relay actor: "auto" (``DispatchRule.use_relay``), "on", "off"
    shard_relay: str = "auto"
    #: ``--feature-gates`` text (v1.35 defaults when None)
    feature_gates: str | None = None
    #: stop a group after this many seconds even if pods are still pending
    group_timeout: float = 600.0
    #: with ``output``: also write report.html and plots/*.png (matplotlib, after the run)
    report: bool = True
    #: unknown fields in a snapshot are warnings instead of errors
    lenient: bool = False
    #: the run's metrics (already serving, if the caller serves them); None: disabled
    metrics: Metrics | None = None
    #: "real" (the wall clock) or "virtual" (simulated time, ``workload.virtual``)
    clock: str = "real"
    #: virtual clock only: stop after this many simulated seconds (None: run it out)
    horizon: float | None = None
    #: context around the run given its store and Redis URL (``run --api``'s API)
    api: Callable[[Store, str], AbstractContextManager[Any]] | None = None
    #: ``--record-results``: the label selector of pods that get the simulator's result
    #: annotations (None: off, nothing recorded)
    record_results: str | None = None
    #: who writes the pod groups: "process" (a client process, ``workload.feeder``) or
    #: "inline" (this thread, between turns)
    feeder: str = DEFAULT_FEEDER


@dataclass(slots=True)
class RunResult:
    summary: dict[str, Any]
    placements: dict[str, str]
    invalid: list[str] = field(default_factory=list)
    #: what the report is drawn from (compare overlays the runs' series)
    record: RunRecord | None = None


def _settled(coord: Coordinator) -> bool:
    counts = coord.queue.counts()
    return (
        counts[Location.ACTIVE] == 0
        and counts[Location.BACKOFF] == 0
        and counts[Location.IN_FLIGHT] == 0
        and coord.binder.pending() == 0
    )


@contextmanager
def _progress(quiet: bool, total: int) -> Iterator[Any]:
    if quiet:
        yield None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as progress:
        yield progress


def drive(
    coord: Coordinator,
    *,
    timeout: float,
    feed: Callable[[], bool] | None = None,
    until: Callable[[], bool] | None = None,
    tick: Callable[[], None] | None = None,
    stall_seconds: float | None = STALL_SECONDS,
    on_bound: Callable[[int], None] | None = None,
    feed_elsewhere: bool = False,
) -> bool:
    """Run the coordinator loop in this thread until the work at hand is done.

    ``feed()`` writes the next objects and returns True while it has more; ``tick()``
    runs every turn for work beside scheduling (paced deletes, churn, samplers). Done:
    ``until()`` holds once feeding is over, or, without ``until``, the queue settled
    (nothing active, backing off or in flight, no binding pending). ``on_bound(n)``: the
    bound-pod count, when it changes. ``feed_elsewhere``: ``feed()`` only watches
    another process write (``ProcessFeed``), so a turn with nothing to schedule waits on
    the watch instead of calling it again at once.

    True when done; False after ``timeout`` seconds or (``stall_seconds`` set) that long
    with no new binding and none pending: the caller decides what that means.
    """
    deadline = time.monotonic() + timeout
    last_progress = last_check = time.monotonic()
    last_bound = -1
    while True:
        feeding = feed() if feed is not None else False
        if tick is not None:
            tick()
        if not feeding and coord.binder.pending():  # bindings in flight: wait on the binder,
            coord.binder.wait_idle(0.02)  # a BLPOP no landed binding wakes times out at hz
        worked = coord.step(pop_timeout=0.0 if feeding or coord.binder.pending() else 0.02)
        bound = len(coord.stats.bound_node)
        now = time.monotonic()
        progressed = bound != last_bound
        if progressed:
            last_bound = bound
            last_progress = now
            if on_bound is not None:
                on_bound(bound)
        if until is not None and not feeding and (progressed or now - last_check >= UNTIL_EVERY):
            last_check = now
            if until():
                return True
        if worked:
            continue
        if feeding:
            if feed_elsewhere:
                coord.poll_informer(block_ms=FEED_WAIT_MS)
            continue
        coord.process_binding_outcomes()
        coord.flush_done()
        if until is not None:
            coord.poll_informer()
            if until():
                return True
        elif _settled(coord):
            coord.poll_informer()
            return True
        now = time.monotonic()
        if now > deadline or (
            stall_seconds is not None
            and now - last_progress > stall_seconds
            and coord.binder.pending() == 0
        ):
            return False


def finish_bindings(coord: Coordinator, wait: float = 10.0) -> None:
    """Let bindings still in flight arrive through the watch (at most ``wait`` seconds)."""
    end = time.monotonic() + wait
    while (coord.binder.pending() or coord.cache.assumed) and time.monotonic() < end:
        coord.process_binding_outcomes()
        coord.poll_informer(block_ms=10)
    coord.poll_informer()


def run_workload(
    workload: Workload,
    coord: Coordinator,
    store: Store,
    *,
    quiet: bool,
    group_timeout: float,
    feeder: FeederProcess | None = None,
) -> None:
    """Write the objects and nodes, then feed and schedule each group in turn: from
    ``feeder``, a client process, if given (nodes too: upstream's client creates them),
    else from this thread (``InlineFeeder``). The scheduler starts once the nodes are
    written either way, and lists them."""
    if feeder is not None:
        objects = workload.objects  # one call, as inline: classes before their users
        for what, docs, chunk in (
            ("objects", objects, len(objects)),
            ("nodes", workload.node_docs, APPLY_BATCH),
        ):
            if docs:
                feeder.submit(group_message(docs=docs, chunk=chunk), f"writing the {what}")
                feeder.wait(group_timeout)
    else:
        store.apply_many(workload.objects)
        for start in range(0, len(workload.node_docs), APPLY_BATCH):
            store.apply_many(workload.node_docs[start : start + APPLY_BATCH])
    coord.start()
    coord.queue.run()
    with _progress(quiet, workload.total_pods) as progress:
        task = progress.add_task("scheduling", total=workload.total_pods) if progress else None

        def show(bound: int) -> None:
            if progress is not None:
                progress.update(task, completed=bound)

        for group in workload.pod_groups:
            chunk = FEED_TURNS * coord.batch_size
            if feeder is not None:
                feed = group_feed(feeder, coord.informer, group, chunk, FEED_TURNS).feed
            else:
                feed = InlineFeeder(store, group, chunk=chunk, every=FEED_TURNS).feed
            drive(
                coord,
                feed=feed,
                timeout=group_timeout,
                on_bound=show,
                feed_elsewhere=feeder is not None,
            )
        finish_bindings(coord)
        show(len(coord.stats.bound_node))


def _count_completed(
    groups: dict[str, Any], workload: Workload, completed: set[str], record: RunRecord
) -> None:
    """Virtual runs: per group, ``scheduled`` counts every pod the scheduler ever placed
    (as the run's own figure does), ``completed`` the pods deleted because their
    lifetime ended (not ``deleted``, which keeps preemption victims and the like) and
    ``running`` those still bound at the end."""
    placed = {k for k in record.stats.bound_at if k in record.stats.attempts}
    bound = {p.key for p in record.bound}
    for group in workload.pod_groups:
        figures = groups.get(group.name)
        if figures is not None:
            keys = group.pod_keys()
            done = sum(1 for k in keys if k in completed)
            figures["scheduled"] = sum(1 for k in keys if k in placed)
            figures["running"] = sum(1 for k in keys if k in bound)
            figures["completed"] = done
            figures["deleted"] = max(
                0, figures["pods"] - figures["running"] - figures["unschedulable"] - done
            )


def gated_pods(coord: Coordinator) -> list[str]:
    """Keys of the queued pods a PreEnqueue plugin holds back (schedulingGates), sorted."""
    infos, _ = coord.queue.pending_pods()
    return sorted(info.pod_key for info in infos if info.gated)


def _check_clock(opts: RunOptions) -> None:
    if opts.clock not in CLOCKS:
        raise UsageError(f"--clock must be one of {', '.join(CLOCKS)}, got {opts.clock!r}")
    if opts.feeder not in FEEDERS:
        raise UsageError(f"--feeder must be one of {', '.join(FEEDERS)}, got {opts.feeder!r}")
    if opts.clock == "virtual" and opts.executor == "ray":
        raise UsageError(
            "--clock virtual runs the scheduler in this process: use --executor local or shards"
        )


def run_evaluation(opts: RunOptions) -> RunResult:
    """One evaluation, with the survivors of full collections frozen (``gc_policy``)."""
    # Profiles are built inside (plugins imported, placed, given their args): their
    # errors name the configuration file, as errors found loading it do.
    with survivors_frozen(), naming_config_file(opts.config):
        return _run_evaluation(opts)


def _run_evaluation(opts: RunOptions) -> RunResult:
    _check_clock(opts)
    workload = load_workload(opts.workload, seed=opts.seed or 0, lenient=opts.lenient)
    config = load_config(opts.config, lenient=opts.lenient)
    features = parse_feature_gates(opts.feature_gates)
    tracing = setup_tracing(
        opts.otlp_endpoint, trace_file=opts.trace_file, console=opts.trace_console
    )
    metrics = opts.metrics or Metrics.disabled()
    virtual = VirtualClock() if opts.clock == "virtual" else None
    vstats: VirtualStats | None = None
    completed: set[str] = set()
    vrun: VirtualRun | None = None
    with redis_session(opts.redis) as session, ExitStack() as extras:
        store = Store(session.client, prefix=opts.prefix)
        if opts.api is not None:
            extras.enter_context(opts.api(store, session.url))
        coord = new_scheduler(
            store,
            session.client,
            config,
            options=ExecutorOptions(
                executor=opts.executor,
                shards=opts.shards,
                ray_address=opts.ray_address,
                config_path=opts.config,
                redis_url=session.url,
                compiled=opts.compiled,
                shard_prefetch=opts.shard_prefetch,
                shard_dispatch=opts.shard_dispatch,
                shard_relay=opts.shard_relay,
            ),
            seed=opts.seed,
            prefix=opts.prefix,
            tracing=tracing,
            metrics=metrics,
            batch_size=opts.batch_size,
            features=features,
            clock=virtual,
            binding_executor=InlineBindingExecutor if virtual is not None else None,
        )
        attach_metrics(coord, metrics)
        if opts.record_results is not None:
            from cluster_sched.scheduler.explain.recording import install

            install(coord, opts.record_results, opts.seed)
        try:
            if virtual is not None:
                vrun = VirtualRun(
                    coord, store, virtual, workload, seed=opts.seed, horizon=opts.horizon
                )
                vstats = vrun.run()
                completed = vrun.completed
            else:
                feeder = None
                if opts.feeder == "process":
                    feeder = FeederProcess(session.url, opts.prefix)
                    extras.callback(feeder.close)
                run_workload(
                    workload,
                    coord,
                    store,
                    quiet=opts.quiet,
                    group_timeout=opts.group_timeout,
                    feeder=feeder,
                )
            counts = coord.queue.counts()
            gated = gated_pods(coord)
            # Gated pods wait in the unschedulable pool without ever being attempted:
            # reported apart (upstream's pending_pods{queue="gated"}).
            unschedulable = counts[Location.UNSCHEDULABLE] + counts[Location.BACKOFF] - len(gated)
            summary = coord.stats.summary(unschedulable)
            summary["gated"] = len(gated)
            summary["gated_pods"] = gated
            # The record lists the store as the loop left it. Closing writes the bindings
            # still in flight, so if any are, the listing is read now (decoded later).
            taken = listing(store) if coord.binder.pending() else None
        finally:
            metrics.freeze_state()  # a server that outlives the run shows its last state
            coord.close()
            tracing.shutdown()
        claims = store.list("ResourceClaim") if opts.output else []
        stats = coord.stats
        invalid: list[str] = workload.invalid + coord.invalid_objects
        fast = coord.algorithm.fast
        compiled = fast.counters() if fast is not None else None
        counters = getattr(coord.source, "speculation_counters", None)
        speculation = counters() if counters is not None else None
        batching = {
            profile: {"attempts": dict(b.attempts), "flushes": dict(b.flushes)}
            for profile, b in sorted(coord.algorithm.batches.items())
        }
        # The loop is over: all of it but the informer's nodes and pods is collected
        # (``final_record``'s release: before a listing is decoded, after a record of the
        # informer's objects), and the peak resident set is read after it: the true peak.
        view = informer_view(coord.informer)
        del coord, vrun, fast, counters
        by_group = {g.name: g.pod_keys() for g in workload.pod_groups}
        record, placements = final_record(view, store, taken, stats, by_group, collect_everything)
        del view
        memory = {"coordinator_peak_rss_bytes": peak_rss_bytes(), **redis_memory(session.client)}
    summary["invalid"] = invalid
    summary["warnings"] = [*config.warnings, *workload.warnings]
    summary["terminal_pods_skipped"] = len(workload.terminal)
    summary["created_by_controllers"] = dict(workload.created)
    summary["workload"] = workload.name
    summary["pods"] = workload.total_pods
    summary["nodes"] = len(workload.node_docs)
    summary["feature_gates"] = features.as_dict()
    summary["memory"] = memory
    if compiled is not None:
        summary["compiled_path"] = compiled
    if speculation is not None:
        summary["shard_speculation"] = speculation
    if batching:
        summary["opportunistic_batching"] = batching
    if vstats is not None:
        summary.update(virtual_figures(stats, vstats))
    # Everything below runs after the loop has stopped: the report costs the run nothing.
    summary.update(
        report_summary(
            record,
            config=config,
            config_file=opts.config,
            seed=opts.seed,
            virtual=vstats is not None,
        )
    )
    summary["over_time"] = over_time_figures(record)
    if vstats is not None:
        groups = summary["groups"]
        assert isinstance(groups, dict)
        _count_completed(groups, workload, completed, record)
    result = RunResult(summary, placements, list(invalid), record)
    if opts.output:
        out = Path(opts.output)
        out.mkdir(parents=True, exist_ok=True)
        (out / "placements.json").write_text(json.dumps(placements, indent=1) + "\n")
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if claims:  # what ``kubectl get resourceclaims -A -o json`` prints
            listing_doc = {"apiVersion": "v1", "kind": "List", "items": claims}
            (out / "resourceclaims.json").write_text(json.dumps(listing_doc, indent=1) + "\n")
        if opts.report:
            from cluster_sched.report.render import write_report

            write_report(record, summary, out)
    return result
