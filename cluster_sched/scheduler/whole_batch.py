"""Whole batches on the compiled path: consecutive popped pods of one shape decided in
one kernel call (``kernels.run``), Python keeping only each pod's bookkeeping (issue 23,
item 1).

When the next pods of a popped batch are of one shape (the parsed spec objects pods of
one template share, same namespace, labels and requests) and that shape's PreFilter and
PreScore are shared with no plugin run again per pod (``pre_cycle``) and its columns
scored (``fast_path``), the serial loop would take each of them through the same
compiled attempt, one after another, each seeing the columns its predecessors assumed.
``kernels.run`` takes those decisions in one call: the same windows, rotation, tie sets
and RNG draws. Then, pod by pod and in order: its PreFilter (and, when it was scored, its
PreScore) state from the shared entry, OpportunisticBatching's counters, and
``SchedulingCycle.commit`` (assume, Reserve, Permit, binding job), exactly as after a
single attempt. The assumes come first, in one ``Cache.assume_pods`` call (one
vectorised add per node column over the run's hosts) when the profile's Reserve and
Permit plugins are in-tree ones that read no other pod's accounting (``_BULK_SAFE``), so
none can tell; pods the run does not reach are then forgotten (pod states and columns as
if never assumed; the version counters moved on, which only invalidates caches). If a
pod's commit fails (assume error, Reserve or Permit rejection), the
pods after it were decided on columns that no longer hold: the RNG and the rotation are
rewound to just after that pod and the run ends there; the loop schedules the rest.

With OpportunisticBatching on, signed pods (``framework.signature``) take their
decisions from ``kernels.run.evaluate_hinted_run``, which keeps the hint list as
``scheduler.batching`` does, and ``whole_batch_hints`` replays the profile's
``OpportunisticBatch`` pod by pod (its counters, flushes and kept list as after the
serial cycles); a pod whose clock reading makes the list unusable where the kernel used
it (``MAX_BATCH_AGE``) ends the run before it. Such a run covers only consecutive
scheduling cycles (a gap is a flush the next cycle records).

PodTopologySpread's Filter (DoNotSchedule constraints) is carried by the kernel
(``kernels.spread``): the first pod's PreFilter counts, each assumed pod added to its
host's domains, the verdicts of the rows whose domain crossed its limit redone (issue 23,
item 5). The later pods' PreFilter does not run it again: their states take the first
pod's (the counts as of the run's start, ``pre_cycle``'s ``carry``), which nothing after
Filter reads; nor is the shared state looked up again for them
(``PreCycleReuse.pre_filter_next``: nothing changes between the run's PreFilters).

InterPodAffinity's Filter (required affinity and anti-affinity terms, the pods' own
and the existing pods') likewise (``kernels.affinity``): the first pod's PreFilter
counts, each assumed pod adding what a pod of the spec adds to its host's domains. Its
Score is not carried: a run needs its PreScore to Skip for every pod of the run
(``InterPodAffinity.run_score_skips``: no preferred term and no hard-weighted required
affinity term the pods match themselves, nothing scored now), else the pods take the
ordinary cycle.

What no run covers (each pod then takes the ordinary cycle): tracing, an attempt drawn
to time every plugin (metrics on: 10 %, the others run and record as the compiled path),
nominated pods anywhere, a pod with a nominated node, extenders, cross-node plugins that
filter or score per pod other than PodTopologySpread's and InterPodAffinity's Filter
(PodTopologySpread's Score, for ScheduleAnyway constraints: the domain weights follow
the feasible set; InterPodAffinity's Score; NodePorts), a pod without a feasible node
(the FitError needs every plugin),
a hint that fails Filter (its status joins the plugins' diagnosis), profiles with
out-of-tree signers (a shape need not sign alike).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.features import OPPORTUNISTIC_BATCHING
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.instrumentation import record_compiled_phase, record_shared_phase
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.signature import (
    PodSignature,
    profile_signers,
    sign_pod,
    signature_follows_shape,
)
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.kernels.run import PodVector, RunResult, evaluate_hinted_run, evaluate_run
from cluster_sched.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY as IPA_KEY
from cluster_sched.plugins.names import DYNAMIC_RESOURCES, INTER_POD_AFFINITY, VOLUME_BINDING
from cluster_sched.plugins.podtopologyspread.filtering import PreFilterState
from cluster_sched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY as SPREAD_KEY
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.batching import batch_of
from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.pre_cycle import shape_refs
from cluster_sched.scheduler.whole_batch_hints import HintReplay, UnsignedReplay, kept_list

if TYPE_CHECKING:
    from cluster_sched.scheduler.schedule_one import SchedulingCycle

__all__ = ["MIN_RUN", "schedule_run"]

#: Fewer pods than this take the ordinary cycle (a run's fixed cost is a kernel call).
MIN_RUN = 2

#: Reserve and Permit plugins under which a run's pods are assumed in one call: theirs
#: read no accounting of the other pods (VolumeBinding: the pod's claims; DRA: its own).
_BULK_SAFE = frozenset({VOLUME_BINDING, DYNAMIC_RESOURCES})


def _member(sc: SchedulingCycle, info: QueuedPodInfo, first: Pod | None) -> Pod | None:
    """The pod of ``info`` if it may join a run led by ``first`` (None: leads one)."""
    pod = sc.pods.get(info.pod_key)
    if (
        pod is None
        or pod.node_name
        or pod.meta.deletion_timestamp is not None
        or pod.nominated_node_name
        or pod.volumes
        or sc.cache.is_assumed(pod.key)
    ):
        return None
    if first is None:
        return pod
    same = (
        pod.scheduler_name == first.scheduler_name
        and pod.meta.namespace == first.meta.namespace
        and all(a is b for a, b in zip(shape_refs(pod), shape_refs(first), strict=True))
        and pod.meta.labels == first.meta.labels
        and pod.requests == first.requests
        and pod.nonzero_cpu == first.nonzero_cpu
        and pod.nonzero_memory == first.nonzero_memory
        and pod.resource_claims == first.resource_claims
    )
    return pod if same else None


def schedule_run(sc: SchedulingCycle, batch: Sequence[tuple[QueuedPodInfo, int]]) -> int:
    """Schedule the longest run of same-shape pods at the head of ``batch`` that the
    kernel decides; returns how many pods were handled (0: none, the ordinary cycle
    takes ``batch[0]``)."""
    fast = sc.algorithm.fast
    if fast is None or fast.pre_cycle is None or sc.tracing.enabled or len(batch) < MIN_RUN:
        return 0
    snapshot = sc.cache.snapshot
    if not isinstance(snapshot, Snapshot) or sc.queue.nominator.nominated_pods():
        return 0
    first = _member(sc, batch[0][0], None)
    if first is None:
        return 0
    fwk = sc.frameworks.get(first.scheduler_name)
    if fwk is None or fwk.tracing.enabled or not fwk.score or fwk.handle.extenders:
        return 0
    if _member(sc, batch[1][0], first) is None:
        return 0  # cheap checks first: a declined run costs the pod nothing
    rechecks = fast.pre_cycle.settled_for(fwk, first, snapshot)
    if rechecks is None or (
        INTER_POD_AFFINITY in rechecks and not _affinity_score_skips(fwk, first, snapshot)
    ):
        return 0
    gate = fwk.handle.features.enabled(OPPORTUNISTIC_BATCHING)
    if gate and not signature_follows_shape(fwk) and profile_signers(fwk) is not None:
        return 0  # out-of-tree signers: pods of one shape may not sign alike
    signature = sign_pod(fwk, first) if gate else None
    pods: list[Pod] = []
    states: list[CycleState] = []
    drawn: list[tuple[str, bool]] = []  # plugin-metrics draws, kept for pods not taken
    try:
        handled = _run(sc, fwk, batch, first, signature, gate, rechecks, pods, states, drawn)
    finally:
        sc.samples.update(drawn[handled:] if handled else drawn)
    return handled


def _run(
    sc: SchedulingCycle,
    fwk: Framework,
    batch: Sequence[tuple[QueuedPodInfo, int]],
    first: Pod,
    signature: PodSignature | None,
    gate: bool,
    rechecks: frozenset[str],
    pods: list[Pod],
    states: list[CycleState],
    drawn: list[tuple[str, bool]],
) -> int:
    """``schedule_run`` once the run may start: its pods' PreFilter, the kernel call and
    the commits; returns the pods handled."""
    algorithm, fast = sc.algorithm, sc.algorithm.fast
    assert fast is not None and fast.pre_cycle is not None
    table = sc.source.table
    snapshot = sc.cache.snapshot
    assert isinstance(snapshot, Snapshot)
    skip_score: frozenset[str] | None = None
    phases: list[tuple[float, list[str]] | None] = []  # shared PreFilters' metrics
    for info, cycle in batch:
        pod = _member(sc, info, first) if pods else first
        if pod is None:
            break
        if signature is not None and pods and cycle != batch[len(pods) - 1][1] + 1:
            break
        state = CycleState()
        if fwk.metrics.enabled:  # a sampled attempt times each plugin: its own cycle
            drawn.append((pod.key, sc.draw_sample(fwk, state, pod.key)))
            if drawn[-1][1]:
                break
        carry = states[0] if states else None  # its PodTopologySpread state: no rerun
        phase = None
        if carry is None or not fast.pre_cycle.pre_filter_next(fwk, state, pod, snapshot, carry):
            pre = fast.pre_cycle.pre_filter(fwk, state, pod, snapshot, carry, record=False)
            settled = fast.pre_cycle.settled_skip_score()
            if pre[0] is not None or not pre[1].is_success or settled is None:
                break
            if skip_score is not None and settled != skip_score:
                break
            skip_score, phase = settled, fast.pre_cycle.shared_phase
        # else the first pod's entry and answer, so its Skip sets
        if states and _spread_constraints(state) is not _spread_constraints(states[0]):
            break  # PodTopologySpread's constraints not the first pod's (another owner's)
        if states and not _same_affinity(state, states[0]):
            break  # InterPodAffinity's state not carried from the first pod's
        pods.append(pod)
        states.append(state)
        phases.append(phase)
    if len(pods) < MIN_RUN or skip_score is None:
        return 0
    planned = fast.run_query(fwk, states[0], first, table, skip_score, len(pods))
    if planned is None:
        return 0
    profile, query, spread, affinity = planned
    if (spread is not None or affinity is not None) and signature is not None:
        return 0  # such pods are unsignable: a hinted run never carries counts
    n = len(table.index)
    pct = fwk.percentage_of_nodes_to_score
    to_find = num_feasible_nodes_to_find(
        pct if pct is not None else algorithm.percentage_of_nodes_to_score, n
    )
    start = algorithm.next_start_node_index % n
    cols, vals = table.resource_vector(first.requests)
    vector = PodVector(cols, vals, first.nonzero_cpu, first.nonzero_memory)
    rng_before = algorithm.rng.getstate()
    began = time.perf_counter()
    at = replace(query, start=start)
    replay: Callable[[int, int, float], bool] | None = None
    finish: Callable[[int], None] | None = None
    if signature is not None:
        bt = batch_of(algorithm, fwk)
        kept, last = kept_list(bt, signature, batch[0][1], sc.clock.now(), table)
        hinted = evaluate_hinted_run(
            table, profile, at, to_find, len(pods), vector, algorithm.rng, kept, last
        )
        result = hinted.run
        replay = hint_replay = HintReplay(sc, fwk, bt, signature, hinted, pods, states)
        finish = hint_replay.finish
    else:
        result = evaluate_run(
            table, profile, at, to_find, len(pods), vector, algorithm.rng, spread, affinity
        )
        if gate:
            replay = unsigned = UnsignedReplay(batch_of(algorithm, fwk), table, result)
            finish = unsigned.finish
    m = len(result)
    if m == 0:
        algorithm.rng.setstate(rng_before)
        return 0
    algorithm.next_start_node_index = int(result.starts[-1] + result.evaluated[-1]) % n
    fast.shape_hits += m - 1  # run_query counted the first pod's
    fast.whole_batch_runs += 1
    share = (time.perf_counter() - began) / m
    handled = 0  # pods committed or handed to the failure handler: their bookkeeping
    try:
        handled = _commit_all(
            sc, fwk, batch, pods, states, result, replay, share, rng_before, n, phases, rechecks
        )
        fast.whole_batch_pods += handled
        return handled
    finally:
        if finish is not None:
            finish(handled)


def _spread_constraints(state: CycleState) -> object:
    """The pod's PodTopologySpread DoNotSchedule constraints (the plugin hands pods of
    one spec, labels and owner the same tuple; the kernel carries the first pod's), or
    None."""
    s = state.get(SPREAD_KEY)
    return s.constraints if isinstance(s, PreFilterState) else None


def _same_affinity(state: CycleState, first: CycleState) -> bool:
    """InterPodAffinity Skips for both or the pod holds the first pod's state (carried:
    ``pre_cycle``), so the kernel's counts are its own."""
    skipped = INTER_POD_AFFINITY in state.skip_filter_plugins
    if skipped != (INTER_POD_AFFINITY in first.skip_filter_plugins):
        return False
    return skipped or state.get(IPA_KEY) is first.get(IPA_KEY)


