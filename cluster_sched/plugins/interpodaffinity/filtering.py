"""InterPodAffinity PreFilter (map/reduce over shard tables) and vectorised Filter.

Upstream keeps three maps of (topologyKey, value) -> count:

- ``affinity``: existing pods matching *all* the incoming pod's required affinity terms,
  counted once per term under that term's topology key;
- ``anti``: existing pods matching each of the incoming pod's required anti-affinity
  terms;
- ``existing_anti``: existing pods' required anti-affinity terms that match the
  incoming pod.

Here each map is a ``DomainCounts`` per topology key, built from per-row columns of the
table's PodIndex (so no cycle walks pods), and Filter reads them per label code.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.framework.status import Code
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.podindex import PodGroup, PodIndex, Weight
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import DomainCounts, merge_domain_counts
from cluster_sched.plugins.interpodaffinity.terms import (
    PodTerms,
    ResolvedTerm,
    matches_all,
    pod_terms,
)

ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Counts = Mapping[str, DomainCounts]


@dataclass(frozen=True, slots=True)
class IncomingPod:
    """The incoming pod as partials need it: identity, labels, its namespace's labels,
    and its terms with namespaceSelectors already unrolled (coordinator-side)."""

    namespace: str
    labels: tuple[tuple[str, str], ...]
    ns_labels: tuple[tuple[str, str], ...]
    terms: PodTerms

    @property
    def match_key(self) -> tuple[object, ...]:
        """What decides whether an existing pod's term matches this pod."""
        return (self.namespace, self.labels, self.ns_labels)


def group_terms(g: PodGroup) -> PodTerms:
    """The group's own terms, resolved once per group."""
    t = g.derived.get("ipa.terms")
    if t is None:
        t = g.derived["ipa.terms"] = pod_terms(g.pod)
    return t  # type: ignore[no-any-return]


def _existing_anti_keys(index: PodIndex) -> tuple[str, ...]:
    """Topology keys used by any existing pod's required anti-affinity term."""

    def compute() -> tuple[str, ...]:
        keys: dict[str, None] = {}
        for g in index.groups:
            for t in group_terms(g).required_anti_affinity:
                keys[t.topology_key] = None
        return tuple(keys)

    return index.cached("ipa.anti-keys", compute)  # type: ignore[no-any-return]


def domain_counts(table: NodeTable, key: str, query_key: Hashable, weight: Weight) -> DomainCounts:
    """The PodIndex query ``query_key`` summed by the rows' value of label ``key``; only
    values with a non-zero sum (upstream deletes pairs that drop to zero)."""
    interner = table.label_values.get(key)
    if interner is None:
        return DomainCounts.empty()
    sums = table.pod_index.label_sums(query_key, weight, key)[: len(interner)]
    keep = (sums != 0).nonzero()[0]
    if not len(keep):
        return DomainCounts.empty()
    return DomainCounts.from_codes(interner, keep, sums[keep])


# ---------------------------------------------------------------------------- PreFilter


def pre_filter_partial(pod: IncomingPod, table: NodeTable) -> dict[str, dict[str, DomainCounts]]:
    """MAP: this table's share of the three maps, keyed by topology key."""
    index = table.pod_index
    terms = pod.terms
    affinity: dict[str, list[DomainCounts]] = {}
    anti: dict[str, list[DomainCounts]] = {}
    existing: dict[str, list[DomainCounts]] = {}
    if terms.required_affinity:
        aff_terms = terms.required_affinity

        def all_terms(g: PodGroup) -> int:
            return int(matches_all(aff_terms, g.namespace, g.labels))

        qkey = ("ipa.affinity", aff_terms)
        for t in aff_terms:
            affinity.setdefault(t.topology_key, []).append(
                domain_counts(table, t.topology_key, qkey, all_terms)
            )
    for t in terms.required_anti_affinity:

        def one_term(g: PodGroup, t: ResolvedTerm = t) -> int:
            return int(t.matches(g.namespace, g.labels, {}))

        anti.setdefault(t.topology_key, []).append(
            domain_counts(table, t.topology_key, ("ipa.anti", t), one_term)
        )
    labels = dict(pod.labels)
    ns_labels = dict(pod.ns_labels)
    for key in _existing_anti_keys(index):

        def toward_pod(g: PodGroup, key: str = key) -> int:
            return sum(
                1
                for t in group_terms(g).required_anti_affinity
                if t.topology_key == key and t.matches(pod.namespace, labels, ns_labels)
            )

        existing.setdefault(key, []).append(
            domain_counts(table, key, ("ipa.existing-anti", key, pod.match_key), toward_pod)
        )

    def reduce(parts: dict[str, list[DomainCounts]]) -> dict[str, DomainCounts]:
        out = {k: merge_domain_counts(v).nonzero() for k, v in parts.items()}
        return {k: v for k, v in out.items() if len(v)}

    return {"affinity": reduce(affinity), "anti": reduce(anti), "existing_anti": reduce(existing)}


