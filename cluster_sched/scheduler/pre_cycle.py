"""PreFilter and PreScore answers shared by pods of one shape, while the cluster facts
they read stay the same.

A Deployment's pods are identical but for their names. For such a pod, the in-tree
PreFilter and PreScore plugins of the default profile compute their state from the
pod's own spec (requests, tolerations, node affinity, ports) — except the cross-node
plugins (InterPodAffinity, PodTopologySpread), which read the cluster's pods and
controllers, and the volume plugins, which read claims. When the cross-node plugins
Skip for a pod (it has no terms or constraints, no existing pod has affinity terms, no
controller gives it default constraints) and the pod has no volumes, the next pod of the
same shape would get the same answers and the same state, as long as the facts those
Skips read are unchanged: the node table (``node_version``), the cluster objects
(controllers, namespaces, PDBs, storage: ``Snapshot.objects_version``) and the absence
of any pod-affinity group in the pod index. Then the state is copied instead of running
some fifteen plugins again; anything else runs them as before.

PodTopologySpread may also be active (not Skip) for a shared state: its PreFilter and
PreScore read the pod counts, which move with every assumed pod, so they run again for
each pod on top of the others' copied state (``PER_POD``); its Skip or not depends on the
pod's spec and the controllers alone, so it is the same for every pod of the shape.
Within a whole-batch run (``whole_batch``) the pods after the first take the first pod's
PodTopologySpread state instead (``carry``): same constraints, namespace, labels and
inclusion inputs on the same counts, so the same state; the kernel carries the counts
from there, and nothing after Filter reads that state (Filter, AddPod/RemovePod for
preemption and nominated pods are its only readers: a run has neither).

InterPodAffinity joins them (``rerun_ipa``) when any pod group has pod (anti-)affinity
or the pod has terms of its own: its PreFilter and PreScore then run again for each
pod, Skip or not (a Skip is then no longer a fact of the shape: an existing pod's
anti-affinity term may match the next pod), on top of the others' copied state; a
whole-batch run's later pods take the first pod's PreFilter state as for
PodTopologySpread, and its PreScore must Skip for all of them (``settled_skip_score``:
the caller checks, ``InterPodAffinity.run_score_skips``).

Not used when cycles are traced: each pod's extension points are then spans of their
own. With metrics on, the cycles drawn to time every plugin run them (``algorithm``); for
the others a shared answer is recorded as running the plugins records it: the extension
point's duration (the time the shared answer took) and the evaluation of each plugin that
did not Skip (``record_shared_phase``). The sampling decision itself is the pod's own,
never shared.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.instrumentation import RECORD_PLUGIN_METRICS, record_shared_phase
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.framework.status import SUCCESS, Status, as_status
from cluster_sched.nodetable.podindex import PodIndex
from cluster_sched.plugins import names
from cluster_sched.plugins.interpodaffinity.filtering import PreFilterState as IpaState
from cluster_sched.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY as IPA_KEY
from cluster_sched.plugins.podtopologyspread.constraints import DO_NOT_SCHEDULE
from cluster_sched.plugins.podtopologyspread.filtering import PreFilterState
from cluster_sched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY as SPREAD_KEY

__all__ = ["PreCycleReuse", "plugin_names"]

#: PreFilter/PreScore plugins whose state depends on the pod alone, or (the cross-node
#: ones) whose Skip depends on the facts the validity key covers.
KNOWN = frozenset(
    {
        names.NODE_AFFINITY,
        names.NODE_PORTS,
        names.NODE_RESOURCES_FIT,
        names.VOLUME_RESTRICTIONS,
        names.NODE_VOLUME_LIMITS,
        names.VOLUME_BINDING,
        names.VOLUME_ZONE,
        names.POD_TOPOLOGY_SPREAD,
        names.INTER_POD_AFFINITY,
        names.DYNAMIC_RESOURCES,
        names.TAINT_TOLERATION,
        names.NODE_RESOURCES_BALANCED_ALLOCATION,
    }
)
#: Must Skip (PreFilter and PreScore) for a state to be shared, unless in PER_POD.
CROSS_NODE = frozenset({names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY})
#: Cross-node plugins whose PreFilter/PreScore run again for every pod when active (their
#: state is the pod counts; nothing else reads it).
PER_POD = frozenset({names.POD_TOPOLOGY_SPREAD})
#: Run again for every pod when any pod group has pod (anti-)affinity or the pod has
#: terms: whether they Skip depends on the pods placed (``rerun_ipa``).
PER_POD_IF_AFFINITY = frozenset({names.INTER_POD_AFFINITY})
#: Shapes remembered (cleared when full).
CACHE_SIZE = 1024

PreFilterAnswer = tuple[PreFilterResult | None, Status, set[str]]

#: extension-point lists' plugin names (``plugin_names``), by the list's identity
_NAMES: dict[int, tuple[list[Any], int, frozenset[str]]] = {}
#: lists remembered (cleared when full: a cache, never a leak)
NAMES_KEPT = 64


def plugin_names(plugins: list[Any]) -> frozenset[str]:
    """The names of a framework's extension-point list (``fwk.pre_filter``...), kept per
    list: every pod's PreFilter asked whether a profile's plugins are all KNOWN, three
    times over some fifteen plugins (~9 µs per pod on the shards' path at 1,000,000
    nodes), for lists a profile makes once (``Framework.__init__``). The list is held, so
    its identity is its own while kept; its length is checked too."""
    hit = _NAMES.get(id(plugins))
    if hit is not None and hit[0] is plugins and hit[1] == len(plugins):
        return hit[2]
    got = frozenset(pl.name for pl in plugins)
    if len(_NAMES) >= NAMES_KEPT:
        _NAMES.clear()
    _NAMES[id(plugins)] = (plugins, len(plugins), got)
    return got


@dataclass(slots=True)
class _Entry:
    refs: tuple[object, ...]
    namespace: str
    labels: dict[str, str]
    validity: tuple[int, ...]
    pre: PreFilterAnswer
    data: dict[str, Any]
    skip_filter: frozenset[str]
    #: PER_POD plugins active in PreFilter (and InterPodAffinity when ``rerun_ipa``):
    #: run again for every pod of the shape
    rerun: tuple[Any, ...] = ()
    #: filled by the shape's first PreScore that Skips the cross-node plugins
    score_data: dict[str, Any] | None = None
    skip_score: frozenset[str] | None = None
    #: PER_POD plugins active in PreScore (and InterPodAffinity when ``rerun_ipa``):
    #: run again for every pod of the shape
    rerun_score: tuple[Any, ...] = ()


def shape_refs(pod: Pod) -> tuple[object, ...]:
    """The parsed-spec objects the known plugins read (shared by pods of one spec)."""
    return (
        pod.containers,
        pod.init_containers,
        pod.overhead,
        pod.tolerations,
        pod.affinity,
        pod.node_selector,
        pod.topology_spread_constraints,
        pod.node_name,
    )


class PreCycleReuse:
    """``pre_filter`` / ``pre_score`` in place of the framework's, sharing state by shape."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry] = {}
        #: (id(index), version) -> whether any pod group has pod (anti-)affinity
        self._affinity: tuple[int, int, bool] = (0, -1, True)
        #: the entry the last pre_filter used or made (its pre_score follows)
        self._current: _Entry | None = None
        #: metrics on and ``pre_filter(record=False)`` shared its answer: (seconds,
        #: plugins evaluated) for ``record_shared_phase``
        self.shared_phase: tuple[float, list[str]] | None = None
        self.hits = 0
        self.misses = 0

    def counters(self) -> dict[str, int]:
        return {"pre_cycle_hits": self.hits, "pre_cycle_misses": self.misses}

    def pre_filter(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        carry: CycleState | None = None,
        record: bool = True,
    ) -> PreFilterAnswer:
        """``carry``: the state of a pod of the same shape, namespace and labels whose
        PreFilter ran on this snapshot with nothing assumed since (a whole-batch run's
        first pod): the PER_POD plugins' states are taken from it, not run again, when
        it holds them for this pod's constraints. ``record`` False: a shared answer's
        metrics (``shared_phase``) are left to the caller, which records them once the
        pod's attempt is its own (a whole-batch run may hand the pod back)."""
        self._current = None
        self.shared_phase = None
        validity = self._validity(fwk, pod, snapshot)
        if validity is None:
            self.misses += 1
            return fwk.run_pre_filter(state, pod, snapshot)
        refs = shape_refs(pod)
        key = (id(fwk), *map(id, refs))
        entry = self._entries.get(key)
        if (
            entry is not None
            and entry.validity == validity
            and entry.namespace == pod.meta.namespace
            and entry.labels == pod.meta.labels
            and all(map(operator.is_, entry.refs, refs))  # shape_refs: one length
        ):
            began = time.perf_counter()
            sampled = state.get(RECORD_PLUGIN_METRICS)
            state.restore(entry.data, entry.skip_filter, frozenset())
            if sampled is not None:  # the pod's own decision
                state.write(RECORD_PLUGIN_METRICS, sampled)
            carried = carry is not None and _carry_pre_filter(
                entry.rerun, state, pod, snapshot, carry
            )
            if carried or _rerun_pre_filter(entry.rerun, state, pod, snapshot):
                self.hits += 1
                self._current = entry
                if fwk.metrics.enabled:
                    ran = () if carried else entry.rerun
                    phase = (
                        time.perf_counter() - began,
                        _evaluated(fwk.pre_filter, entry.skip_filter, ran),
                    )
                    if record:
                        record_shared_phase(fwk, "PreFilter", *phase)
                    else:
                        self.shared_phase = phase
                return entry.pre[0], entry.pre[1], set(entry.pre[2])
            state.restore({}, frozenset(), frozenset())  # run every plugin afresh
            if sampled is not None:
                state.write(RECORD_PLUGIN_METRICS, sampled)
        self.misses += 1
        pre = fwk.run_pre_filter(state, pod, snapshot)
        present = plugin_names(fwk.pre_filter) & CROSS_NODE
        per_pod = _per_pod(validity)
        if pre[0] is None and pre[1].is_success and present - per_pod <= state.skip_filter_plugins:
            if len(self._entries) >= CACHE_SIZE:
                self._entries.clear()
            entry = _Entry(
                refs,
                pod.meta.namespace,
                dict(pod.meta.labels),
                validity,
                (pre[0], pre[1], set(pre[2])),
                _shared_data(state),
                frozenset(state.skip_filter_plugins),
                _active(fwk.pre_filter, state.skip_filter_plugins, per_pod),
            )
            self._entries[key] = entry
            self._current = entry
        return pre

    def pre_filter_next(
        self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot, carry: CycleState
    ) -> bool:
        """``pre_filter(fwk, state, pod, snapshot, carry)`` for the next pod of a
        whole-batch run, without the validity key and the lookup: ``pod`` has the
        shape, namespace and labels of the run's first pod, whose ``pre_filter`` shared
        the current entry with nothing assumed or changed since (``carry``: its state),
        so the key and the entry are the ones found then. True when the entry's answer
        is the pod's (its PER_POD states carried, as ``pre_filter`` takes them); False,
        nothing written, when the caller must call ``pre_filter`` (metrics on: the
        shared phase is timed there; no current entry; the carry does not apply)."""
        entry = self._current
        if entry is None or fwk.metrics.enabled:
            return False
        state.restore(entry.data, entry.skip_filter, frozenset())
        if not _carry_pre_filter(entry.rerun, state, pod, snapshot, carry):
            state.restore({}, frozenset(), frozenset())
            return False
        self.hits += 1
        return True

    def settled_for(self, fwk: Framework, pod: Pod, snapshot: Snapshot) -> frozenset[str] | None:
        """Whether ``pre_filter`` would share, for ``pod``, a state whose PreScore is
        shared too with no plugin run again per pod in PreScore but InterPodAffinity (no
        plugin runs to find out: a whole-batch run declines before costing the pod
        anything): None if not, else the plugins ``settled_skip_score`` will count as
        Skipped for the caller to check. PreFilter's per-pod plugins may run per pod: a
        run carries their counts itself (``kernels.spread``, ``kernels.affinity``)."""
        validity = self._validity(fwk, pod, snapshot)
        if validity is None:
            return None
        e = self._entries.get((id(fwk), *map(id, shape_refs(pod))))
        if (
            e is None
            or e.validity != validity
            or e.score_data is None
            or any(pl.name not in PER_POD_IF_AFFINITY for pl in e.rerun_score)
        ):
            return None
        return frozenset(pl.name for pl in e.rerun_score)

    def settled_skip_score(self) -> frozenset[str] | None:
        """The PreScore Skip set of the shape the last ``pre_filter`` shared, when its
        PreFilter and PreScore states are both shared with no plugin run again per pod
        but PreFilter's PER_POD ones (PodTopologySpread: whose counts a run carries):
        then every pod of the shape gets the same answers while the validity key holds
        (a whole run of them may be decided at once); None otherwise. InterPodAffinity,
        when it runs again per pod in PreScore, counts as Skipped: the caller checks
        that it Skips for every pod of its run (``InterPodAffinity.run_score_skips``)."""
        e = self._current
        if e is None or e.score_data is None or e.skip_score is None:
            return None
        if any(pl.name not in PER_POD_IF_AFFINITY for pl in e.rerun_score):
            return None
        return e.skip_score | {pl.name for pl in e.rerun_score}

    def pre_score(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        nodes: NodeSlice,
        known_skips: frozenset[str] = frozenset(),
    ) -> Status:
        """``known_skips``: per-pod plugins the caller knows Skip for ``pod`` (a
        whole-batch run's, checked by ``InterPodAffinity.run_score_skips``): recorded
        as Skipped instead of run again."""
        entry = self._current
        if entry is not None and entry.score_data is not None and entry.skip_score is not None:
            # this pod's PreFilter entries (the PER_POD ones are its own) over the shared
            # PreScore entries
            began = time.perf_counter()
            before = state.data_copy()
            skip_filter = frozenset(state.skip_filter_plugins)
            state.restore({**entry.score_data, **before}, skip_filter, entry.skip_score)
            rerun = entry.rerun_score
            if known_skips:
                state.skip_score_plugins |= {pl.name for pl in rerun if pl.name in known_skips}
                rerun = tuple(pl for pl in rerun if pl.name not in known_skips)
            if _rerun_pre_score(rerun, state, pod, snapshot, nodes):
                if fwk.metrics.enabled:
                    record_shared_phase(
                        fwk,
                        "PreScore",
                        time.perf_counter() - began,
                        _evaluated(fwk.pre_score, entry.skip_score | known_skips, rerun),
                    )
                return SUCCESS
            state.restore(before, skip_filter, frozenset())
            return fwk.run_pre_score(state, pod, snapshot, nodes)
        s = fwk.run_pre_score(state, pod, snapshot, nodes)
        present = plugin_names(fwk.pre_score) & CROSS_NODE
        per_pod = _per_pod(entry.validity) if entry is not None else PER_POD
        if entry is not None and s.is_success and present - per_pod <= state.skip_score_plugins:
            entry.score_data = _shared_data(state)
            entry.skip_score = frozenset(state.skip_score_plugins)
            entry.rerun_score = _active(fwk.pre_score, state.skip_score_plugins, per_pod)
        return s

    def _validity(self, fwk: Framework, pod: Pod, snapshot: Snapshot) -> tuple[int, ...] | None:
        """The facts a shared state depends on, or None when this pod may not share."""
        if pod.volumes or pod.resource_claims or len(snapshot.tables) != 1:
            return None
        if not plugin_names(fwk.pre_filter) <= KNOWN or not plugin_names(fwk.pre_score) <= KNOWN:
            return None
        table = snapshot.tables[0]
        rerun_ipa = _has_pod_terms(pod) or self._has_affinity_groups(table.pod_index)
        return (id(table), table.node_version, snapshot.objects_version, int(rerun_ipa))

    def _has_affinity_groups(self, index: PodIndex) -> bool:
        """Whether any pod group ever seen has pod affinity or anti-affinity (groups are
        never dropped, so the answer changes only when a group is created)."""
        key, version, answer = self._affinity
        if key != id(index) or version != index.version:
            answer = index.any_group(
                lambda g: g.pod.affinity is not None
                and (g.pod.affinity.pod_affinity is not None
                     or g.pod.affinity.pod_anti_affinity is not None)
            )  # fmt: skip
            self._affinity = (id(index), index.version, answer)
        return answer


