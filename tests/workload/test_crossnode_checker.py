"""The cross-node checker catches what it is meant to catch."""

from __future__ import annotations

from cluster_sched.api.manifest import parse_pod
from cluster_sched.testing import make_node, make_pod
from tests.workload.crossnode_checker import (
    anti_affinity_violations,
    replay_overcommit,
    spread_violations,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _nodes(*specs):
    return {n.name: n for n in (s.obj() for s in specs)}


def test_anti_affinity_violation_is_reported():
    nodes = _nodes(make_node("n1").label(HOST, "n1"), make_node("n2").label(HOST, "n2"))
    a = make_pod("a").label("color", "green").pod_anti_affinity(HOST, {"color": "green"}).obj()
    b = make_pod("b").label("color", "green").pod_anti_affinity(HOST, {"color": "green"}).obj()
    pods = {a.key: a, b.key: b}
    assert anti_affinity_violations(pods, {a.key: "n1", b.key: "n2"}, nodes) == []
    assert anti_affinity_violations(pods, {a.key: "n1", b.key: "n1"}, nodes) != []


def test_spread_violation_is_reported():
    nodes = _nodes(*(make_node(f"n{i}").label(ZONE, f"z{i}") for i in range(2)))
    pods = {}
    for i in range(4):
        p = make_pod(f"p{i}").label("foo", "").spread(1, ZONE, match_labels={"foo": ""}).obj()
        pods[p.key] = p
    even = {k: f"n{i % 2}" for i, k in enumerate(pods)}
    skewed = dict.fromkeys(pods, "n0")
    assert spread_violations(pods, even, nodes) == []
    assert spread_violations(pods, skewed, nodes) != []


def test_replay_catches_a_binding_before_its_victim_is_gone():
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).obj()
    low = make_pod("low").req(cpu="3").manifest()
    high = make_pod("high").req(cpu="3").manifest()
    bound = lambda doc: {**doc, "spec": {**doc["spec"], "nodeName": "n1"}}  # noqa: E731
    ok = [
        {"type": "MODIFIED", "kind": "Pod", "key": "default/low", "obj": bound(low)},
        {"type": "DELETED", "kind": "Pod", "key": "default/low", "obj": bound(low)},
        {"type": "MODIFIED", "kind": "Pod", "key": "default/high", "obj": bound(high)},
    ]
    early = [ok[0], ok[2], ok[1]]
    assert replay_overcommit(ok, {"n1": node}, parse_pod) == ([], 2)
    violations, _ = replay_overcommit(early, {"n1": node}, parse_pod)
    assert violations
