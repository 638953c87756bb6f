"""Building a scheduler from its configuration, store and executor (upstream scheduler.New).

The one place that wires the parts together: the cache and the node source for the
chosen executor (in-process table, in-process shards, Ray shard actors), one Framework
per profile with a handle that sees the cache's Snapshot, the nominator and the
preemption executor; the Redis scheduling queue; the informer and its event handlers;
the binding executor (threads, or Ray tasks); the failure handler and the cycle.
``cluster-sched run``, ``serve`` and the benchmarks all come through here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.clock import Clock, SystemClock
from cluster_sched.config.types import Profile, SchedulerConfiguration
from cluster_sched.features import POP_FROM_BACKOFF_Q, FeatureGates
from cluster_sched.framework.events import ClusterEvent, ClusterEventWithHint
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.waiting_pods import WaitingPods
from cluster_sched.kernels import warm_up
from cluster_sched.kernels.run import warm_up_run
from cluster_sched.plugins.defaultpreemption.reprieve import warm_up as warm_up_reprieve
from cluster_sched.queue.nominator import Nominator
from cluster_sched.queue.scheduling_queue import SchedulingQueue
from cluster_sched.queue.types import QueuedPodInfo, SortKey, priority_sort_key
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.binding import BindingExecutor, LocalBindingExecutor
from cluster_sched.scheduler.binding_cycle import store_binder
from cluster_sched.scheduler.coordinator import DEFAULT_BATCH_SIZE, Coordinator, SchedulerParts
from cluster_sched.scheduler.event_handlers import EventHandlers
from cluster_sched.scheduler.failure import FailureHandler
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.scheduler.nodesource import LocalSource, NodeSource
from cluster_sched.scheduler.preemption_executor import StorePreemptionExecutor
from cluster_sched.scheduler.profile import new_frameworks
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from cluster_sched.scheduler.shards.source import (
    InProcessShardClient,
    ShardClient,
    ShardedSource,
    ShardRouter,
)
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.store import Store
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import DISABLED, Tracing

__all__ = ["EXECUTORS", "ExecutorOptions", "new_ray_shard_clients", "new_scheduler"]

#: ``--executor`` values: Filter/Score on the coordinator's table, on in-process shards,
#: or on Ray shard actors (with binding cycles as Ray tasks).
EXECUTORS = ("local", "shards", "ray")


@dataclass(frozen=True, slots=True)
class ExecutorOptions:
    """Where Filter/Score and binding cycles run."""

    executor: str = "local"
    shards: int = 1
    ray_address: str | None = None
    #: the configuration file, for Ray workers that rebuild the Frameworks
    config_path: str | None = None
    #: the store's URL, for Ray binding tasks that open their own connection
    redis_url: str | None = None
    #: attempts on the in-process table take the compiled path when it applies
    compiled: bool = True
    #: shards answer a popped batch's first Filter questions ahead (``shards.prefetch``)
    shard_prefetch: bool = True
    #: the compiled path's attempts: "auto" (``shards.dispatch``'s rule), "shards", "replica"
    shard_dispatch: str = "auto"
    #: the next batch to the shards while this one is committed (``shards.pipeline``)
    shard_pipeline: bool = True
    #: Ray shards: the reduced protocol's chunks through one relay actor, "auto"
    #: (``DispatchRule.use_relay``), "on", "off" (``workers.ray_relay``)
    shard_relay: str = "auto"


def new_ray_shard_clients(options: ExecutorOptions, seed: int | None) -> list[ShardClient]:
    """One Ray actor per shard (started, or joined on ``options.ray_address``). Not
    waited for: they start while the caller loads the store, and the coordinator's
    start waits for them before their first call (``ReducedCalls.preload``)."""
    from workers.ray_shard import ray_shard_clients

    return list(
        ray_shard_clients(
            options.shards,
            config_path=options.config_path,
            seed=seed or 0,
            address=options.ray_address,
            wait=False,
            relay=DispatchRule(relay=options.shard_relay).use_relay(options.shards),
        )
    )


def _binding_executor(
    options: ExecutorOptions,
    store: Store,
    frameworks: dict[str, Framework],
    tracing: Tracing,
    mark: str = "",
) -> BindingExecutor:
    if options.executor == "ray":
        from workers.ray_binding import ray_binding_executor

        if options.redis_url is None:
            raise ValueError("the Ray binding executor needs the store's redis_url")
        factory = ray_binding_executor(
            redis_url=options.redis_url,
            config_path=options.config_path,
            tracing=tracing,
            mark=mark,
        )
        return factory(store, frameworks)  # type: ignore[no-any-return]
    return LocalBindingExecutor(store, frameworks, tracing=tracing, mark=mark)


def new_scheduler(
    store: Store,
    queue_client: Any,
    config: SchedulerConfiguration,
    *,
    options: ExecutorOptions | None = None,
    clock: Clock | None = None,
    seed: int | None = None,
    prefix: str = "{cs}",
    tracing: Tracing | None = None,
    metrics: Metrics | None = None,
    shard_clients: Callable[[int], list[ShardClient]] | None = None,
    binding_executor: Callable[[Store, dict[str, Framework]], BindingExecutor] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    features: FeatureGates | None = None,
) -> Coordinator:
    """A ready-to-start coordinator. ``shard_clients`` / ``binding_executor`` override
    what ``options`` would build (tests inject their own)."""
    options = options or ExecutorOptions()
    features = features or FeatureGates()
    tracing = tracing or DISABLED
    metrics = metrics or Metrics.disabled()
    clock = clock or SystemClock()
    rng = random.Random(seed)
    source: NodeSource
    if options.executor == "local":
        cache = Cache(clock=clock)
        source = LocalSource(cache.sink.table)  # type: ignore[attr-defined]
    else:
        router = ShardRouter(options.shards)
        cache = Cache(router, clock=clock)
        if shard_clients is not None:
            clients = shard_clients(options.shards)
        elif options.executor == "ray":
            clients = new_ray_shard_clients(options, seed)
        else:
            clients = [
                InProcessShardClient(ShardCore(i, config, seed=seed or 0))
                for i in range(options.shards)
            ]
            for client in clients:
                # in-process shards read the coordinator's cluster-wide facts directly
                for fwk in client.core.frameworks.values():  # type: ignore[attr-defined]
                    fwk.handle.snapshot = cache.snapshot
        source = ShardedSource(
            router,
            clients,
            prefetch=options.shard_prefetch,
            dispatch=DispatchRule(
                options.shard_dispatch,
                pipeline=options.shard_pipeline,
                shards_apart=options.executor == "ray",
                relay=options.shard_relay if options.executor == "ray" else "off",
            ),
        )
    stats = RunStats()
    pods: dict[str, Pod] = {}  # the informer's pods, read by every part below
    nominator = Nominator(queue_client, prefix=prefix, pod_lookup=pods.get)
    frameworks: dict[str, Framework] = {}
    preemption = StorePreemptionExecutor(store, frameworks, nominator)

    def make_handle(profile: Profile) -> Handle:
        return Handle(
            profile_name=profile.scheduler_name,
            waiting_pods=WaitingPods(clock),  # Permit timeouts run on the scheduler's clock
            rng=random.Random(rng.random()),
            binder=store_binder(store),
            snapshot=cache.snapshot,
            preemption_executor=preemption,
            nominated_pods=nominator.nominated_pods(),
            features=features,
        )

    frameworks.update(new_frameworks(config, make_handle))
    for fwk in frameworks.values():
        fwk.instrument(tracing, metrics)
    queue = SchedulingQueue(
        queue_client,
        prefix=prefix,
        clock=clock,
        sort_key=_sort_key(frameworks),
        plugin_events=_plugin_events(frameworks),
        pod_lookup=pods.get,
        pop_from_backoff_q=features.enabled(POP_FROM_BACKOFF_Q),
        pre_enqueue=_pre_enqueue(frameworks, pods),
        pod_initial_backoff=float(config.pod_initial_backoff_seconds),
        pod_max_backoff=float(config.pod_max_backoff_seconds),
        on_incoming=metrics.inc_incoming if metrics.enabled else None,
        nominator=nominator,
        on_quarantine=lambda key: requeue_after_quarantine(key),
    )
    handlers = EventHandlers(cache, queue, frameworks, pods, store=store, stats=stats, clock=clock)

    def requeue_after_quarantine(key: str) -> None:
        """A queue record that could not be read was set aside: the pod, as the informer
        knows it, goes back through the queue's add (nothing is lost mid-run)."""
        pod = pods.get(key)
        if pod is not None and not pod.node_name:
            handlers.add_pod_to_scheduling_queue(pod)

    informer = Informer(
        store,
        InformerHandlers(
            on_pod=handlers.on_pod,
            on_node=handlers.on_node,
            on_other=handlers.on_other,
            on_invalid=handlers.on_invalid,
            on_own_bound=handlers.on_own_bound,
            on_nodes_added=handlers.on_nodes_added,
        ),
        pods=pods,
    )
    binder = (
        binding_executor(store, frameworks)
        if binding_executor is not None
        else _binding_executor(options, store, frameworks, tracing, informer.own.mark)
    )
    return Coordinator(
        SchedulerParts(
            store=store,
            config=config,
            clock=clock,
            cache=cache,
            source=source,
            frameworks=frameworks,
            queue=queue,
            algorithm=Scheduler(
                config.percentage_of_nodes_to_score,
                random.Random(rng.random()),
                fast=_fast_path(options, metered=metrics.enabled, traced=tracing.enabled),
            ),
            informer=informer,
            handlers=handlers,
            binder=binder,
            failures=FailureHandler(store, queue, pods, stats),
            stats=stats,
            tracing=tracing,
            metrics=metrics,
        ),
        batch_size=batch_size,
    )


