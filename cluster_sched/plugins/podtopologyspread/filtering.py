"""PodTopologySpread PreFilter (map/reduce over shard tables) and vectorised Filter.

Per DoNotSchedule constraint, upstream counts matching pods per *eligible* topology
domain: domains of nodes that carry every constraint's topology key and pass the
constraint's node inclusion policies. Filter then rejects a node when

    matching pods in the node's domain + (1 if the pod matches itself) - global minimum
    > maxSkew

where the global minimum is 0 while there are fewer eligible domains than minDomains.
A node missing a topology key is UnschedulableAndUnresolvable ("missing required label").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.framework.status import Code
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import (
    DomainCounts,
    counts_by_code,
    merge_domain_counts,
)
from cluster_sched.plugins.podtopologyspread.constraints import (
    Constraint,
    count_spec,
    inclusion_key,
    inclusion_mask,
    keys_present,
    node_included,
    selector_matches,
)

ERR_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_NODE_LABEL_NOT_MATCH = ERR_CONSTRAINTS_NOT_MATCH + " (missing required label)"
#: upstream's minimum when no domain is eligible (math.MaxInt32)
NO_DOMAIN_MIN = 2**31 - 1


def eligible_domains(
    table: NodeTable, pod: Pod, constraints: tuple[Constraint, ...], c: Constraint
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(eligible rows, bool per code: some eligible node holds it, whether every alive
    node holding the key is eligible). Node-derived, memoised per pod-side inputs."""
    key = (
        "pts.eligible",
        tuple(sorted({x.topology_key for x in constraints})),
        c.topology_key,
        inclusion_key(pod, c),
    )
    col = table.labels[c.topology_key]
    n = len(table.label_values[c.topology_key])

    def rows() -> np.ndarray:
        eligible = keys_present(table, constraints) & inclusion_mask(table, pod, c) & table.alive
        return eligible[: table.size].nonzero()[0]

    eligible_rows = table.memo(key, rows)

    def present() -> np.ndarray:
        return np.bincount(col[eligible_rows], minlength=n)[:n] > 0

    def full() -> np.ndarray:
        holders = int(((col[: table.size] >= 0) & table.alive[: table.size]).sum())
        return np.asarray(holders == len(eligible_rows))

    return (
        eligible_rows,
        table.memo((*key, "present"), present),
        bool(table.memo((*key, "full"), full)),
    )


def pre_filter_partial(
    pod: Pod, constraints: tuple[Constraint, ...], table: NodeTable
) -> list[DomainCounts]:
    """MAP: per constraint, matching pods per eligible domain of this table (domains
    with no matching pod included)."""
    out: list[DomainCounts] = []
    for c in constraints:
        interner = table.label_values.get(c.topology_key)
        if interner is None:
            out.append(DomainCounts.empty())
            continue
        n = len(interner)
        rows, present, full = eligible_domains(table, pod, constraints, c)
        codes = present.nonzero()[0]
        spec = count_spec(c.selector, pod.meta.namespace)
        if spec is None:
            sums = np.zeros(n, dtype=np.int64)
        elif full:  # every holder of the key counts: read the index's running totals
            sums = table.pod_index.label_sums(*spec, c.topology_key)[:n]
        else:
            sums, _ = counts_by_code(table, c.topology_key, rows, table.pod_index.query(*spec))
        out.append(DomainCounts.from_codes(interner, codes, sums[codes]))
    return out


def reduce_partials(parts: Sequence[Sequence[DomainCounts]], n: int) -> tuple[DomainCounts, ...]:
    """REDUCE: per constraint, sum the shards' domain counts."""
    return tuple(merge_domain_counts([p[i] for p in parts]) for i in range(n))


def self_matches(pod: Pod, constraints: tuple[Constraint, ...]) -> tuple[bool, ...]:
    """Per constraint: the pod matches its own selector (counts itself in the skew)."""
    return tuple(selector_matches(c.selector, pod.meta.labels) for c in constraints)


def _minimum(dc: DomainCounts) -> int:
    counts = dc.counts
    if len(counts) > 16:  # numpy's reduction wins past a few domains
        return int(counts.min())
    return min(counts.tolist(), default=NO_DOMAIN_MIN)


