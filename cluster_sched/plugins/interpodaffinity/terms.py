"""Pod (anti-)affinity terms, resolved against their owner pod (upstream AffinityTerm).

A term's meaning depends on the pod that carries it: ``namespaces`` defaults to the
owner's namespace, and ``matchLabelKeys`` / ``mismatchLabelKeys`` copy the owner's label
values into the selector (the API server does this at pod creation; pods here never
pass through one, so it happens when a term is resolved: ``key In (v)`` /
``key NotIn (v)`` for each key the owner has, and nothing when the selector is null).

The incoming pod's terms additionally have a non-empty ``namespaceSelector`` unrolled
into the namespaces it selects (``merge_namespaces``), as upstream PreFilter/PreScore
do, so matching an existing pod never needs that pod's namespace labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cluster_sched.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    Namespace,
    Pod,
    PodAffinityTerm,
)
from cluster_sched.api.selectors import label_selector_matches


@dataclass(frozen=True, slots=True)
class ResolvedTerm:
    """A processed PodAffinityTerm. Matches a pod when the pod's namespace is in
    ``namespaces`` (or ``all_namespaces``, or ``ns_selector`` selects the namespace's
    labels) and ``selector`` matches its labels. ``selector`` None matches nothing."""

    topology_key: str
    selector: LabelSelector | None
    namespaces: frozenset[str]
    #: namespaceSelector ``{}``: every namespace
    all_namespaces: bool = False
    #: a non-empty namespaceSelector still to evaluate (existing pods' terms only)
    ns_selector: LabelSelector | None = None

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> bool:
        if (
            self.all_namespaces
            or namespace in self.namespaces
            or (
                self.ns_selector is not None and label_selector_matches(self.ns_selector, ns_labels)
            )
        ):
            return label_selector_matches(self.selector, labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    weight: int
    term: ResolvedTerm


@dataclass(frozen=True, slots=True)
class PodTerms:
    """Every pod-affinity term of one pod, resolved against it."""

    required_affinity: tuple[ResolvedTerm, ...] = ()
    required_anti_affinity: tuple[ResolvedTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


def _is_empty(sel: LabelSelector) -> bool:
    return not sel.match_labels and not sel.match_expressions


def merged_selector(term: PodAffinityTerm, labels: Mapping[str, str]) -> LabelSelector | None:
    """The term's selector with match/mismatchLabelKeys applied (API-server semantics)."""
    sel = term.label_selector
    if sel is None or not (term.match_label_keys or term.mismatch_label_keys):
        return sel
    extra = [
        LabelSelectorRequirement(key, "In", (labels[key],))
        for key in term.match_label_keys
        if key in labels
    ]
    extra += [
        LabelSelectorRequirement(key, "NotIn", (labels[key],))
        for key in term.mismatch_label_keys
        if key in labels
    ]
    if not extra:
        return sel
    return LabelSelector(sel.match_labels, (*sel.match_expressions, *extra))


def resolve_term(pod: Pod, term: PodAffinityTerm) -> ResolvedTerm:
    """upstream newAffinityTerm: default namespace, parsed selectors."""
    ns_sel = term.namespace_selector
    if not term.namespaces and ns_sel is None:
        namespaces = frozenset((pod.meta.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    all_ns = ns_sel is not None and _is_empty(ns_sel)
    return ResolvedTerm(
        topology_key=term.topology_key,
        selector=merged_selector(term, pod.meta.labels),
        namespaces=namespaces,
        all_namespaces=all_ns,
        ns_selector=None if ns_sel is None or all_ns else ns_sel,
    )


def pod_terms(pod: Pod) -> PodTerms:
    """All terms of ``pod``, resolved (its namespaceSelectors not yet unrolled)."""
    aff = pod.affinity
    if aff is None or (aff.pod_affinity is None and aff.pod_anti_affinity is None):
        return PodTerms()
    pa, paa = aff.pod_affinity, aff.pod_anti_affinity
    return PodTerms(
        required_affinity=tuple(resolve_term(pod, t) for t in pa.required) if pa else (),
        required_anti_affinity=tuple(resolve_term(pod, t) for t in paa.required) if paa else (),
        preferred_affinity=tuple(
            WeightedTerm(w.weight, resolve_term(pod, w.term)) for w in pa.preferred
        )
        if pa
        else (),
        preferred_anti_affinity=tuple(
            WeightedTerm(w.weight, resolve_term(pod, w.term)) for w in paa.preferred
        )
        if paa
        else (),
    )


def merge_namespaces(term: ResolvedTerm, namespaces: Iterable[Namespace]) -> ResolvedTerm:
    """upstream mergeAffinityTermNamespacesIfNotEmpty, for the incoming pod's terms:
    the namespaces a non-empty namespaceSelector selects join ``namespaces``."""
    if term.ns_selector is None:
        return term
    picked = {
        ns.name for ns in namespaces if label_selector_matches(term.ns_selector, ns.meta.labels)
    }
    return ResolvedTerm(
        term.topology_key, term.selector, term.namespaces | picked, term.all_namespaces, None
    )


def incoming_terms(pod: Pod, namespaces: Iterable[Namespace]) -> PodTerms:
    """The incoming pod's terms with namespaceSelectors unrolled."""
    t = pod_terms(pod)
    if t.empty:
        return t
    nss = list(namespaces)

    def m(term: ResolvedTerm) -> ResolvedTerm:
        return merge_namespaces(term, nss)

    return PodTerms(
        tuple(m(x) for x in t.required_affinity),
        tuple(m(x) for x in t.required_anti_affinity),
        tuple(WeightedTerm(w.weight, m(w.term)) for w in t.preferred_affinity),
        tuple(WeightedTerm(w.weight, m(w.term)) for w in t.preferred_anti_affinity),
    )


def needs_namespace_list(pod: Pod) -> bool:
    """True if any of the pod's terms has a non-empty namespaceSelector to unroll."""
    aff = pod.affinity
    if aff is None:
        return False
    for group in (aff.pod_affinity, aff.pod_anti_affinity):
        if group is None:
            continue
        for t in (*group.required, *(w.term for w in group.preferred)):
            if t.namespace_selector is not None and not _is_empty(t.namespace_selector):
                return True
    return False


def matches_all(terms: tuple[ResolvedTerm, ...], namespace: str, labels: Mapping[str, str]) -> bool:
    """upstream podMatchesAllAffinityTerms (incoming terms: no namespace labels needed)."""
    if not terms:
        return False
    return all(t.matches(namespace, labels, {}) for t in terms)