def _affinity_score_skips(fwk: Framework, pod: Pod, snapshot: Snapshot) -> bool:
    """InterPodAffinity's PreScore Skips for ``pod`` and the run's later pods."""
    plugin = next((pl for pl in fwk.pre_score if pl.name == INTER_POD_AFFINITY), None)
    return plugin is None or bool(plugin.run_score_skips(pod, snapshot))


def _commit_all(
    sc: SchedulingCycle,
    fwk: Framework,
    batch: Sequence[tuple[QueuedPodInfo, int]],
    pods: list[Pod],
    states: list[CycleState],
    result: RunResult,
    replay: Callable[[int, int, float], bool] | None,
    share: float,
    rng_before: tuple[object, ...],
    n: int,
    phases: list[tuple[float, list[str]] | None],
    known_skips: frozenset[str],
) -> int:
    """Each decided pod's bookkeeping, in order, as after a single compiled attempt;
    ``replay(i, cycle, now)``: OpportunisticBatching's, False when pod ``i`` is not the
    kernel's to decide after all (the run ends before it); ``known_skips``: the PreScore
    plugins checked to Skip for every pod of the run. With metrics on, each pod's
    extension points as the compiled path records them: its shared PreFilter
    (``phases``), Filter, and with several feasible nodes PreScore, Score and
    NormalizeScore, the kernel's time split evenly over the run's pods."""
    algorithm, table = sc.algorithm, sc.source.table
    names = table.names
    reuse = algorithm.fast.pre_cycle if algorithm.fast is not None else None
    assert reuse is not None
    snapshot = sc.cache.snapshot
    assert isinstance(snapshot, Snapshot)
    sc.activate_failed_preemptors()
    hosts = result.hosts.tolist()
    found = result.found.tolist()
    host_names: list[str] = [names[r] for r in hosts]  # type: ignore[misc]
    bulk = _assume_all(sc, fwk, pods, host_names)
    reached = 0  # pods whose commit was called: the other bulk-assumed ones are forgotten
    sc.hold_bindings()
    try:
        for i, (pod, state, _) in enumerate(zip(pods, states, hosts, strict=False)):
            info, cycle = batch[i]
            sc.queue.cycle_in_progress = cycle
            began = time.perf_counter() - share
            now = sc.clock.now()
            if replay is not None and not replay(i, cycle, now):
                _rewind(algorithm, rng_before, result, i - 1, n)
                if algorithm.fast is not None:  # the cycle counts the rest's own
                    algorithm.fast.shape_hits -= len(hosts) - max(i, 1)
                return i
            sc.stats.on_pop(pod.key, now)
            host = host_names[i]
            timed = fwk.metrics.enabled
            if timed:
                phase = phases[i]
                if phase is not None:
                    record_shared_phase(fwk, "PreFilter", *phase)
                record_compiled_phase(fwk, "Filter", (0, round(share * 1e9)))
            if found[i] >= 2:  # a lone feasible node (or a hint) is taken unscored: no PreScore
                nodes = NodeSlice(table, result.hosts[i : i + 1])
                reuse.pre_score(fwk, state, pod, snapshot, nodes, known_skips)
                if timed:
                    window = (0, round(share * 1e9))
                    record_compiled_phase(fwk, "Score", window, also=("ScoreExtensionNormalize",))
            sc.metrics.observe_algorithm(share)
            assumed = bulk[i] if i < len(bulk) else None
            reached = i + 1
            if not sc.commit(fwk, state, pod, info, cycle, began, host, assumed):
                _rewind(algorithm, rng_before, result, i, n)
                return i + 1
        return len(hosts)
    finally:
        sc.release_bindings()
        for pod in reversed(bulk[reached:]):  # as if never assumed (Forget)
            sc.cache.forget_pod(pod)