@dataclass(frozen=True, slots=True)
class PreFilterState:
    constraints: tuple[Constraint, ...]
    #: per constraint: eligible domain -> matching pods
    domains: tuple[DomainCounts, ...]
    #: per constraint: the global minimum over ``domains`` (NO_DOMAIN_MIN if none)
    minimums: tuple[int, ...]
    #: per constraint: the incoming pod matches the constraint's selector
    self_match: tuple[bool, ...]

    @classmethod
    def build(
        cls,
        pod: Pod,
        constraints: tuple[Constraint, ...],
        domains: tuple[DomainCounts, ...],
        self_match: tuple[bool, ...] | None = None,
    ) -> PreFilterState:
        """``self_match``: the pod's matches when the caller already knows them."""
        if self_match is None:
            self_match = self_matches(pod, constraints)
        return cls(constraints, domains, tuple(_minimum(d) for d in domains), self_match)

    def min_match(self, i: int) -> int:
        """upstream minMatchNum: 0 while fewer eligible domains than minDomains."""
        if len(self.domains[i]) < self.constraints[i].min_domains:
            return 0
        return self.minimums[i]

    def update_with_pod(self, pod: Pod, other: Pod, node: Node, delta: int) -> PreFilterState:
        """upstream updateWithPod: ``other`` added (+1) / removed (-1) on ``node``."""
        if other.meta.namespace != pod.meta.namespace:
            return self
        if any(c.topology_key not in node.labels for c in self.constraints):
            return self
        domains = list(self.domains)
        minimums = list(self.minimums)
        changed = False
        for i, c in enumerate(self.constraints):
            if not selector_matches(c.selector, other.meta.labels) or not node_included(
                node, pod, c
            ):
                continue
            domains[i] = domains[i].with_delta(node.labels[c.topology_key], delta)
            minimums[i] = _minimum(domains[i])
            changed = True
        if not changed:
            return self
        return PreFilterState(self.constraints, tuple(domains), tuple(minimums), self.self_match)


def filter_rows(s: PreFilterState, table: NodeTable, rows: np.ndarray) -> NodeVerdicts:
    """Constraints in order; a node's first failing constraint decides its verdict.

    Reason ids: 0 is the missing-label reason (UnschedulableAndUnresolvable), 1 the skew
    reason (Unschedulable)."""
    k = len(rows)
    out = np.zeros(k, dtype=np.int8)
    reason_ids = np.zeros(k, dtype=np.int32)
    for i, c in enumerate(s.constraints):
        col = table.labels.get(c.topology_key)
        if col is None:
            out[out == 0] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            break
        codes = col[rows]
        open_ = out == 0
        missing = open_ & (codes < 0)
        # dense maps code -1 to 0; those rows are already marked missing
        match_num = s.domains[i].dense(table.label_values.get(c.topology_key))[codes]
        too_skewed = (
            open_ & ~missing & (match_num > c.max_skew - int(s.self_match[i]) + s.min_match(i))
        )
        out[missing] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        out[too_skewed] = Code.UNSCHEDULABLE
        reason_ids[too_skewed] = 1
    return NodeVerdicts(
        out, reason_ids, [(ERR_NODE_LABEL_NOT_MATCH,), (ERR_CONSTRAINTS_NOT_MATCH,)]
    )


def failing_domains(
    s: PreFilterState, table: NodeTable
) -> tuple[tuple[str, np.ndarray], ...] | None:
    """``filter_rows``'s verdict by topology domain, for callers that apply it to many
    rows at once (the compiled path): per topology key, the sorted label codes whose
    nodes fail the skew check (the constraints sharing a key united). A row passes when,
    for every key, it holds the label and its code is not listed. A domain that is not
    eligible counts 0 matching pods, and 0 never exceeds ``maxSkew - 1 + minMatch``, so
    only eligible domains can be listed. None when a key has no column (every node
    fails)."""
    out: dict[str, np.ndarray] = {}
    for i, c in enumerate(s.constraints):
        if table.labels.get(c.topology_key) is None:
            return None
        d = s.domains[i]
        limit = c.max_skew - int(s.self_match[i]) + s.min_match(i)
        over = d.counts > limit
        if not over.any():
            fail = _NONE
        elif d.codes is not None and d.source is table.label_values.get(c.topology_key):
            fail = np.unique(d.codes[over])
        else:
            dense = d.dense(table.label_values.get(c.topology_key))[:-1]
            fail = (dense > limit).nonzero()[0].astype(np.int64)
        prev = out.get(c.topology_key)
        out[c.topology_key] = fail if prev is None else np.union1d(prev, fail)
    return tuple(out.items())


_NONE = np.zeros(0, dtype=np.int64)
_NONE.setflags(write=False)
