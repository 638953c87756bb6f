"""InterPodAffinity PreScore (map/reduce), Score and NormalizeScore.

Upstream's topology score map ``topologyKey -> value -> weight sum`` gets, for every
existing pod on a labelled node:

- + weight of each incoming preferred affinity term the pod matches, - weight of each
  incoming preferred anti-affinity term it matches;
- + hardPodAffinityWeight for each of the pod's *required* affinity terms matching the
  incoming pod (when that weight is > 0), + / - the weights of the pod's preferred
  affinity / anti-affinity terms matching the incoming pod.

Per topology key, both parts are one per-group integer weight, so the map is a
registered PodIndex query summed by label value. Whether the map is empty (PreScore
Skip, NormalizeScore no-op) is tracked apart from the sums, since +w and -w cancel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cluster_sched.framework.interfaces import MAX_NODE_SCORE
from cluster_sched.nodetable.podindex import PodGroup, PodIndex
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import DomainCounts, merge_domain_counts
from cluster_sched.plugins.interpodaffinity.filtering import IncomingPod, group_terms
from cluster_sched.plugins.interpodaffinity.terms import PodTerms, WeightedTerm


@dataclass(frozen=True, slots=True)
class ScoringPod:
    """The incoming pod for PreScore partials: its preferred terms (namespaceSelectors
    unrolled) and the args that shape the weights."""

    pod: IncomingPod
    hard_weight: int

    @property
    def key(self) -> tuple[object, ...]:
        t = self.pod.terms
        return (
            self.pod.match_key,
            t.preferred_affinity,
            t.preferred_anti_affinity,
            self.hard_weight,
        )


def _existing_keys(index: PodIndex, hard_weight: int) -> tuple[str, ...]:
    """Topology keys of existing pods' terms that can score: required affinity (when the
    hard weight counts) and preferred (anti-)affinity."""

    def compute() -> tuple[str, ...]:
        keys: dict[str, None] = {}
        for g in index.groups:
            t = group_terms(g)
            if hard_weight > 0:
                for r in t.required_affinity:
                    keys[r.topology_key] = None
            for w in (*t.preferred_affinity, *t.preferred_anti_affinity):
                keys[w.term.topology_key] = None
        return tuple(keys)

    return index.cached(("ipa.score-keys", hard_weight > 0), compute)  # type: ignore[no-any-return]


def _contributions(sp: ScoringPod, g: PodGroup, key: str) -> tuple[int, int]:
    """(net weight, number of matching terms) one pod of group ``g`` adds on ``key``."""
    net = hits = 0
    inc: PodTerms = sp.pod.terms
    for sign, terms in ((1, inc.preferred_affinity), (-1, inc.preferred_anti_affinity)):
        for w in terms:
            if w.term.topology_key == key and w.term.matches(g.namespace, g.labels, {}):
                net += sign * w.weight
                hits += 1
    own = group_terms(g)
    if own.empty:
        return net, hits
    labels = dict(sp.pod.labels)
    ns_labels = dict(sp.pod.ns_labels)
    ns = sp.pod.namespace
    if sp.hard_weight > 0:
        for r in own.required_affinity:
            if r.topology_key == key and r.matches(ns, labels, ns_labels):
                net += sp.hard_weight
                hits += 1
    ex: tuple[tuple[int, tuple[WeightedTerm, ...]], ...] = (
        (1, own.preferred_affinity),
        (-1, own.preferred_anti_affinity),
    )
    for sign, wterms in ex:
        for w in wterms:
            if w.term.topology_key == key and w.term.matches(ns, labels, ns_labels):
                net += sign * w.weight
                hits += 1
    return net, hits


def pre_score_partial(sp: ScoringPod, table: NodeTable) -> dict[str, DomainCounts]:
    """MAP: this table's topology score map, only values some term touched."""
    index = table.pod_index
    keys: dict[str, None] = {}
    for w in (*sp.pod.terms.preferred_affinity, *sp.pod.terms.preferred_anti_affinity):
        keys[w.term.topology_key] = None
    for k in _existing_keys(index, sp.hard_weight):
        keys[k] = None
    out: dict[str, DomainCounts] = {}
    for key in keys:
        interner = table.label_values.get(key)
        if interner is None:
            continue

        def net_w(g: PodGroup, key: str = key) -> int:
            return _contributions(sp, g, key)[0]

        def hit_w(g: PodGroup, key: str = key) -> int:
            return _contributions(sp, g, key)[1]

        n = len(interner)
        touched = index.label_sums(("ipa.score-hits", key, sp.key), hit_w, key)[:n]
        keep = (touched != 0).nonzero()[0]
        if not len(keep):
            continue
        sums = index.label_sums(("ipa.score-net", key, sp.key), net_w, key)[:n]
        out[key] = DomainCounts.from_codes(interner, keep, sums[keep])
    return out


def reduce_partials(parts: Sequence[Mapping[str, DomainCounts]]) -> dict[str, DomainCounts]:
    """REDUCE: sum the shards' topology score maps."""
    keys: dict[str, list[DomainCounts]] = {}
    for p in parts:
        for k, dc in p.items():
            keys.setdefault(k, []).append(dc)
    return {k: merge_domain_counts(v) for k, v in keys.items()}


@dataclass(frozen=True, slots=True)
class PreScoreState:
    #: topology key -> value -> summed weight (values some term touched)
    topology_score: Mapping[str, DomainCounts]


def score_rows(s: PreScoreState, table: NodeTable, rows: np.ndarray) -> np.ndarray:
    """int64[k]: sum over topology keys of the map's weight at the node's value."""
    out = np.zeros(len(rows), dtype=np.int64)
    for key, dc in s.topology_score.items():
        col = table.labels.get(key)
        if col is None:
            continue
        out += dc.dense(table.label_values.get(key))[col[rows]]
    return out


def normalize(s: PreScoreState, scores: np.ndarray) -> np.ndarray:
    """upstream NormalizeScore: min-max scaled to [0, 100] with float64 math, truncated."""
    if not s.topology_score or not len(scores):
        return scores
    lo = int(scores.min())
    hi = int(scores.max())
    diff = hi - lo
    if diff <= 0:
        return np.zeros_like(scores)
    frac = (scores - lo).astype(np.float64) / float(diff)
    return np.trunc(float(MAX_NODE_SCORE) * frac).astype(np.int64)