def _has_pod_terms(pod: Pod) -> bool:
    aff = pod.affinity
    return aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)


def _per_pod(validity: tuple[int, ...]) -> frozenset[str]:
    """The cross-node plugins run again for every pod of a shape with ``validity``."""
    return PER_POD | PER_POD_IF_AFFINITY if validity[-1] else PER_POD


def _shared_data(state: CycleState) -> dict[str, Any]:
    """The state's entries other pods of the shape may take: all but the cycle's own
    plugin-metrics sampling decision."""
    data = state.data_copy()
    data.pop(RECORD_PLUGIN_METRICS, None)
    return data


def _evaluated(plugins: list[Any], skipped: frozenset[str], ran: tuple[Any, ...]) -> list[str]:
    """The plugins a shared answer stands for: those that did not Skip, but the ones run
    again for this pod (``ran``: their own calls counted them)."""
    return [pl.name for pl in plugins if pl.name not in skipped and pl not in ran]


def _active(plugins: list[Any], skipped: set[str], per_pod: frozenset[str]) -> tuple[Any, ...]:
    """The plugins among ``plugins`` run again per pod: the PER_POD ones that did not
    Skip, and InterPodAffinity (Skip or not) when it is in ``per_pod``."""
    return tuple(
        pl
        for pl in plugins
        if pl.name in per_pod and (pl.name in PER_POD_IF_AFFINITY or pl.name not in skipped)
    )


