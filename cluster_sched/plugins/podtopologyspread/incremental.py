"""PodTopologySpread's PreFilter for a stream of pods of one spec: what does not depend
on the pod counts is kept, the counts are read from running totals.

For one pod, PreFilter (``filtering.pre_filter_partial``) derives, per DoNotSchedule
constraint: the eligible topology domains (nodes with every key that pass the inclusion
policies), whether every holder of the key is eligible, and the PodIndex query counting
the pods the selector matches. None of that moves when a pod is assumed, forgotten,
added or removed: only the matching-pod counts do, and the PodIndex keeps those per
label code in step with every pod change (``PodIndex.label_sums``). So a ``SpreadPlan``
holds the node-derived part, keyed by the node table's state (``node_version`` and
capacity) and by the pod-side inputs (the parsed constraints, the namespace, the node
selector, affinity and tolerations the inclusion policies read), and a cycle only reads
the counts. Where some key holder is not eligible, the counts are summed over the
eligible rows from the PodIndex's live per-row column (one gather).

The answer is the one ``pre_filter_partial`` gives (tests compare them); anything not
covered by the key is rebuilt.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.nodetable.interner import Interner
from cluster_sched.nodetable.podindex import Weight
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import DomainCounts, counts_by_code
from cluster_sched.plugins.podtopologyspread.constraints import Constraint, count_spec
from cluster_sched.plugins.podtopologyspread.filtering import eligible_domains

__all__ = ["SpreadPlans"]

#: Plans remembered (cleared when full: a cache, never a leak).
PLANS_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class _ConstraintPlan:
    key: str
    interner: Interner[str] | None
    #: int64[d]: codes of the eligible domains
    codes: np.ndarray
    #: PodIndex query (key, weight); None: the selector counts no pod
    spec: tuple[tuple[object, ...], Weight] | None
    #: every alive holder of the key is eligible: read the running per-code totals
    full: bool
    #: int64: eligible rows (summed over when not ``full``)
    rows: np.ndarray


@dataclass(frozen=True, slots=True)
class _Plan:
    refs: tuple[object, ...]
    namespace: str
    version: tuple[int, int, int]
    parts: tuple[_ConstraintPlan, ...]


def _refs(pod: Pod, constraints: tuple[Constraint, ...]) -> tuple[object, ...]:
    return (constraints, pod.node_selector, pod.affinity, pod.tolerations)


class SpreadPlans:
    """``partial(pod, constraints, table)``: ``filtering.pre_filter_partial``'s answer,
    the node-derived part kept per (table state, pod-side inputs)."""

    def __init__(self) -> None:
        self._plans: dict[Hashable, _Plan] = {}

    def partial(
        self, pod: Pod, constraints: tuple[Constraint, ...], table: NodeTable
    ) -> list[DomainCounts]:
        plan = self._plan(pod, constraints, table)
        out: list[DomainCounts] = []
        index = table.pod_index
        for p in plan.parts:
            if p.interner is None:
                out.append(DomainCounts.empty())
                continue
            n = len(p.interner)
            if p.spec is None:
                counts = np.zeros(len(p.codes), dtype=np.int64)
            elif p.full:
                counts = index.label_sums(*p.spec, p.key)[:n][p.codes]
            else:
                sums, _ = counts_by_code(table, p.key, p.rows, index.query(*p.spec))
                counts = sums[p.codes]
            out.append(DomainCounts.from_codes(p.interner, p.codes, counts))
        return out

    def _plan(self, pod: Pod, constraints: tuple[Constraint, ...], table: NodeTable) -> _Plan:
        refs = _refs(pod, constraints)
        version = (id(table.pod_index), table.node_version, table._cap)
        key = (id(table), *map(id, refs))
        hit = self._plans.get(key)
        if (
            hit is not None
            and hit.version == version
            and hit.namespace == pod.meta.namespace
            and all(a is b for a, b in zip(hit.refs, refs, strict=True))
        ):
            return hit
        parts = []
        for c in constraints:
            interner = table.label_values.get(c.topology_key)
            if interner is None:
                empty = np.zeros(0, dtype=np.int64)
                parts.append(_ConstraintPlan(c.topology_key, None, empty, None, True, empty))
                continue
            rows, present, full = eligible_domains(table, pod, constraints, c)
            parts.append(
                _ConstraintPlan(
                    c.topology_key,
                    interner,
                    present.nonzero()[0],
                    count_spec(c.selector, pod.meta.namespace),
                    full,
                    rows,
                )
            )
        if len(self._plans) >= PLANS_CACHE_SIZE:
            self._plans.clear()
        plan = _Plan(refs, pod.meta.namespace, version, tuple(parts))
        self._plans[key] = plan
        return plan
