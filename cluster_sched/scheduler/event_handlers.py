"""Event handlers (upstream eventhandlers.go): watch events → cache and queue.

Pods split by whether they are assigned:
- unassigned pods of a profile we serve go through the scheduling queue
  (addPodToSchedulingQueue / updatePodInSchedulingQueue / deletePodFromSchedulingQueue);
- assigned pods go to the cache (addPodToCache / updatePodInCache / deletePodFromCache)
  and wake the queue's pods their arrival or departure may help.
A pod turning assigned (its binding arrived) is a delete for the first set and an add
for the second; the add confirms the pod the coordinator assumed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import CPU, MEMORY, Node, Pod
from cluster_sched.api.selectors import label_selector_matches
from cluster_sched.api.storage import STORAGE_KINDS
from cluster_sched.cache.cache import Cache
from cluster_sched.clock import Clock
from cluster_sched.dra.claim_controller import Release, pod_releases, release_claims
from cluster_sched.dra.listers import dra_key
from cluster_sched.errors import ClusterSchedError, InvalidObjectError
from cluster_sched.framework.events import (
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
)
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.volume_listers import storage_key
from cluster_sched.queue.scheduling_queue import SchedulingQueue
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.store import Store

#: Storage kinds -> the resource of their cluster events (upstream's GVK short names).
STORAGE_EVENT_RESOURCES: Mapping[str, EventResource] = {
    "PersistentVolume": EventResource.PERSISTENT_VOLUME,
    "PersistentVolumeClaim": EventResource.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": EventResource.STORAGE_CLASS,
    "CSINode": EventResource.CSI_NODE,
    "CSIDriver": EventResource.CSI_DRIVER,
}
assert set(STORAGE_EVENT_RESOURCES) == set(STORAGE_KINDS)
#: DRA kinds -> the resource of their cluster events (templates: none, the scheduler
#: does not read them).
DRA_EVENT_RESOURCES: Mapping[str, EventResource | None] = {
    "DeviceClass": EventResource.DEVICE_CLASS,
    "ResourceSlice": EventResource.RESOURCE_SLICE,
    "ResourceClaim": EventResource.RESOURCE_CLAIM,
    "ResourceClaimTemplate": None,
}


def queued_info_for(pod: Pod, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(
        pod_key=pod.key,
        priority=pod.priority,
        timestamp=timestamp,
        nominated_node_name=pod.nominated_node_name,
    )


def node_change_event(old: Node, new: Node) -> ClusterEvent | None:
    """upstream nodeSchedulingPropertiesChange: which part of the node changed."""
    action = ActionType.NONE
    if old.unschedulable and not new.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.meta.annotations != new.meta.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if action == ActionType.NONE:
        return None
    return ClusterEvent(EventResource.NODE, action)


def pod_scheduling_properties_change(old: Pod, new: Pod) -> list[ClusterEvent]:
    """upstream PodSchedulingPropertiesChange: which scheduling-relevant parts of a pod
    changed, as events on AssignedPod (bound) or UnschedulablePod. Nothing specific
    (annotations, ...): one updatePodOther event, which only plugins registering pod
    updates in general match (a plugin registering UpdatePodToleration is not asked)."""
    resource = EventResource.ASSIGNED_POD if new.node_name else EventResource.UNSCHEDULABLE_POD
    actions = []
    if old.labels != new.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if any(new.requests.get(name, -1) < amount for name, amount in old.requests.items()):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if old.tolerations != new.tolerations:
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if old.resource_claim_statuses != new.resource_claim_statuses:
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE_POD_OTHER)
    return [ClusterEvent(resource, action) for action in actions]


def pod_spec_updated(old: Pod, new: Pod) -> bool:
    """upstream isPodUpdated: anything but status/resourceVersion changed (so the
    scheduler's own status writes, e.g. PodScheduled=False, never requeue a pod)."""

    def strip(pod: Pod) -> Pod:
        meta = evolve(pod.meta, resource_version="")
        return evolve(pod, meta=meta, nominated_node_name="", phase="", start_time=None)

    return strip(old) != strip(new)


def affinity_term_matches(
    owner: Pod, target: Pod, ns_labels: Callable[[str], Mapping[str, str]]
) -> bool:
    """Does any required pod-affinity term of ``owner`` select ``target``?"""
    aff = owner.affinity
    if aff is None or aff.pod_affinity is None:
        return False
    for term in aff.pod_affinity.required:
        if term.namespaces or term.namespace_selector is not None:
            in_ns = target.namespace in term.namespaces or (
                term.namespace_selector is not None
                and label_selector_matches(term.namespace_selector, ns_labels(target.namespace))
            )
        else:
            in_ns = target.namespace == owner.namespace
        if in_ns and label_selector_matches(term.label_selector, target.labels):
            return True
    return False


class EventHandlers:
    """Watch events to the cache and the queue (what upstream's addAllEventHandlers wires).

    ``pods`` is the informer's view of every pod (current objects by key)."""

    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        frameworks: Mapping[str, Framework],
        pods: Mapping[str, Pod],
        *,
        store: Store,
        stats: RunStats,
        clock: Clock,
    ) -> None:
        self.store = store
        #: one line per stored object that failed to parse
        self.invalid_objects: list[str] = []
        self.cache = cache
        self.queue = queue
        self.frameworks = frameworks
        self.pods = pods
        self.stats = stats
        self.clock = clock
        self._last_queue_ts = 0.0
        # Queue writes deferred to the end of an informer batch, so a burst of events
        # costs a few round trips, not a few per pod. Order is kept per pod: a delete
        # or update cancels or replaces the pending add.
        self._pending_adds: dict[str, Pod] = {}
        self._pending_assigned: list[Pod] = []
        #: cluster events from node / storage changes and assigned pods' deletes with
        #: their (old, new) objects, applied once per event kind per batch (order kept)
        self._pending_moves: dict[ClusterEvent, list[tuple[Any, Any]]] = {}
        #: deleted pods' claims to release (kube-controller-manager's part), written
        #: together at the end of the batch: a few round trips, not a few per claim
        self._pending_releases: list[Release] = []

    def flush(self) -> None:
        """Apply the queue and claim writes deferred during the last informer batch."""
        if self._pending_releases:
            releases, self._pending_releases = self._pending_releases, []
            release_claims(self.store, releases)
        if self._pending_moves:
            moves = list(self._pending_moves.items())
            self._pending_moves.clear()
            for event, changes in moves:
                self.queue.move_all_to_active_or_backoff_queue(event, changes=changes)
        if self._pending_adds:
            pods = list(self._pending_adds.values())
            self._pending_adds.clear()
            self.add_to_queue(pods)
        if self._pending_assigned:
            assigned = self._pending_assigned
            self._pending_assigned = []
            ns = self.namespace_labels
            informer_pods = self.pods

            def matches(info: QueuedPodInfo, target: Pod) -> bool:
                owner = informer_pods.get(info.pod_key)
                return owner is not None and affinity_term_matches(owner, target, ns)

            self.queue.assigned_pods_added(assigned, matches)

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.cache.snapshot.namespace_labels(namespace)

    def add_to_queue(self, pods: list[Pod]) -> None:
        """queue.add for a batch of pods. Timestamps strictly increase in watch order:
        QueueSort ties break by arrival, as upstream's per-pod timestamps do, whatever
        the batching. Nominations carried by the pods are recorded by the queue. Each
        step is one whole microsecond, the queue's resolution (``timestamp_tiebreak``):
        ``last + 1e-6`` in floats at epoch scale rounds to the same microsecond about
        one step in seven, and a frozen or coarse clock then let the pod key, not the
        arrival, order a burst. The batch is stamped from one reading of the clock (the
        time it is queued), each pod a microsecond after the one before it."""
        now = self.clock.now()
        last = self._last_queue_ts
        infos = []
        for pod in pods:
            following = (round(last * 1_000_000) + 1) / 1_000_000
            last = now if now > following else following
            infos.append(
                QueuedPodInfo(
                    pod_key=pod.key,
                    priority=pod.priority,
                    timestamp=last,
                    nominated_node_name=pod.nominated_node_name,
                )
            )
        self._last_queue_ts = last
        self.queue.add_many(infos)

    def on_invalid(self, kind: str, key: str, err: InvalidObjectError) -> None:
        """A stored object failed to parse: reported (list and event), never fatal."""
        line = str(err) if err.obj else f"{kind} {key}: {err}"
        self.invalid_objects.append(line)
        with contextlib.suppress(ClusterSchedError):
            self.store.record_event(kind, key, "FailedParsing", line, type="Warning")

    # ------------------------------------------------------------------ pods

    def on_pod(self, old: Pod | None, new: Pod | None) -> None:
        if new is None and old is not None and old.resource_claims:
            self._pending_releases.extend(pod_releases(old, self.cache.dra))
        old_assigned = old is not None and bool(old.node_name)
        new_assigned = new is not None and bool(new.node_name)
        if old is not None and not old_assigned and (new is None or new_assigned):
            self.delete_pod_from_scheduling_queue(old, bound=new is not None)
        if new is not None and new_assigned and (old is None or not old_assigned):
            self.add_pod_to_cache(new)
        elif old_assigned and new_assigned:
            assert old is not None and new is not None
            self.update_pod_in_cache(old, new)
        elif old_assigned and new is None:
            assert old is not None
            self.delete_pod_from_cache(old)
        if new is not None and not new_assigned:
            if old is None or old_assigned:
                self.add_pod_to_scheduling_queue(new)
            else:
                self.update_pod_in_scheduling_queue(old, new)

    def on_own_bound(self, pairs: list[tuple[Pod, Pod]]) -> None:
        """``on_pod(old, new)`` for each pair in order, for a run of our own bindings
        the informer confirmed from their marks (``old`` unbound, ``new`` bound, one
        pair per pod): each pod leaves the scheduling queue (its binding cycle Done when
        it is assumed) and is added to the cache (its assumption confirmed). Gathered:
        the Done of consecutive assumed pods is one in-flight update, the rest of
        ``on_pod``'s branching is not taken per pod. Nothing here reads what another
        pod of the run changes (each key once), so the state is ``on_pod``'s."""
        cache, queue, stats, clock = self.cache, self.queue, self.stats, self.clock
        pending = self._pending_adds
        done: list[str] = []
        for old, new in pairs:
            key = old.key
            if pending.pop(key, None) is None:  # delete_pod_from_scheduling_queue
                if cache.is_assumed(key):
                    done.append(key)
                else:  # bound, but not assumed here: out of the queue, Done kept in order
                    if done:
                        queue.binding_done_many(done)
                        done = []
                    queue.delete(key)
            cache.add_pod(new)  # add_pod_to_cache
            requests = new.requests
            stats.on_bound(
                key,
                new.node_name,
                clock.now(),
                requests.get(CPU, 0),
                requests.get(MEMORY, 0),
                {r: v for r, v in requests.items() if "/" in r} if len(requests) > 2 else None,
            )
        if done:
            queue.binding_done_many(done)
        self._pending_assigned.extend(new for _, new in pairs)

    def _responsible(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.frameworks

    def add_pod_to_scheduling_queue(self, pod: Pod) -> None:
        if not self._responsible(pod) or pod.meta.deletion_timestamp is not None:
            return
        self.stats.on_enqueue(pod.key, self.clock.now())
        self._pending_adds[pod.key] = pod

    def update_pod_in_scheduling_queue(self, old: Pod, new: Pod) -> None:
        if not self._responsible(new):
            return
        if self.cache.is_assumed(new.key):
            return
        if new.meta.deletion_timestamp is not None:
            self.delete_pod_from_scheduling_queue(new, bound=False)
            return
        if new.key in self._pending_adds:
            self._pending_adds[new.key] = new
            return
        changed = pod_spec_updated(old, new)
        if not changed and old.nominated_node_name == new.nominated_node_name:
            return
        now = self.clock.now()
        self.queue.update(
            None,
            queued_info_for(new, now),
            pod_updated=changed,
            events=pod_scheduling_properties_change(old, new) if changed else [],
            old_pod=old,
            new_pod=new,
        )

    def delete_pod_from_scheduling_queue(self, pod: Pod, *, bound: bool) -> None:
        if self._pending_adds.pop(pod.key, None) is not None:
            return
        if bound and self.cache.is_assumed(pod.key):
            # Our own binding arriving: the cycle already took it out of the queue; its
            # binding cycle is over (upstream Done).
            self.queue.binding_done(pod.key)
            return
        self.queue.delete(pod.key)
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is not None and not bound:
            fwk.handle.waiting_pods.reject(pod.key, "", "pod was deleted")

    def add_pod_to_cache(self, pod: Pod) -> None:
        self.cache.add_pod(pod)
        requests = pod.requests
        self.stats.on_bound(
            pod.key,
            pod.node_name,
            self.clock.now(),
            requests.get(CPU, 0),
            requests.get(MEMORY, 0),
            # extended resources (``vendor/name``): the report's GPU figures
            {r: v for r, v in requests.items() if "/" in r} if len(requests) > 2 else None,
        )
        self._pending_assigned.append(pod)

    def update_pod_in_cache(self, old: Pod, new: Pod) -> None:
        self.cache.update_pod(old, new)
        ns = self.namespace_labels
        for event in pod_scheduling_properties_change(old, new):
            self.queue.assigned_pod_updated(
                new, lambda info: self._affinity_match(info, new, ns), event, old=old
            )

    def delete_pod_from_cache(self, pod: Pod) -> None:
        self.cache.remove_pod(pod)
        self.stats.on_unbound(pod.key, self.clock.now())
        # Deferred like node events: a wave of preemptions deletes victims by the
        # hundred, and each delete would otherwise scan the unschedulable pool.
        self._pending_moves.setdefault(EVENT_ASSIGNED_POD_DELETE, []).append((pod, None))

    def _affinity_match(
        self, info: QueuedPodInfo, assigned: Pod, ns: Callable[[str], Mapping[str, str]]
    ) -> bool:
        owner = self.pods.get(info.pod_key)
        return owner is not None and affinity_term_matches(owner, assigned, ns)

    # ------------------------------------------------------------------ nodes

    def on_node(self, old: Node | None, new: Node | None) -> None:
        if new is None:
            assert old is not None
            self.cache.remove_node(old.name)
            return
        self.cache.add_node(new)
        event = EVENT_NODE_ADD if old is None else node_change_event(old, new)
        if event is not None:
            # One move per distinct event per batch: a burst of node adds is one scan
            # of the pool, each node offered to the hints.
            self._pending_moves.setdefault(event, []).append((old, new))

    def on_nodes_added(self, nodes: list[Node]) -> None:
        """``on_node(None, node)`` for each, in order: the cache takes them in bulk."""
        self.cache.add_nodes(nodes)
        self._pending_moves.setdefault(EVENT_NODE_ADD, []).extend((None, n) for n in nodes)

    # ------------------------------------------------------------------ other kinds

    def on_other(self, kind: str, old: Any, new: Any) -> None:
        cache = self.cache
        resource = STORAGE_EVENT_RESOURCES.get(kind)
        if resource is not None:
            # Volume objects go to the cache's listers; their add/update/delete is the
            # cluster event the volume plugins registered for (PVC bound, PV created,
            # CSINode limits...), applied once per informer batch.
            if new is None:
                cache.remove_storage(kind, storage_key(old))
                action = ActionType.DELETE
            else:
                cache.set_storage(new)
                action = ActionType.ADD if old is None else ActionType.UPDATE
            self._pending_moves.setdefault(ClusterEvent(resource, action), []).append((old, new))
        elif kind in DRA_EVENT_RESOURCES:
            if new is None:
                cache.remove_dra(kind, dra_key(old))
                action = ActionType.DELETE
            else:
                cache.set_dra(new)
                action = ActionType.ADD if old is None else ActionType.UPDATE
            dra_resource = DRA_EVENT_RESOURCES[kind]
            if dra_resource is not None:
                event = ClusterEvent(dra_resource, action)
                self._pending_moves.setdefault(event, []).append((old, new))
        elif kind == "Namespace":
            if new is None:
                cache.remove_namespace(old.name)
            else:
                cache.set_namespace(new)
        elif kind == "PodDisruptionBudget":
            if new is None:
                cache.remove_pdb(f"{old.meta.namespace}/{old.meta.name}")
            else:
                cache.set_pdb(new)
        else:
            if new is None:
                cache.remove_controller(old.kind, f"{old.meta.namespace}/{old.meta.name}")
            else:
                cache.set_controller(new)