def _rerun_pre_filter(
    plugins: tuple[Any, ...], state: CycleState, pod: Pod, snapshot: Snapshot
) -> bool:
    """PreFilter of the per-pod plugins on the restored state; False (run every plugin
    instead) unless each succeeds without narrowing the nodes or Skips, as the
    framework's loop would record it."""
    for pl in plugins:
        state.skip_filter_plugins.discard(pl.name)
        r, s = pl.pre_filter(state, pod, snapshot) or (None, None)
        st = as_status(s)
        if st.is_skip:
            state.skip_filter_plugins.add(pl.name)
            continue
        if r is not None or not st.is_success:
            return False
    return True


def _carry_pre_filter(
    plugins: tuple[Any, ...], state: CycleState, pod: Pod, snapshot: Snapshot, carry: CycleState
) -> bool:
    """The PER_POD plugins' PreFilter states from ``carry`` (see ``pre_filter``), where
    PreFilter would write the same: PodTopologySpread's state depends on the pod through
    its constraints (own, or defaulted by its owner: the same tuple object for the same
    inputs), namespace, labels and inclusion inputs (the shape), and on the counts. False
    (run them instead) when ``carry`` holds another pod's constraints."""
    for pl in plugins:
        if pl.name == names.INTER_POD_AFFINITY:
            if not _carry_affinity(pl, state, pod, snapshot, carry):
                return False
            continue
        s = carry.get(SPREAD_KEY)
        if (
            pl.name != names.POD_TOPOLOGY_SPREAD
            or not isinstance(s, PreFilterState)
            or pl.constraints(pod, DO_NOT_SCHEDULE, snapshot) is not s.constraints
        ):
            return False
        state.write(SPREAD_KEY, s)
    return True


