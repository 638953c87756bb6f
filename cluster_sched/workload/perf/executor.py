"""Running one planned scheduler_perf workload through the real scheduler.

Upstream's WorkloadExecutor runs ops against an API server while the scheduler runs in
its own goroutines. Here the coordinator runs in this thread (the pods are written by a client process
beside it, ``workload.feeder``, unless ``--feeder inline``), so every op that waits
(pods to be scheduled, a barrier, a sleep) drives the loop with
:func:`cluster_sched.workload.runner.drive`, and what upstream does in goroutines beside
it (paced deletes, churn, the throughput sampler) ticks on each turn of that loop.

Objects reach the scheduler as a deployment's do: written to the store, seen through
the watch. "Scheduled" means what upstream's pod informer shows: the pod bound.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_sched.api.manifest import KINDS, parse_object
from cluster_sched.errors import InvalidObjectError
from cluster_sched.features import FeatureGates
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.kinds import NAMESPACED_KINDS
from cluster_sched.store.store import Store
from cluster_sched.workload.feeder import FeederProcess, ProcessFeed, group_message
from cluster_sched.workload.perf.background import ChurnTask, PacedDeletes, SeenScheduled
from cluster_sched.workload.perf.config import DEFAULT_METRICS, SLI_METRIC, PlannedWorkload
from cluster_sched.workload.perf.dra_ops import (
    ClaimAllocationFailed,
    ClaimTemplates,
    alloc_resource_claims,
    create_resource_driver,
)
from cluster_sched.workload.perf.metrics import (
    DataItem,
    ThroughputCollector,
    Window,
    apply_threshold,
    histogram_items,
    read_histograms,
    sli_series,
    subtract,
)
from cluster_sched.workload.perf.objects import (
    Namer,
    Template,
    base_node,
    base_pod,
    namespace_doc,
    place,
    prepare_node,
)
from cluster_sched.workload.perf.ops import (
    AllocResourceClaims,
    Barrier,
    Churn,
    CreateAny,
    CreateNamespaces,
    CreateNodes,
    CreatePods,
    CreateResourceClaims,
    CreateResourceDriver,
    DeletePods,
    Op,
    Sleep,
    StartCollectingMetrics,
    StopCollectingMetrics,
)
from cluster_sched.workload.runner import APPLY_BATCH, drive

__all__ = ["Outcome", "WorkloadExecutor"]


class OpFailed(Exception):
    """An op could not finish (a wait timed out, a namespace is unknown): the workload
    fails, as upstream's does, and the next one runs."""


@dataclass(slots=True)
class Outcome:
    items: list[DataItem] = field(default_factory=list)
    #: why the workload failed (an op, or a threshold); empty if it passed
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _Feeder:
    """Writes ``count`` rendered objects, a batch per call, from the loop thread
    (``--feeder inline``; upstream creates them at full client speed while the
    scheduler runs)."""

    def __init__(
        self, ex: WorkloadExecutor, template: Template, namespace: str, count: int
    ) -> None:
        self.ex, self.template, self.namespace, self.count = ex, template, namespace, count
        self.created = 0

    def feed(self) -> bool:
        batch: list[dict[str, Any]] = []
        while self.created < self.count and len(batch) < APPLY_BATCH:
            batch.append(self.ex.render(self.template, self.created, self.count, self.namespace))
            self.created += 1
        if batch:
            self.ex.store.apply_many([*self.ex.claims.claims_for(batch), *batch])
        return self.created < self.count