def _assume_all(
    sc: SchedulingCycle, fwk: Framework, pods: list[Pod], hosts: list[str]
) -> list[Pod]:
    """The run's decided pods on their hosts assumed in one call (``Cache.assume_pods``), when
    no Reserve or Permit plugin could see the difference (the in-tree ones that read
    nothing the later pods' accounting changes); the assumed prefix (empty: each pod's
    commit assumes it)."""
    if any(pl.name not in _BULK_SAFE for pl in (*fwk.reserve, *fwk.permit)):
        return []
    assumed = [evolve(p, node_name=h) for p, h in zip(pods, hosts, strict=False)]
    return assumed[: sc.cache.assume_pods(assumed, hosts)]


def _rewind(
    algorithm: Scheduler, before: tuple[object, ...], result: RunResult, last: int, n: int
) -> None:
    """RNG and rotation as the serial loop leaves them after pod ``last`` (-1: as
    before the run): the draws of pods 0..last replayed from the state before the run."""
    rng: random.Random = algorithm.rng
    rng.setstate(before)
    for t in result.ties[: last + 1].tolist():
        if t > 1:
            rng.randrange(t)
    if last < 0:
        algorithm.next_start_node_index = int(result.starts[0])
        return
    algorithm.next_start_node_index = int(result.starts[last] + result.evaluated[last]) % n
