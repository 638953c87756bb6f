"""DynamicResources: a pod's ResourceClaims must exist, and be allocated or allocatable
on the node (upstream pkg/scheduler/framework/plugins/dynamicresources, v1.35 with its
default gates: the "incubating" allocator, prioritized lists and admin access on).

- PreEnqueue: every claim exists (a template's claim is named in the pod's status),
  is not being deleted, and a template's claim is owned by the pod.
- PreFilter: the same checks, an allocated claim must be reservable by the pod, no
  allocation may be in flight, every device class must exist; builds the allocator.
- Filter: allocated claims' node selectors; the allocator for the others, node by node,
  only on nodes that see any device at all (the others fail as a column).
- PostFilter: deallocates one allocated claim that was unavailable and is reserved by
  nobody else, so the next attempt can allocate it elsewhere.
- Reserve/Unreserve: the allocation goes in flight in the DRA listers, so no later pod
  can take its devices; Unreserve drops the pod from a claim's ``status.reservedFor``.
- PreBind: writes ``status.allocation`` (with the finalizer) and ``status.reservedFor``.

Status strings are upstream's. Per-cycle data stays in the plugin (keyed by pod): the
CycleState carries only a small frozen token, and Reserve's frozen decision for PreBind.
"""

from __future__ import annotations

import copy
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.api.selectors import node_selector_matches
from cluster_sched.config.plugin_args import DynamicResourcesArgs
from cluster_sched.dra.allocator import (
    AllocationError,
    AllocationFailedOnNode,
    AllocationTimeout,
    Allocator,
)
from cluster_sched.dra.listers import DraListers
from cluster_sched.dra.objects import (
    RESERVED_FOR_MAX_SIZE,
    AllocationResult,
    ResourceClaim,
)
from cluster_sched.dra.podclaims import (
    claim_change_helps,
    class_needs,
    is_simple,
    pod_change_helps,
    pod_claims,
    reserved_for_pod,
)
from cluster_sched.dra.scoring import node_scores
from cluster_sched.dra.state import PodCycle, Reserved, Token
from cluster_sched.dra.wire import bind_claim, unreserve_claim
from cluster_sched.features import (
    DRA_ADMIN_ACCESS,
    DRA_PRIORITIZED_LIST,
    DRA_SCHEDULER_FILTER_TIMEOUT,
)
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import (
    NodeSlice,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
)
from cluster_sched.framework.status import SUCCESS, Code, Status, error, skip, unresolvable
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.plugins import names
from cluster_sched.plugins._helpers import default_normalize_score

NAME = names.DYNAMIC_RESOURCES
STATE_KEY = NAME
RESERVED_KEY = NAME + "/reserved"
#: Per-cycle entries kept at most (a pod rejected in Filter never reaches Reserve).
MAX_CYCLES = 4096

#: upstream's statusUnschedulable: every "does not fit" of this plugin is
#: UnschedulableAndUnresolvable (preemption cannot free devices)
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
_SKIP = QueueingHint.QUEUE_SKIP
_NODE_LABEL, _ALLOCATABLE = ActionType.UPDATE_NODE_LABEL, ActionType.UPDATE_NODE_ALLOCATABLE
ERR_IN_USE = "resourceclaim in use"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NO_NEW_CLAIMS = "no new claims to deallocate"
ERR_TIMED_OUT = "timed out trying to allocate devices"