def _fast_path(options: ExecutorOptions, *, metered: bool, traced: bool) -> FastPath | None:
    """The compiled path on the coordinator's replica, its kernels loaded now (numba's
    on-disk cache, or a compile on a new machine) rather than in the first cycle. With
    shards too: an attempt the compiled path answers costs less on the replica than one
    round trip to a shard, so shards get the attempts it declines (cost-based dispatch,
    README "Distributed execution"), and its batches go to the shards by the reduced
    protocol when the dispatch rule says so. Traced, the same: each batch and its shard
    calls show as spans (``shards.batch_trace``). With metrics on and shards, every
    attempt fans out to the shards plugin by plugin, so each extension point keeps its
    own duration metric. PreFilter and PreScore are shared by pods of one shape unless
    cycles are traced (with metrics, the cycles sampled to time every plugin run them
    plugin by plugin, ``pre_cycle``)."""
    if not options.compiled or (metered and options.executor != "local"):
        return None
    warm_up()
    warm_up_run()  # whole batches' kernel (scheduler.whole_batch)
    warm_up_reprieve()  # preemption's dry-run kernel: loaded now, not at the first preemption
    return FastPath(share_pre_cycle=not traced)


def _sort_key(frameworks: Mapping[str, Framework]) -> SortKey:
    """The first profile's QueueSort orders the one shared activeQ (profiles must agree,
    as upstream requires); without one, the queue's default priority order."""
    sort_plugin = next(iter(frameworks.values())).queue_sort
    if sort_plugin is None:
        return priority_sort_key
    return lambda info: sort_plugin.sort_key(info.priority, info.timestamp)  # type: ignore[no-any-return]


def _plugin_events(
    frameworks: Mapping[str, Framework],
) -> dict[str, tuple[ClusterEvent | ClusterEventWithHint, ...]]:
    """plugin -> cluster events (with QueueingHintFns) that may make a pod it rejected
    schedulable."""
    events: dict[str, tuple[ClusterEvent | ClusterEventWithHint, ...]] = {}
    for fwk in frameworks.values():
        events.update(fwk.events_to_register())
    return events


def _pre_enqueue(
    frameworks: Mapping[str, Framework], pods: Mapping[str, Pod]
) -> Callable[[QueuedPodInfo], str | None]:
    """The queue's PreEnqueue check: the plugin that gates the pod, or None."""

    def check(info: QueuedPodInfo) -> str | None:
        pod = pods.get(info.pod_key)
        if pod is None:
            return None
        fwk = frameworks.get(pod.scheduler_name)
        if fwk is None:
            return None
        s = fwk.run_pre_enqueue(pod)
        return None if s.is_success else (s.plugin or "PreEnqueue")

    return check
