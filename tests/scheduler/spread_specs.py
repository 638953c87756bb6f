"""Random PodTopologySpread clusters and pods (hypothesis strategies and builders), shared by the spread fast-path and spread-run tests."""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import strategies as st

from cluster_sched.api.objects import Node, Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.scheduler.algorithm import FitError, Scheduler
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    make_controller,
    make_node,
    make_pod,
)

ZONES = ("z0", "z1", "z2", "", None)


@dataclass(frozen=True)
class SpreadSpec:
    max_skew: int
    key: str
    action: str
    min_domains: int | None
    affinity_policy: str | None
    taints_policy: str | None
    match_label_keys: bool


@dataclass(frozen=True)
class PodSpec:
    app: str
    ver: str
    spreads: tuple[SpreadSpec, ...]
    ssd_only: bool
    tolerates: bool
    #: without its own constraints: PodTopologySpread's system defaults (a ReplicaSet
    #: selects app=a pods)
    own: bool = True


@dataclass(frozen=True)
class NodeSpec:
    zone: str | None
    tainted: bool
    ssd: bool
    big: bool = False


spread_specs = st.builds(
    SpreadSpec,
    max_skew=st.integers(1, 3),
    key=st.sampled_from((ZONE_LABEL, ZONE_LABEL, HOSTNAME_LABEL)),
    action=st.sampled_from(("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway")),
    min_domains=st.one_of(st.none(), st.integers(1, 4)),
    affinity_policy=st.sampled_from((None, "Honor", "Ignore")),
    taints_policy=st.sampled_from((None, "Honor", "Ignore")),
    match_label_keys=st.booleans(),
)


pod_specs = st.builds(
    PodSpec,
    app=st.sampled_from(("a", "b")),
    ver=st.sampled_from(("v1", "v2")),
    spreads=st.lists(
        spread_specs, min_size=1, max_size=2, unique_by=lambda s: (s.key, s.action)
    ).map(tuple),
    ssd_only=st.booleans(),
    tolerates=st.booleans(),
    own=st.booleans(),
)


node_specs = st.builds(
    NodeSpec,
    zone=st.sampled_from(ZONES),
    tainted=st.booleans(),
    ssd=st.booleans(),
    big=st.booleans(),
)


#: ("pod", spec) schedule and assume; ("bound", spec, node) a bound pod arrives;
#: ("forget", i) the i-th assumed pod is forgotten; ("remove", i) the i-th bound one
#: leaves; ("relabel", node, zone) a node moves zone; ("add_node", spec) a node joins,
#: ("remove_node", node) one leaves (its name is not reused).
events = st.one_of(
    st.tuples(st.just("pod"), st.integers(0, 2)),
    st.tuples(st.just("pod"), st.integers(0, 2)),
    st.tuples(st.just("pod"), st.integers(0, 2)),
    st.tuples(st.just("bound"), st.integers(0, 2), st.integers(0, 8)),
    st.tuples(st.just("forget"), st.integers(0, 20)),
    st.tuples(st.just("remove"), st.integers(0, 20)),
    st.tuples(st.just("relabel"), st.integers(0, 8), st.sampled_from(ZONES)),
    st.tuples(st.just("add_node"), node_specs),
    st.tuples(st.just("remove_node"), st.integers(0, 8)),
)


def _node(i: int, spec: NodeSpec) -> Node:
    b = make_node(f"n{i}").capacity(cpu="4" if spec.big else "2", memory="8Gi", pods=6)
    if spec.zone is not None:
        b = b.zone(spec.zone)
    if spec.tainted:
        b = b.taint("dedicated", "x")
    if spec.ssd:
        b = b.label("disk", "ssd")
    return b.obj()


def _pod(name: str, spec: PodSpec, node: str | None = None) -> Pod:
    b = make_pod(name).req(cpu="300m", memory="1Gi").label("app", spec.app).label("ver", spec.ver)
    if not spec.own:
        b = b.owner("ReplicaSet", "rs-a")
    for s in spec.spreads if spec.own else ():
        b = b.spread(
            s.max_skew,
            s.key,
            s.action,
            {"app": spec.app},
            min_domains=s.min_domains if s.action == "DoNotSchedule" else None,
            node_affinity_policy=s.affinity_policy,
            node_taints_policy=s.taints_policy,
            match_label_keys=["ver"] if s.match_label_keys else None,
        )
    if spec.ssd_only:
        b = b.node_selector("disk", "ssd")
    if spec.tolerates:
        b = b.tolerate("dedicated", value="x")
    if node is not None:
        b = b.node(node)
    return b.obj()


def run(
    fast: FastPath | None,
    nodes: list[NodeSpec],
    specs: list[PodSpec],
    steps: list[tuple[object, ...]],
) -> list[tuple[str | None, int, tuple[int, ...]]]:
    """Each scheduling attempt's (host or None, next start index, the feasible nodes'
    total scores in evaluation order) in order."""
    cache = Cache()
    cache.load([_node(i, n) for i, n in enumerate(nodes)])
    cache.set_controller(make_controller("ReplicaSet", "rs-a", {"app": "a"}))
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    sched = Scheduler(0, random.Random(7), fast=fast)
    table = cache.sink.table  # type: ignore[attr-defined]
    assumed: list[Pod] = []
    bound: list[Pod] = []
    out: list[tuple[str | None, int, tuple[int, ...]]] = []
    for i, step in enumerate(steps):
        what = step[0]
        if what == "pod":
            pod = _pod(f"p{i}", specs[int(step[1]) % len(specs)])  # type: ignore[call-overload]
            try:
                result = sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
            except FitError:
                out.append((None, sched.next_start_node_index, ()))
                continue
            host = result.suggested_host
            assert host is not None
            cache.assume_pod(pod, host)
            assumed.append(pod)
            totals = () if result.total_scores is None else tuple(result.total_scores.tolist())
            out.append((host, sched.next_start_node_index, totals))
        elif what == "bound":
            node = f"n{int(step[2]) % len(nodes)}"  # type: ignore[call-overload]
            pod = _pod(f"b{i}", specs[int(step[1]) % len(specs)], node)  # type: ignore[call-overload]
            cache.add_pod(pod)
            bound.append(pod)
        elif what == "forget" and assumed:
            cache.forget_pod(assumed.pop(int(step[1]) % len(assumed)))  # type: ignore[call-overload]
        elif what == "remove" and bound:
            cache.remove_pod(bound.pop(int(step[1]) % len(bound)))  # type: ignore[call-overload]
        elif what == "relabel":
            k = int(step[1]) % len(nodes)  # type: ignore[call-overload]
            nodes[k] = NodeSpec(step[2], nodes[k].tainted, nodes[k].ssd, nodes[k].big)  # type: ignore[arg-type]
            if f"n{k}" in cache.nodes:
                cache.add_node(_node(k, nodes[k]))
        elif what == "add_node":
            nodes.append(step[1])  # type: ignore[arg-type]
            cache.add_node(_node(len(nodes) - 1, nodes[-1]))
        elif what == "remove_node" and len(cache.nodes) > 1:
            cache.remove_node(f"n{int(step[1]) % len(nodes)}")  # type: ignore[call-overload]
    return out