class DynamicResources:
    name = NAME

    def __init__(self, args: DynamicResourcesArgs, handle: Handle) -> None:
        self._handle = handle
        self._args = args
        self._cycles: OrderedDict[str, PodCycle] = OrderedDict()

    def _dra(self) -> DraListers | None:
        snapshot = self._handle.snapshot
        return snapshot.dra if snapshot is not None else None

    # -- PreEnqueue

    def pre_enqueue(self, pod: Pod) -> Status:
        dra = self._dra()
        if not pod.resource_claims or dra is None:
            return SUCCESS
        _, err = pod_claims(pod, dra)
        return unresolvable(err) if err else SUCCESS

    # -- PreFilter

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(STATE_KEY, Token(pod.key, False))
        if not pod.resource_claims:
            return None, skip()
        dra: DraListers = snapshot.dra
        claims, err = pod_claims(pod, dra)
        if err:
            return None, unresolvable(err)
        if not claims:
            return None, skip()
        features = self._handle.features
        prioritized_list = features.enabled(DRA_PRIORITIZED_LIST)
        to_allocate = []
        for index, claim in enumerate(claims):
            if claim.allocation is not None:
                if len(claim.reserved_for) >= RESERVED_FOR_MAX_SIZE and not reserved_for_pod(
                    pod, claim
                ):
                    return None, unresolvable(ERR_IN_USE)
                continue
            to_allocate.append(index)
            if dra.has_pending(claim.meta.uid):
                return None, unresolvable(
                    f"resource claim {claim.key} is in the process of being allocated"
                )
            for req in claim.spec.requests:
                if req.exactly is None and not prioritized_list:
                    return None, unresolvable(
                        f"resource claim {claim.key}, request {req.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                alts = (req.exactly,) if req.exactly is not None else req.first_available
                for alt in alts:
                    assert alt is not None
                    qual = f"{req.name}/{alt.name}" if req.exactly is None else req.name
                    if alt.device_class_name not in dra.classes:
                        return None, unresolvable(
                            f"request {qual}: device class {alt.device_class_name} does not exist"
                        )
        cycle = PodCycle(claims, to_allocate)
        if features.enabled(DRA_SCHEDULER_FILTER_TIMEOUT):
            cycle.filter_timeout = self._args.filter_timeout_seconds
        if to_allocate:
            local, shared = dra.slice_index()
            cycle.allocator = Allocator(
                dra.classes,
                (),
                dra.is_allocated,
                snapshot.namespace_labels,
                # DRAAdminAccess and DRAPrioritizedList: beta and on in v1.35
                admin_access=features.enabled(DRA_ADMIN_ACCESS),
                prioritized_list=prioritized_list,
                slices_for=lambda node: [*local.get(node.name, ()), *shared],
                pool_slices=dra.pool_slices,
            )
            if not shared:
                wanted = [claims[i] for i in to_allocate]
                need = class_needs(wanted)
                # a class selector failing on some device: only the allocator's search
                # may decide (it aborts with the error before finding a node short)
                if not any(dra.class_selector_failed(c) for c in need):
                    cycle.need, cycle.simple = need, is_simple(wanted)
        self._cycles[pod.key] = cycle
        self._cycles.move_to_end(pod.key)
        while len(self._cycles) > MAX_CYCLES:
            self._cycles.popitem(last=False)
        free: dict[str, int] | None = None
        want = 0
        if cycle.simple and cycle.need and all(c.allocation_node_selector is None for c in claims):
            ((cls, want),) = cycle.need.items()
            free = dra.free_counts(cls)
        scores = any(req.first_available for i in to_allocate for req in claims[i].spec.requests)
        state.write(STATE_KEY, Token(pod.key, True, free, want, scores))
        return None, SUCCESS

    def pre_filter_extensions(self) -> None:
        return None

    def _cycle(self, state: CycleState) -> PodCycle | None:
        token: Token | None = state.get(STATE_KEY)
        if token is None or not token.has_claims:
            return None
        return self._cycles.get(token.pod_key)

    # -- Filter

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        k = len(nodes)
        token: Token | None = state.get(STATE_KEY)
        if token is None:
            return NodeVerdicts.missing_state(k, STATE_KEY)
        cycle = self._cycle(state)
        if cycle is None and token.has_claims:
            # a shard: only the free-device column travels in the CycleState
            if token.free is None:
                return NodeVerdicts.from_mask(
                    np.ones(k, dtype=bool),
                    Code.ERROR,
                    "DynamicResources: this pod's claims are allocated by the coordinator's "
                    "own Filter; run with --executor local",
                )
            free_col = token.free
            free = np.fromiter((free_col.get(n, 0) for n in nodes.names()), np.int64, count=k)
            return NodeVerdicts.from_mask(free < token.want, UNRESOLVABLE, ERR_CANNOT_ALLOCATE)
        if cycle is None:
            return NodeVerdicts.passing(k)
        codes = np.zeros(k, dtype=np.int8)
        ids = np.zeros(k, dtype=np.int32)
        reasons: list[tuple[str, ...]] = []
        reason_ids: dict[tuple[str, ...], int] = {}

        def fail(i: int, code: Code, reason: str) -> None:
            key = (reason,)
            if key not in reason_ids:
                reason_ids[key] = len(reasons)
                reasons.append(key)
            codes[i] = code
            ids[i] = reason_ids[key]

        table = nodes.table
        claims = [cycle.claims[i] for i in cycle.to_allocate]
        if cycle.allocator is not None:
            try:
                cycle.allocator.validate(claims)
            except AllocationError as err:
                return NodeVerdicts.from_mask(np.ones(k, dtype=bool), Code.ERROR, str(err))
        dra = self._dra() if cycle.need is not None else None
        if token.free is not None:
            # one class, one count: the free-device column PreFilter took decides every
            # node at once (nothing changes between a pod's PreFilter and its Filter)
            col = token.free
            free = np.fromiter((col.get(n, 0) for n in nodes.names()), np.int64, count=k)
            return NodeVerdicts.from_mask(free < token.want, UNRESOLVABLE, ERR_CANNOT_ALLOCATE)
        for i, row in enumerate(nodes.rows.tolist()):
            node = table.nodes[row]
            unavailable = [
                index
                for index, claim in enumerate(cycle.claims)
                if claim.allocation_node_selector is not None
                and not node_selector_matches(
                    claim.allocation_node_selector, node.name, node.labels
                )
            ]
            counted = False
            timeout = cycle.filter_timeout
            deadline = time.monotonic() + timeout if timeout > 0 else None
            if dra is not None and cycle.need is not None:
                # the pre-check: too few free devices of a class, no allocator run
                short = any(dra.free_count(cls, node.name) < n for cls, n in cycle.need.items())
                if short:
                    # it stands for the allocator's search: a node whose time ran out by
                    # then is timed out, as upstream's search would still have been running
                    late = deadline is not None and time.monotonic() >= deadline
                    fail(i, UNRESOLVABLE, ERR_TIMED_OUT if late else ERR_CANNOT_ALLOCATE)
                    continue
                counted = cycle.simple  # fits; Reserve allocates on the chosen node
            found: list[AllocationResult] | None = None
            if cycle.allocator is not None and not counted:
                try:
                    found = cycle.allocator.allocate(node, claims, deadline)
                except AllocationFailedOnNode as err:
                    fail(i, UNRESOLVABLE, str(err))
                    continue
                except AllocationError as err:
                    fail(i, Code.ERROR, str(err))
                    continue
                except AllocationTimeout:
                    fail(i, UNRESOLVABLE, ERR_TIMED_OUT)
                    continue
                if found is None:
                    fail(i, UNRESOLVABLE, ERR_CANNOT_ALLOCATE)
                    continue
            if unavailable:
                cycle.unavailable.update(unavailable)
                fail(i, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NOT_AVAILABLE)
                continue
            if cycle.allocator is not None and found is not None:
                cycle.node_allocations[node.name] = found
        return NodeVerdicts(codes, ids, reasons)

    # -- Score

    def zero_score(self, state: CycleState, pod: Pod) -> bool:
        """Whether Score gives every node 0 for this pod: true unless some claim to
        allocate has a prioritized list. Upstream v1.35 has no PreScore here and runs
        that all-zero Score; the framework's PreScore Skips it instead (every node's
        total is the same), deciding it where it collects every PreScore Skip, so the
        Skip set is one per pod whether its PreFilter state was computed or shared (the
        pre-cycle cache, the shards) and the compiled path scores claim-less pods."""
        token: Token | None = state.get(STATE_KEY)
        return token is None or not token.scores

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        """Prioritized lists (``dra.scoring``)."""
        cycle = self._cycle(state)
        if cycle is None:
            return np.zeros(len(nodes), dtype=np.int64)
        return node_scores(cycle.claims, cycle.node_allocations, nodes.names())

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)

    # -- PostFilter

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        token: Token | None = state.get(STATE_KEY)
        if token is None:
            return None, error(f'reading "{STATE_KEY}" from cycleState: not found')
        cycle = self._cycle(state)
        if cycle is None:
            return None, Status(Code.UNSCHEDULABLE, (ERR_NO_NEW_CLAIMS,))
        for index in sorted(cycle.unavailable):
            claim = cycle.claims[index]
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                store = getattr(self._handle.binder, "store", None)
                if store is not None:
                    doc = store.get("ResourceClaim", claim.key)
                    if doc is not None:
                        doc = copy.deepcopy(doc)
                        status = doc.setdefault("status", {})
                        for key in ("allocation", "reservedFor", "devices"):
                            status.pop(key, None)
                        store.apply(doc, source=NAME)
                return None, Status(
                    Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",)
                )
        return None, Status(Code.UNSCHEDULABLE, ("still not schedulable",))

    # -- Reserve / Unreserve

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        cycle = self._cycle(state)
        if cycle is None:
            return SUCCESS
        decided: list[tuple[str, AllocationResult | None]] = []
        if cycle.to_allocate:
            allocations = cycle.node_allocations.get(node_name)
            if allocations is None:
                # Filter ran in a shard: the allocation is made again here (same inputs)
                allocations = self._allocate_on(cycle, node_name)
            if allocations is None:
                return error("claim allocation not found for node")
            if len(allocations) != len(cycle.to_allocate):
                return error(
                    f"internal error, have {len(allocations)} allocations, "
                    f"{len(cycle.to_allocate)} claims to allocate, want "
                    f"{len(cycle.to_allocate)} claims"
                )
            dra = self._dra()
            for index, allocation in zip(cycle.to_allocate, allocations, strict=True):
                claim = cycle.claims[index]
                if dra is not None:
                    dra.signal_pending(claim, allocation)
                decided.append((claim.key, allocation))
        for index, claim in enumerate(cycle.claims):
            if index not in cycle.to_allocate and not reserved_for_pod(pod, claim):
                decided.append((claim.key, None))
        state.write(RESERVED_KEY, Reserved(tuple(decided)))
        return SUCCESS

    def _allocate_on(self, cycle: PodCycle, node_name: str) -> list[AllocationResult] | None:
        snapshot = self._handle.snapshot
        node = snapshot.node(node_name) if snapshot is not None else None
        if node is None or cycle.allocator is None:
            return None
        try:
            return cycle.allocator.allocate(node, [cycle.claims[i] for i in cycle.to_allocate])
        except AllocationError:
            return None

    def allocations(self, state: CycleState, node_names: list[str]) -> dict[str, list[Any]]:
        """explain: per feasible node, the devices this pod's claims would get there."""
        cycle = self._cycle(state)
        out: dict[str, list[Any]] = {}
        if cycle is None or not cycle.to_allocate:
            return out
        for name in node_names:
            found = cycle.node_allocations.get(name) or self._allocate_on(cycle, name)
            if found is None:
                continue
            out[name] = [
                {"claim": cycle.claims[i].key, "request": r.request, "driver": r.driver}
                | {"pool": r.pool, "device": r.device}
                for i, allocation in zip(cycle.to_allocate, found, strict=True)
                for r in allocation.devices
            ]
        return out

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        cycle = self._cycle(state)
        dra = self._dra()
        if cycle is None or dra is None:
            return
        store = getattr(self._handle.binder, "store", None)
        for claim in cycle.claims:
            dra.remove_pending(claim.meta.uid)
            if store is not None:
                unreserve_claim(store, claim.key, pod)

    # -- PreBind

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        reserved: Reserved | None = state.get(RESERVED_KEY)
        return skip() if reserved is None or not reserved.claims else SUCCESS

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        reserved: Reserved | None = state.get(RESERVED_KEY)
        if reserved is None or not reserved.claims:
            return SUCCESS
        store = getattr(self._handle.binder, "store", None)
        if store is None:
            return error("no store to write the pod's resource claims to")
        dra = self._dra()  # the informer's claims, for a first write without a read
        for key, allocation in reserved.claims:
            seen = dra.claims.get(key) if dra is not None else None
            cached = seen.raw if seen is not None else None
            problem = bind_claim(store, key, allocation, pod, cached)
            if problem:
                return error(problem)
        return SUCCESS

    # -- events

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | _NODE_LABEL | _ALLOCATABLE)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, add_update),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, add_update)),
        )

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: ResourceClaim | None, new: ResourceClaim | None
    ) -> QueueingHint:
        dra = self._dra()
        helps = dra is None or claim_change_helps(pod, old, new, dra)
        return QueueingHint.QUEUE if helps else _SKIP

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        dra = self._dra()
        return QueueingHint.QUEUE if pod_change_helps(pod, new, dra) else _SKIP


def new(args: DynamicResourcesArgs | None, handle: Handle) -> DynamicResources:
    return DynamicResources(args or DynamicResourcesArgs(), handle)