def reduce_partials(
    parts: Sequence[dict[str, dict[str, DomainCounts]]],
) -> dict[str, dict[str, DomainCounts]]:
    """REDUCE: sum the shards' maps."""
    out: dict[str, dict[str, DomainCounts]] = {}
    for name in ("affinity", "anti", "existing_anti"):
        keys: dict[str, list[DomainCounts]] = {}
        for p in parts:
            for k, dc in p.get(name, {}).items():
                keys.setdefault(k, []).append(dc)
        merged = {k: merge_domain_counts(v).nonzero() for k, v in keys.items()}
        out[name] = {k: v for k, v in merged.items() if len(v)}
    return out


@dataclass(frozen=True, slots=True)
class PreFilterState:
    pod: IncomingPod
    affinity: Counts = field(default_factory=dict)
    anti: Counts = field(default_factory=dict)
    existing_anti: Counts = field(default_factory=dict)
    #: the incoming pod matches all its own required affinity terms
    self_match: bool = False

    def update_with_pod(self, other: Pod, node: Node, delta: int) -> PreFilterState:
        """upstream updateWithPod: ``other`` added (+1) or removed (-1) on ``node``."""
        labels = node.labels
        existing = dict(self.existing_anti)
        p = self.pod
        ns_labels = dict(p.ns_labels)
        p_labels = dict(p.labels)
        other_terms = pod_terms(other)
        for t in other_terms.required_anti_affinity:
            if t.topology_key in labels and t.matches(p.namespace, p_labels, ns_labels):
                existing[t.topology_key] = _bump(
                    existing.get(t.topology_key), labels[t.topology_key], delta
                )
        affinity = dict(self.affinity)
        aff_terms = p.terms.required_affinity
        if matches_all(aff_terms, other.meta.namespace, other.meta.labels):
            for t in aff_terms:
                if t.topology_key in labels:
                    affinity[t.topology_key] = _bump(
                        affinity.get(t.topology_key), labels[t.topology_key], delta
                    )
        anti = dict(self.anti)
        for t in p.terms.required_anti_affinity:
            if t.topology_key in labels and t.matches(other.meta.namespace, other.meta.labels, {}):
                anti[t.topology_key] = _bump(
                    anti.get(t.topology_key), labels[t.topology_key], delta
                )
        return PreFilterState(p, _clean(affinity), _clean(anti), _clean(existing), self.self_match)


def _bump(dc: DomainCounts | None, value: str, delta: int) -> DomainCounts:
    return (dc or DomainCounts.empty()).with_delta(value, delta).nonzero()


def _clean(m: dict[str, DomainCounts]) -> dict[str, DomainCounts]:
    return {k: v for k, v in m.items() if len(v)}


# ---------------------------------------------------------------------------- Filter


def _node_values(table: NodeTable, key: str, rows: np.ndarray) -> np.ndarray:
    col = table.labels.get(key)
    if col is None:
        return np.full(len(rows), -1, dtype=np.int32)
    return col[rows]


def _counts_at(
    table: NodeTable, key: str, dc: DomainCounts | None, codes: np.ndarray
) -> np.ndarray:
    if dc is None or not len(dc):
        return np.zeros(len(codes), dtype=np.int64)
    return dc.dense(table.label_values.get(key))[codes]


def filter_rows(s: PreFilterState, table: NodeTable, rows: np.ndarray) -> NodeVerdicts:
    """Affinity (UnschedulableAndUnresolvable), then anti-affinity, then existing pods'
    anti-affinity (both Unschedulable): the first failing check names the node. The
    maps hold only positive counts, and ``dense`` maps an absent label to 0."""
    k = len(rows)
    out = np.zeros(k, dtype=np.int8)
    reason_ids = np.zeros(k, dtype=np.int32)
    reasons: list[tuple[str, ...]] = []

    def fail(mask: np.ndarray, code: Code, reason: str) -> None:
        take = mask & (out == 0)
        if take.any():
            out[take] = code
            reason_ids[take] = len(reasons)
            reasons.append((reason,))

    terms = s.pod.terms
    if terms.required_affinity:
        missing = np.zeros(k, dtype=bool)
        exist = np.ones(k, dtype=bool)
        for t in terms.required_affinity:
            codes = _node_values(table, t.topology_key, rows)
            missing |= codes < 0
            exist &= _counts_at(table, t.topology_key, s.affinity.get(t.topology_key), codes) > 0
        # The first pod of a group affine to itself may go anywhere with the topologies.
        first_of_group = not s.affinity and s.self_match
        fail(
            missing if first_of_group else missing | ~exist,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_AFFINITY,
        )
    if s.anti:
        hit = np.zeros(k, dtype=bool)
        for t in terms.required_anti_affinity:
            codes = _node_values(table, t.topology_key, rows)
            hit |= _counts_at(table, t.topology_key, s.anti.get(t.topology_key), codes) > 0
        fail(hit, Code.UNSCHEDULABLE, ERR_ANTI_AFFINITY)
    if s.existing_anti:
        hit = np.zeros(k, dtype=bool)
        for key, dc in s.existing_anti.items():
            hit |= _counts_at(table, key, dc, _node_values(table, key, rows)) > 0
        fail(hit, Code.UNSCHEDULABLE, ERR_EXISTING_ANTI_AFFINITY)
    return NodeVerdicts(out, reason_ids, reasons)