def _carry_affinity(
    pl: Any, state: CycleState, pod: Pod, snapshot: Snapshot, carry: CycleState
) -> bool:
    """InterPodAffinity's PreFilter answer from ``carry``: it depends on the pod through
    what partials see of it (namespace, labels, namespace labels, resolved terms: equal
    for the pods of a run) and on the pods placed. A Skip carries over as a Skip."""
    if names.INTER_POD_AFFINITY in carry.skip_filter_plugins:
        state.skip_filter_plugins.add(names.INTER_POD_AFFINITY)
        return True
    s = carry.get(IPA_KEY)
    if not isinstance(s, IpaState) or pl.incoming(pod, snapshot) != s.pod:
        return False
    state.skip_filter_plugins.discard(names.INTER_POD_AFFINITY)
    state.write(IPA_KEY, s)
    return True


def _rerun_pre_score(
    plugins: tuple[Any, ...], state: CycleState, pod: Pod, snapshot: Snapshot, nodes: NodeSlice
) -> bool:
    """PreScore of the per-pod plugins on the restored state; False unless each succeeds
    or Skips (recorded as the framework's loop does)."""
    for pl in plugins:
        state.skip_score_plugins.discard(pl.name)
        st = as_status(pl.pre_score(state, pod, snapshot, nodes))
        if st.is_skip:
            state.skip_score_plugins.add(pl.name)
        elif not st.is_success:
            return False
    return True
