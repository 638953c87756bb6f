"""Framework: one profile's plugins, run extension point by extension point.

Built from a config Profile by ``Framework.from_profile``: every plugin listed at any
extension point is instantiated once (``new(args, handle)``) and shared across points, as
upstream does. Filter and Score are vectorised over a NodeSlice; the runtime adds what
upstream's frameworkImpl adds: Skip bookkeeping, first-failure-wins per node, the
normalised score range check and weights.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.config.expand import expand_plugins
from cluster_sched.config.types import Profile
from cluster_sched.errors import PluginError, SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import EVENT_WILDCARD, ClusterEvent, ClusterEventWithHint
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.instrumentation import instrument_framework, instrumented
from cluster_sched.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeSlice,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
)
from cluster_sched.framework.registry import Registry
from cluster_sched.framework.status import SUCCESS, Code, Status, as_status, error
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.framework.waiting_pods import new_waiting_pod
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import DISABLED, Tracing

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FilterOutcome:
    """Filter verdicts for ``k`` nodes plus the failing plugin of each failing node."""

    verdicts: NodeVerdicts
    #: int16[k]: index into ``Framework.filter_names`` of the first failing plugin, -1 if passed
    plugin_idx: np.ndarray

    @property
    def passed(self) -> np.ndarray:
        return self.verdicts.codes == 0


class Framework:
    """The plugins of one profile, ordered per extension point."""

    def __init__(
        self,
        profile_name: str,
        plugins: Mapping[str, Sequence[tuple[Any, int]]],
        handle: Handle,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        self.profile_name = profile_name
        self.handle = handle
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        p = {k: list(v) for k, v in plugins.items()}
        self.pre_enqueue = [pl for pl, _ in p.get("preEnqueue", [])]
        queue_sort = [pl for pl, _ in p.get("queueSort", [])]
        self.queue_sort = queue_sort[0] if queue_sort else None
        self.pre_filter = [pl for pl, _ in p.get("preFilter", [])]
        self.filter = [pl for pl, _ in p.get("filter", [])]
        self.filter_names = [pl.name for pl in self.filter]
        self.post_filter = [pl for pl, _ in p.get("postFilter", [])]
        self.pre_score = [pl for pl, _ in p.get("preScore", [])]
        self.score = [pl for pl, _ in p.get("score", [])]
        self.score_weights = {pl.name: w for pl, w in p.get("score", [])}
        #: Score plugins that tell when they give every node 0 (run_pre_score Skips them)
        self.zero_scores = [pl for pl in self.score if callable(getattr(pl, "zero_score", None))]
        self.reserve = [pl for pl, _ in p.get("reserve", [])]
        self.permit = [pl for pl, _ in p.get("permit", [])]
        self.pre_bind = [pl for pl, _ in p.get("preBind", [])]
        self.bind = [pl for pl, _ in p.get("bind", [])]
        self.post_bind = [pl for pl, _ in p.get("postBind", [])]
        self.tracing: Tracing = DISABLED
        self.metrics: Metrics = Metrics.disabled()
        #: True when tracing or metrics is on: extension points are then timed
        self.instrumented = False
        seen: dict[str, Any] = {}
        for entries in p.values():
            for pl, _ in entries:
                seen.setdefault(pl.name, pl)
        self.plugins: dict[str, Any] = seen

    # ------------------------------------------------------------------ construction

    def instrument(self, tracing: Tracing, metrics: Metrics) -> None:
        instrument_framework(self, tracing, metrics)

    @classmethod
    def from_profile(
        cls,
        profile: Profile,
        *,
        registry: Registry,
        handle: Handle | None = None,
        field: str = "profiles[0]",
    ) -> Framework:
        """Build the profile's plugins from ``registry`` (the in-tree one comes from
        ``cluster_sched.plugins.registry``; ``scheduler.profile`` wires both)."""
        handle = handle or Handle(profile_name=profile.scheduler_name)
        handle.profile_name = profile.scheduler_name
        referenced = profile.enabled_plugin_names()
        expanded = expand_plugins(profile, registry.capabilities(referenced), field=field)
        instances: dict[str, Any] = {}
        plugins: dict[str, list[tuple[Any, int]]] = {}
        for point, entries in expanded.items():
            for name, weight in entries:
                if name not in instances:
                    spec = registry.get(name)
                    if spec is None:  # expand_plugins already rejects unknown names
                        raise PluginError(f'{field}: unknown plugin "{name}"')
                    try:
                        instances[name] = spec.factory(profile.args_for(name), handle)
                    except PluginError:
                        raise
                    except Exception as exc:  # a plugin rejecting its args
                        raise PluginError(
                            f'{field}: plugin "{name}" failed to start: {exc}'
                        ) from exc
                    if not getattr(instances[name], "name", None):
                        instances[name].name = name
                plugins.setdefault(point, []).append((instances[name], weight))
        return cls(profile.scheduler_name, plugins, handle, profile.percentage_of_nodes_to_score)

    # ------------------------------------------------------------------ queue side

    def run_pre_enqueue(self, pod: Pod) -> Status:
        for pl in self.pre_enqueue:
            s = as_status(pl.pre_enqueue(pod))
            if not s.is_success:
                return s.with_plugin(pl.name)
        return SUCCESS

    def events_to_register(self) -> dict[str, tuple[ClusterEvent | ClusterEventWithHint, ...]]:
        """plugin name → events that may make pods it rejected schedulable (with their
        QueueingHintFns where the plugin gives them).

        A plugin that can reject pods but registers nothing is given the wildcard, as
        upstream does, so its pods are never stuck.
        """
        out: dict[str, tuple[ClusterEvent | ClusterEventWithHint, ...]] = {}
        rejecting = {
            pl.name
            for pl in (
                *self.pre_enqueue,
                *self.pre_filter,
                *self.filter,
                *self.reserve,
                *self.permit,
            )
        }
        for name, pl in self.plugins.items():
            fn = getattr(pl, "events_to_register", None)
            if fn is not None:
                out[name] = tuple(fn())
            elif name in rejecting:
                out[name] = (EVENT_WILDCARD,)
        out.update(self.handle.extender_events())
        return out

    # ------------------------------------------------------------------ filter

    @instrumented("PreFilter")
    def run_pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Returns (merged result, status, plugins that narrowed the nodes).

        Skip marks the plugin's Filter to be skipped. UnschedulableAndUnresolvable stops
        the loop; Unschedulable does not (preemption needs every plugin's PreFilter state,
        kubernetes#119770): the last one is returned once all plugins ran. Any other code
        (Pending included) is an error, as upstream.
        """
        result: PreFilterResult | None = None
        narrowing: set[str] = set()
        rejected: Status | None = None
        for pl in self.pre_filter:
            r, s = pl.pre_filter(state, pod, snapshot) or (None, None)
            s = as_status(s)
            if s.is_skip:
                state.skip_filter_plugins.add(pl.name)
                continue
            if not s.is_success:
                if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, s.with_plugin(pl.name), narrowing | {pl.name}
                if s.code == Code.UNSCHEDULABLE:
                    rejected = s.with_plugin(pl.name)
                    continue
                return (
                    None,
                    Status(
                        Code.ERROR,
                        (f'running PreFilter plugin "{pl.name}": {s.message()}',),
                        pl.name,
                    ),
                    narrowing,
                )
            if r is not None and r.node_names is not None:
                narrowing.add(pl.name)
                result = r if result is None else result.merge(r)
                if not result.node_names:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}] simultaneously"
                    if len(narrowing) == 1:
                        msg = f"node(s) didn't satisfy plugin {pl.name}"
                    return (
                        result,
                        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), pl.name),
                        narrowing,
                    )
        if rejected is not None:
            return result, rejected, narrowing | {rejected.plugin}
        return result, SUCCESS, narrowing

    @instrumented("Filter")
    def run_filter(
        self,
        state: CycleState,
        pod: Pod,
        nodes: NodeSlice,
        only: frozenset[str] | None = None,
    ) -> FilterOutcome:
        """Run Filter plugins in order; each later plugin sees only nodes still passing.
        ``only``: run just these plugins (the compiled path applies the others itself)."""
        k = len(nodes)
        verdicts = NodeVerdicts.passing(k)
        plugin_idx = np.full(k, -1, dtype=np.int16)
        alive = np.arange(k)
        for i, pl in enumerate(self.filter):
            if pl.name in state.skip_filter_plugins or not len(alive):
                continue
            if only is not None and pl.name not in only:
                continue
            # While no node failed, later plugins get the caller's slice (a prefix stays one).
            sub = pl.filter(
                state, pod, nodes if len(alive) == k else NodeSlice(nodes.table, nodes.rows[alive])
            )
            if sub is None:  # nil Status: every node passes
                continue
            failing = sub.codes != 0
            if not failing.any():
                continue
            # Only rejections are verdicts; any other code (Error, Skip, Wait) is an error.
            bad = failing & ~_IS_REJECTION[sub.codes]
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                raise SchedulerError(
                    f'running "{pl.name}" filter plugin: {", ".join(sub.reasons_of(j))}'
                )
            idx = alive[failing]
            offset = len(verdicts.reasons)
            verdicts.reasons.extend(sub.reasons)
            verdicts.codes[idx] = sub.codes[failing]
            verdicts.reason_ids[idx] = sub.reason_ids[failing] + offset
            plugin_idx[idx] = i
            alive = alive[~failing]
        return FilterOutcome(verdicts, plugin_idx)

    def filter_status(self, outcome: FilterOutcome, i: int) -> Status:
        """The Status of node ``i`` of a FilterOutcome, with its failing plugin."""
        code = int(outcome.verdicts.codes[i])
        if code == 0:
            return SUCCESS
        return Status(
            Code(code),
            outcome.verdicts.reasons_of(i),
            self.filter_names[int(outcome.plugin_idx[i])],
        )

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_name: str
    ) -> Status:
        return self._run_pre_filter_extension("AddPod", state, pod, pod_to_add, node_name)

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_name: str
    ) -> Status:
        return self._run_pre_filter_extension("RemovePod", state, pod, pod_to_remove, node_name)

    def _run_pre_filter_extension(
        self, op: str, state: CycleState, pod: Pod, other: Pod, node_name: str
    ) -> Status:
        """AddPod/RemovePod of every active PreFilter plugin that has extensions."""
        for pl in self.pre_filter:
            if pl.name in state.skip_filter_plugins:
                continue
            ext = pl.pre_filter_extensions()
            if ext is None:
                continue
            run = ext.add_pod if op == "AddPod" else ext.remove_pod
            s = as_status(run(state, pod, other, node_name))
            if not s.is_success:
                return error(f'running {op} on PreFilter plugin "{pl.name}": {s.message()}')
        return SUCCESS

    @instrumented("PostFilter")
    def run_post_filter(
        self, state: CycleState, pod: Pod, diagnosis: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """First plugin that succeeds (or errors) wins; otherwise the rejections joined."""
        if not self.post_filter:
            return None, Status(Code.UNSCHEDULABLE, (), "")
        reasons: list[str] = []
        result: PostFilterResult | None = None
        rejector = ""
        for pl in self.post_filter:
            r, s = pl.post_filter(state, pod, diagnosis) or (None, None)
            s = as_status(s)
            if s.is_success:
                return r, s.with_plugin(pl.name)
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, s.with_plugin(pl.name)
            if not s.is_rejected:
                return None, s.with_plugin(pl.name)
            if r is not None:
                result = r
            rejector = rejector or pl.name
            reasons.extend(s.reasons)
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # ------------------------------------------------------------------ score

    @instrumented("PreScore")
    def run_pre_score(
        self, state: CycleState, pod: Pod, snapshot: Any, feasible: NodeSlice
    ) -> Status:
        for pl in self.pre_score:
            s = as_status(pl.pre_score(state, pod, snapshot, feasible))
            if s.is_skip:
                state.skip_score_plugins.add(pl.name)
                continue
            if not s.is_success:
                return Status(
                    Code.ERROR, (f'running PreScore plugin "{pl.name}": {s.message()}',), pl.name
                )
        # as if they had a PreScore returning Skip (not one: capabilities stay upstream's)
        state.skip_score_plugins.update(
            pl.name for pl in self.zero_scores if pl.zero_score(state, pod)
        )
        return SUCCESS

    def active_score_plugins(self, state: CycleState) -> list[Any]:
        return [pl for pl in self.score if pl.name not in state.skip_score_plugins]

    @instrumented("Score")
    def run_score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> dict[str, np.ndarray]:
        """Raw scores (before NormalizeScore) per active score plugin, int64[k] each."""
        out: dict[str, np.ndarray] = {}
        for pl in self.active_score_plugins(state):
            out[pl.name] = np.asarray(pl.score(state, pod, nodes), dtype=np.int64)
        return out

    @instrumented("ScoreExtensionNormalize")
    def normalize_scores(
        self, state: CycleState, pod: Pod, raw: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """NormalizeScore over all feasible nodes, then upstream's range check."""
        out: dict[str, np.ndarray] = {}
        for name, scores in raw.items():
            pl = self.plugins[name]
            norm = getattr(pl, "normalize_score", None)
            s = np.asarray(norm(state, pod, scores), dtype=np.int64) if norm is not None else scores
            if len(s) and (s.max() > MAX_NODE_SCORE or s.min() < MIN_NODE_SCORE):
                bad = int(s.max()) if s.max() > MAX_NODE_SCORE else int(s.min())
                raise SchedulerError(
                    "applying score defaultWeights on Score plugins: "
                    f'plugin "{name}" returns an invalid score {bad}, it should in the range of '
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
            out[name] = s
        return out

    def weighted_total(self, normalized: Mapping[str, np.ndarray], k: int) -> np.ndarray:
        total = np.zeros(k, dtype=np.int64)
        for name, s in normalized.items():
            total += s * self.score_weights.get(name, 1)
        return total

    # ------------------------------------------------------------------ reserve / permit / bind

    @instrumented("Reserve")
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.reserve:
            s = as_status(pl.reserve(state, pod, node_name))
            if not s.is_success:
                if s.is_rejected:
                    return s.with_plugin(pl.name)
                return Status(
                    Code.ERROR, (f'running Reserve plugin "{pl.name}": {s.message()}',), pl.name
                )
        return SUCCESS

    @instrumented("Unreserve")
    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Every Reserve plugin, in reverse order (upstream), whether or not it reserved."""
        for pl in reversed(self.reserve):
            pl.unreserve(state, pod, node_name)

    @instrumented("Permit")
    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Allow, reject, or WAIT (the pod enters the waiting-pods map)."""
        timeouts: dict[str, float] = {}
        for pl in self.permit:
            s, timeout = pl.permit(state, pod, node_name) or (None, 0.0)
            s = as_status(s)
            if s.is_success:
                continue
            if s.is_rejected:
                return s.with_plugin(pl.name)
            if s.code == Code.WAIT:
                timeouts[pl.name] = min(max(float(timeout), 0.0), MAX_PERMIT_TIMEOUT)
                continue
            return Status(
                Code.ERROR, (f'running Permit plugin "{pl.name}": {s.message()}',), pl.name
            )
        if timeouts:
            waiting = self.handle.waiting_pods
            waiting.add(new_waiting_pod(pod.key, node_name, timeouts, waiting.clock))
            return Status(
                Code.WAIT,
                (f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"',),
            )
        return SUCCESS

    @instrumented("WaitOnPermit")
    def wait_on_permit(self, pod: Pod) -> Status:
        wp = self.handle.waiting_pods.get(pod.key)
        if wp is None:
            return SUCCESS
        try:
            return wp.wait()
        finally:
            self.handle.waiting_pods.remove(pod.key)

    @instrumented("PreBind")
    def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.pre_bind:
            s = as_status(pl.pre_bind(state, pod, node_name))
            if not s.is_success:
                return (
                    s.with_plugin(pl.name)
                    if s.is_rejected
                    else Status(
                        Code.ERROR, (f'running PreBind plugin "{pl.name}": {s.message()}',), pl.name
                    )
                )
        return SUCCESS

    @instrumented("Bind")
    def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """First bind plugin that does not Skip decides."""
        for pl in self.bind:
            s = as_status(pl.bind(state, pod, node_name))
            if s.is_skip:
                continue
            if not s.is_success:
                return (
                    s.with_plugin(pl.name)
                    if s.is_rejected
                    else Status(
                        Code.ERROR, (f'running Bind plugin "{pl.name}": {s.message()}',), pl.name
                    )
                )
            return SUCCESS
        return Status(Code.SKIP, ("no bind plugin bound the pod",))

    @instrumented("PostBind")
    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Every PostBind plugin; informational, as upstream ignores their outcome: one
        that raises or returns a failure is logged, the others still run. Never raises."""
        for pl in self.post_bind:
            try:
                s = pl.post_bind(state, pod, node_name)
            except Exception:
                log.warning("PostBind plugin %s raised for pod %s", pl.name, pod.key, exc_info=True)
                continue
            if isinstance(s, Status) and not s.is_success:
                log.warning("PostBind plugin %s for pod %s: %s", pl.name, pod.key, s.message())


#: Code value -> is it a rejection (a Filter verdict) rather than an error.
_IS_REJECTION = np.zeros(max(Code) + 1, dtype=bool)
_IS_REJECTION[[Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING]] = True

#: Upstream maxTimeout for Permit waits (15 minutes).
MAX_PERMIT_TIMEOUT = 15 * 60.0
