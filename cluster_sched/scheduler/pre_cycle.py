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

Not used when plugins are timed (metrics or tracing on): each pod's extension points
are then observed as upstream does.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.framework.status import SUCCESS, Status
from cluster_sched.nodetable.podindex import PodIndex
from cluster_sched.plugins import names

__all__ = ["PreCycleReuse"]

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
#: Must Skip (PreFilter and PreScore) for a state to be shared.
CROSS_NODE = frozenset({names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY})
#: Shapes remembered (cleared when full).
CACHE_SIZE = 1024

PreFilterAnswer = tuple[PreFilterResult | None, Status, set[str]]


@dataclass(slots=True)
class _Entry:
    refs: tuple[object, ...]
    namespace: str
    labels: dict[str, str]
    validity: tuple[int, ...]
    pre: PreFilterAnswer
    data: dict[str, Any]
    skip_filter: frozenset[str]
    #: filled by the shape's first PreScore that Skips the cross-node plugins
    score_data: dict[str, Any] | None = None
    skip_score: frozenset[str] | None = None


def _refs(pod: Pod) -> tuple[object, ...]:
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
        self.hits = 0
        self.misses = 0

    def counters(self) -> dict[str, int]:
        return {"pre_cycle_hits": self.hits, "pre_cycle_misses": self.misses}

    def pre_filter(
        self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> PreFilterAnswer:
        self._current = None
        validity = self._validity(fwk, pod, snapshot)
        if validity is None:
            self.misses += 1
            return fwk.run_pre_filter(state, pod, snapshot)
        refs = _refs(pod)
        key = (id(fwk), *map(id, refs))
        entry = self._entries.get(key)
        if (
            entry is not None
            and entry.validity == validity
            and entry.namespace == pod.meta.namespace
            and entry.labels == pod.meta.labels
            and all(a is b for a, b in zip(entry.refs, refs, strict=True))
        ):
            self.hits += 1
            state.restore(entry.data, entry.skip_filter, frozenset())
            self._current = entry
            return entry.pre[0], entry.pre[1], set(entry.pre[2])
        self.misses += 1
        pre = fwk.run_pre_filter(state, pod, snapshot)
        present = {pl.name for pl in fwk.pre_filter} & CROSS_NODE
        if pre[0] is None and pre[1].is_success and present <= state.skip_filter_plugins:
            if len(self._entries) >= CACHE_SIZE:
                self._entries.clear()
            entry = _Entry(
                refs,
                pod.meta.namespace,
                dict(pod.meta.labels),
                validity,
                (pre[0], pre[1], set(pre[2])),
                state.data_copy(),
                frozenset(state.skip_filter_plugins),
            )
            self._entries[key] = entry
            self._current = entry
        return pre

    def pre_score(
        self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot, nodes: NodeSlice
    ) -> Status:
        entry = self._current
        if entry is not None and entry.score_data is not None and entry.skip_score is not None:
            state.restore(entry.score_data, entry.skip_filter, entry.skip_score)
            return SUCCESS
        s = fwk.run_pre_score(state, pod, snapshot, nodes)
        present = {pl.name for pl in fwk.pre_score} & CROSS_NODE
        if entry is not None and s.is_success and present <= state.skip_score_plugins:
            entry.score_data = state.data_copy()
            entry.skip_score = frozenset(state.skip_score_plugins)
        return s

    def _validity(self, fwk: Framework, pod: Pod, snapshot: Snapshot) -> tuple[int, ...] | None:
        """The facts a shared state depends on, or None when this pod may not share."""
        if pod.volumes or len(snapshot.tables) != 1:
            return None
        if any(pl.name not in KNOWN for pl in fwk.pre_filter) or any(
            pl.name not in KNOWN for pl in fwk.pre_score
        ):
            return None
        table = snapshot.tables[0]
        if self._has_affinity_groups(table.pod_index):
            return None
        return (id(table), table.node_version, snapshot.objects_version)

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
