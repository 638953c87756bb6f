"""Random InterPodAffinity pods and clusters (hypothesis strategies and builders), shared
by the affinity kernel tests and the whole-batch affinity tests: required and preferred
pod affinity and anti-affinity terms on zone, hostname or a rack label, selecting the
pod's own app or the other one, in its own namespace or another."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from cluster_sched.api.objects import Node, Pod
from cluster_sched.testing.builders import HOSTNAME_LABEL, ZONE_LABEL, make_node, make_pod
from cluster_sched.testing.pod_builder import PodBuilder

RACK_LABEL = "rack"
ZONES = ("z0", "z1", "z2", None)
RACKS = ("r0", "r1", None)


@dataclass(frozen=True)
class TermSpec:
    #: "affinity", "anti", "pref-affinity", "pref-anti"
    kind: str
    key: str
    #: the selected app label value
    app: str
    #: the term names the other namespace
    other_namespace: bool = False


@dataclass(frozen=True)
class AffinitySpec:
    app: str
    terms: tuple[TermSpec, ...]
    namespace: str = "default"
    cpu: str = "100m"


term_specs = st.builds(
    TermSpec,
    kind=st.sampled_from(("affinity", "anti", "anti", "pref-affinity", "pref-anti")),
    key=st.sampled_from((ZONE_LABEL, HOSTNAME_LABEL, HOSTNAME_LABEL, RACK_LABEL)),
    app=st.sampled_from(("a", "b")),
    other_namespace=st.sampled_from((False, False, False, True)),
)

affinity_specs = st.builds(
    AffinitySpec,
    app=st.sampled_from(("a", "b")),
    terms=st.lists(term_specs, max_size=3).map(tuple),
    namespace=st.sampled_from(("default", "default", "other")),
    cpu=st.sampled_from(("100m", "100m", "500m", "64")),  # the last fits no node
)


def affinity_builder(name: str, spec: AffinitySpec, node: str | None = None) -> PodBuilder:
    b = make_pod(name, namespace=spec.namespace).req(cpu=spec.cpu, memory="128Mi")
    b = b.label("app", spec.app)
    for t in spec.terms:
        other = "default" if spec.namespace == "other" else "other"
        kw: dict[str, Any] = {"namespaces": [other]} if t.other_namespace else {}
        weight = 10 if t.kind.startswith("pref") else None
        if t.kind.endswith("anti"):
            b = b.pod_anti_affinity(t.key, {"app": t.app}, weight=weight, **kw)
        else:
            b = b.pod_affinity(t.key, {"app": t.app}, weight=weight, **kw)
    if node is not None:
        b = b.node(node)
    return b


def affinity_pod(name: str, spec: AffinitySpec, node: str | None = None) -> Pod:
    return affinity_builder(name, spec, node).obj()


def node_builders(n: int, layout: int, pods: int = 6) -> list[Any]:
    """``n`` nodes named n0.. with random zones and racks (some without)."""
    rng = random.Random(layout)
    out = []
    for i in range(n):
        b = make_node(f"n{i}").capacity(cpu=rng.choice(["1", "2", "4"]), memory="8Gi", pods=pods)
        zone, rack = rng.choice(ZONES), rng.choice(RACKS)
        if zone is not None:
            b = b.zone(zone)
        if rack is not None:
            b = b.label(RACK_LABEL, rack)
        out.append(b)
    return out


def cluster(n: int, layout: int) -> list[Node]:
    return [b.obj() for b in node_builders(n, layout)]


__all__ = [
    "HOSTNAME_LABEL",
    "AffinitySpec",
    "TermSpec",
    "affinity_builder",
    "affinity_pod",
    "affinity_specs",
    "cluster",
    "node_builders",
]