class WorkloadExecutor:
    """Runs the ops of one planned workload against a started coordinator."""

    def __init__(
        self,
        planned: PlannedWorkload,
        coord: Coordinator,
        store: Store,
        *,
        timeout: float,
        seed: int | None = None,
        features: FeatureGates | None = None,
        feeder: FeederProcess | None = None,
    ) -> None:
        self.planned = planned
        #: the client process that writes createPods' pods (None: this thread does)
        self.feeder = feeder
        self.features = features or FeatureGates()
        self.coord = coord
        self.store = store
        self.timeout = timeout
        self.rng = random.Random(seed)
        self.namer = Namer()
        self.claims = ClaimTemplates(store, seed or 0)
        #: namespace -> pods expected to be scheduled there (upstream numPodsScheduledPerNamespace)
        self.namespaces: dict[str, int] = {}
        self.background: list[Any] = []
        self.window: Window | None = None
        self.outcome = Outcome()
        #: labels of the pods this workload created (for label-selector counts)
        self.pod_labels: dict[str, Mapping[str, str]] = {}
        #: pods created with scheduling gates (upstream counts them as attempted)
        self.gated: set[str] = set()

    # ------------------------------------------------------------------ running

    def run(self) -> Outcome:
        for index, op in enumerate(self.planned.ops):
            try:
                self.run_op(index, op)
            except OpFailed as err:
                self.outcome.failures.append(f"op {index}: {err}")
                break
        return self.outcome

    def run_op(self, index: int, op: Op) -> None:
        if isinstance(op, CreateNodes):
            self._create_nodes(index, op)
        elif isinstance(op, CreateNamespaces):
            self._create_namespaces(op)
        elif isinstance(op, CreatePods):
            self._create_pods(index, op)
        elif isinstance(op, CreateResourceDriver):
            create_resource_driver(self.store, op)
        elif isinstance(op, AllocResourceClaims):
            try:
                alloc_resource_claims(self.store, op, self.rng, self.features)
            except ClaimAllocationFailed as err:
                raise OpFailed(str(err)) from None
        elif isinstance(op, CreateResourceClaims):
            self._ensure_namespace(op.namespace)
            template = Template(op.template_path)
            docs = [template.render(i, op.count) for i in range(op.count)]
            for doc in docs:
                place(doc, op.namespace, self.namer)
            self.store.apply_many(docs)
        elif isinstance(op, CreateAny):
            self._create_any(op)
        elif isinstance(op, DeletePods):
            self._delete_pods(op)
        elif isinstance(op, Churn):
            namespace = op.namespace or f"namespace-{index}"
            self._ensure_namespace(namespace)
            self.background.append(ChurnTask(self, op, namespace))
        elif isinstance(op, Barrier):
            self._barrier(op)
        elif isinstance(op, Sleep):
            end = time.monotonic() + op.duration
            self._drive(lambda: time.monotonic() >= end, what=lambda: "the sleep to end")
        elif isinstance(op, StartCollectingMetrics):
            if self.window is not None:
                raise OpFailed("metrics collection is overlapping: stop the previous one first")
            self._start_window(op.name, op.namespaces, op.label_selector)
        elif isinstance(op, StopCollectingMetrics):
            if self.window is None:
                raise OpFailed("missing startCollectingMetrics operation before stopping")
            self._stop_window()
        else:  # CreatePodSets are unrolled by the planner
            raise OpFailed(f"op {type(op).__name__} cannot run here")

    def _drive(
        self,
        until: Callable[[], bool],
        *,
        what: Callable[[], str],
        feed: Callable[[], bool] | None = None,
        feed_elsewhere: bool = False,
    ) -> None:
        """Run the scheduler until ``until()``; ``what()`` says what was awaited, with
        the progress made, when the op's timeout runs out first."""
        if not drive(
            self.coord,
            timeout=self.timeout,
            feed=feed,
            until=until,
            tick=self._tick,
            stall_seconds=None,
            feed_elsewhere=feed_elsewhere,
        ):
            raise OpFailed(f"timed out after {self.timeout:g} s waiting for {what()}")

    def _tick(self) -> None:
        now = time.monotonic()
        for task in self.background:
            task.tick(now)
        if self.window is not None:
            self.window.throughput.tick(now)

    # ------------------------------------------------------------------ objects

    def render(self, template: Template, index: int, count: int, namespace: str) -> dict[str, Any]:
        doc = template.render(index, count)
        _kind, key = place(doc, namespace, self.namer)
        self.note_pod(doc, key)
        return doc

    def note_pod(self, doc: Mapping[str, Any], key: str) -> None:
        if doc.get("kind") != "Pod":
            return
        meta = doc.get("metadata") or {}
        self.pod_labels[key] = dict(meta.get("labels") or {})
        if (doc.get("spec") or {}).get("schedulingGates"):
            self.gated.add(key)

    def _ensure_namespace(self, namespace: str) -> None:
        if namespace not in self.namespaces:
            self.store.apply(namespace_doc(namespace))
            self.namespaces[namespace] = 0

    def _create_nodes(self, index: int, op: CreateNodes) -> None:
        template = Template(op.node_template_path, base_node(f"node-{index}-"), op.template_params)
        for start in range(0, op.count, APPLY_BATCH):
            docs = []
            for i in range(start, min(op.count, start + APPLY_BATCH)):
                doc = template.render(i, op.count)
                self.namer.name(doc)
                prepare_node(doc, op, i, self.rng)
                docs.append(doc)
            if op.unique_label_key or op.node_allocatable or op.label_strategy:
                parse_object(docs[0], template.source)
            if self.feeder is not None:  # upstream's client creates the nodes too
                self.feeder.submit(group_message(docs=docs), f"creating {op.count} nodes")
                # Not the op's timeout (the child may still be starting): a child that
                # dies or loses Redis (its store's socket timeout) answers anyway.
                self.feeder.wait()
            else:
                self.store.apply_many(docs)
        while self.coord.poll_informer():  # the scheduler sees every node before pods come
            pass

    def _create_namespaces(self, op: CreateNamespaces) -> None:
        template = Template(op.namespace_template_path, namespace_doc("ns"))
        for i in range(op.count):
            doc = template.render(i, op.count)
            name = f"{op.prefix}-{i}"
            doc.setdefault("metadata", {})["name"] = name
            self.store.apply(doc)
            self.namespaces.setdefault(name, 0)

    def _create_any(self, op: CreateAny) -> None:
        template = Template(op.template_path, None, op.template_params)
        count = 1 if op.count is None else op.count
        for i in range(count):
            doc = template.render(i, count)
            kind = str(doc.get("kind"))
            if kind not in KINDS:
                raise InvalidObjectError(
                    f"createAny: kind {kind!r} is not supported by cluster-sched",
                    source=template.source,
                )
            namespaced = kind in NAMESPACED_KINDS
            if op.namespace and not namespaced:
                raise InvalidObjectError(
                    f"createAny: namespace {op.namespace!r} set, but {kind} is cluster-scoped",
                    source=template.source,
                )
            if not op.namespace and namespaced:
                raise InvalidObjectError(
                    f"createAny: namespace not set, but {kind} is namespaced",
                    source=template.source,
                )
            if op.namespace:
                self._ensure_namespace(op.namespace)
            _kind, key = place(doc, op.namespace, self.namer)
            self.note_pod(doc, key)
            self.store.apply(doc)

    def _create_pods(self, index: int, op: CreatePods) -> None:
        namespace = op.namespace or f"namespace-{index}"
        self._ensure_namespace(namespace)
        path = op.pod_template_path or self.planned.case.default_pod_template_path
        template = Template(path, base_pod(), op.template_params)
        if op.collect_metrics:
            if self.window is not None:
                raise OpFailed("metrics collection is overlapping: stop the previous one first")
            self._start_window(namespace, [namespace], {})
        if op.steady_state:
            self._steady_state(template, namespace, op)
        else:
            feeder: _Feeder | ProcessFeed = _Feeder(self, template, namespace, op.count)
            if self.feeder is not None:
                feeder = self._process_feed(template, namespace, op.count)
            if op.skip_wait_to_completion:
                while feeder.feed():
                    if isinstance(feeder, ProcessFeed) and feeder.written():
                        break
                    time.sleep(0 if isinstance(feeder, _Feeder) else 0.001)
                self.namespaces[namespace] += op.count
            else:
                self._drive(
                    lambda: self.scheduled([namespace], {}) >= op.count,
                    what=lambda: (
                        f"{op.count} pods to be scheduled in namespace {namespace} "
                        f"({self.scheduled([namespace], {})} scheduled)"
                    ),
                    feed=feeder.feed,
                    feed_elsewhere=isinstance(feeder, ProcessFeed),
                )
        if op.collect_metrics:
            self._stop_window()

    def _process_feed(self, template: Template, namespace: str, count: int) -> ProcessFeed:
        """createPods through the feeder process: rendered here a chunk at a time (the
        labels and gates are noted as the inline feeder notes them), written there."""
        assert self.feeder is not None
        chunk = APPLY_BATCH  # the inline feeder's: a full batch a turn

        def messages() -> Iterator[dict[str, Any]]:
            for start in range(0, count, chunk):
                end = min(count, start + chunk)
                docs = [self.render(template, i, count, namespace) for i in range(start, end)]
                yield group_message(docs=[*self.claims.claims_for(docs), *docs])

        informer = self.coord.informer
        what = f"creating {count} pods in namespace {namespace}"
        return ProcessFeed(self.feeder, messages(), lambda: informer.last_rv, what, window=2)

    def _steady_state(self, template: Template, namespace: str, op: CreatePods) -> None:
        """Upstream createPodsSteadily: ``count`` pods; each time as many more were seen
        scheduled, every pod of the namespace is deleted and ``count`` new ones created,
        until ``duration`` has passed. Fails if no pod at all got scheduled."""
        live: list[str] = []
        created = 0

        def create() -> None:
            nonlocal created
            docs = [
                self.render(template, created + i, op.count, namespace) for i in range(op.count)
            ]
            created += op.count
            live.extend(f"{namespace}/{d['metadata']['name']}" for d in docs)
            self.store.apply_many([*self.claims.claims_for(docs), *docs])

        seen = SeenScheduled(self.coord.stats.placement_log, [namespace])
        create()
        end = time.monotonic() + op.duration
        batches = 0

        def next_batch() -> bool:
            nonlocal batches
            while seen() // op.count > batches:  # upstream: countScheduledPods % Count == 0
                batches += 1
                self.store.delete_many([("Pod", k) for k in live])
                live.clear()
                # The resourceclaim controller, which upstream runs beside the test,
                # sees the deletes while the next pods are being created one API call
                # at a time; here all ten come in one write, so let it act first.
                self.coord.poll_informer()
                create()
            return time.monotonic() >= end

        self._drive(next_batch, what=lambda: "the steady state to end")
        if seen() == 0:
            raise OpFailed(
                "no pod at all got scheduled, either because of a problem or because the "
                "test interval was too small"
            )

    def _delete_pods(self, op: DeletePods) -> None:
        keys = [
            f"{op.namespace}/{meta.get('name')}"
            for doc in self.store.list("Pod")
            if (meta := doc.get("metadata") or {}).get("namespace", "default") == op.namespace
            and all((meta.get("labels") or {}).get(k) == v for k, v in op.label_selector.items())
        ]
        if op.delete_pods_per_second <= 0:
            self.store.delete_many([("Pod", k) for k in keys])
            return
        deletes = PacedDeletes(self.store, keys, op.delete_pods_per_second)
        self.background.append(deletes)
        if not op.skip_wait_to_completion:
            self._drive(
                lambda: deletes.done,
                what=lambda: f"{len(keys)} pods to be deleted ({deletes.deleted} deleted)",
            )

    def _barrier(self, op: Barrier) -> None:
        for namespace in op.namespaces:
            if namespace not in self.namespaces:
                raise OpFailed(f"unknown namespace {namespace}")
        namespaces = list(op.namespaces or self.namespaces)
        want = dict(self.namespaces)
        if op.stage_requirement == "Attempted":
            self._drive(
                lambda: all(self.attempted(ns, op.label_selector) >= want[ns] for ns in namespaces),
                what=lambda: f"pods in {namespaces} to be attempted",
            )
            return
        self._drive(
            lambda: all(self.scheduled([ns], op.label_selector) >= want[ns] for ns in namespaces),
            what=lambda: f"pods in {namespaces} to be scheduled",
        )
        for namespace in namespaces:
            self.namespaces.pop(namespace, None)

    # ------------------------------------------------------------------ counting

    def _matches(self, key: str, selector: Mapping[str, str]) -> bool:
        labels = self.pod_labels.get(key, {})
        return all(labels.get(k) == v for k, v in selector.items())

    def scheduled(self, namespaces: list[str], selector: Mapping[str, str]) -> int:
        """Pods bound now in ``namespaces`` (all if empty), matching ``selector``."""
        stats = self.coord.stats
        if not selector:
            if not namespaces:
                return len(stats.bound_node)
            return sum(stats.bound_per_namespace.get(ns, 0) for ns in namespaces)
        wanted = set(namespaces)
        return sum(
            1
            for key in stats.bound_node
            if (not wanted or key.partition("/")[0] in wanted) and self._matches(key, selector)
        )

    def attempted(self, namespace: str, selector: Mapping[str, str]) -> int:
        """Pods in ``namespace`` bound, tried at least once, or gated (the API server
        gives a gated pod its PodScheduled condition at once)."""
        stats = self.coord.stats
        keys = {*stats.attempts, *stats.bound_node, *self.gated}
        return sum(
            1 for k in keys if k.partition("/")[0] == namespace and self._matches(k, selector)
        )

    # ------------------------------------------------------------------ measuring

    def _start_window(self, name: str, namespaces: list[str], selector: Mapping[str, str]) -> None:
        labels = {"Name": f"{self.planned.name}/{name}"}
        matches = (lambda key: self._matches(key, selector)) if selector else None
        seen = SeenScheduled(self.coord.stats.placement_log, namespaces, matches)
        collector = ThroughputCollector(seen, labels)
        collector.start(time.monotonic())
        self.window = Window(
            collector, read_histograms(self.coord.metrics.registry), self.coord.clock.now(), labels
        )

    def _stop_window(self) -> None:
        window, self.window = self.window, None
        assert window is not None
        items = window.throughput.stop(time.monotonic())
        if window.throughput.warning:
            self.outcome.warnings.append(f"{window.labels['Name']}: {window.throughput.warning}")
        histograms = subtract(read_histograms(self.coord.metrics.registry), window.histograms)
        config = self.planned.case.metrics or DEFAULT_METRICS
        if SLI_METRIC in config and SLI_METRIC not in histograms:
            series = sli_series(self.coord.stats, window.started_at, self.coord.clock.now())
            histograms[SLI_METRIC] = {frozenset(): series}
        items.extend(histogram_items(config, histograms, window.labels))
        w = self.planned.workload
        self.outcome.failures.extend(apply_threshold(items, w.threshold, w.selector))
        self.outcome.items.extend(items)
