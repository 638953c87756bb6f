"""Builders write valid manifests and parse them, so raw and typed views agree."""

from __future__ import annotations

import pytest

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.api.objects import LabelSelector, WorkloadController
from cluster_sched.api.requests import DEFAULT_MEMORY_REQUEST
from cluster_sched.api.selectors import label_selector_matches, node_selector_matches
from cluster_sched.errors import InvalidObjectError
from cluster_sched.testing import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    expr,
    make_controller,
    make_namespace,
    make_node,
    make_pdb,
    make_pod,
    make_priority_class,
    rfc3339,
)

GI = 2**30


def test_pod_builder_round_trips_through_manifest() -> None:
    builder = (
        make_pod("web-1", namespace="team")
        .req(cpu="1", memory="1Gi")
        .label("app", "web")
        .priority(10)
        .tolerate(key="dedicated", value="gpu", effect="NoSchedule")
        .host_port(8080)
        .node_selector("disk", "ssd")
    )
    pod = builder.obj()
    assert pod.key == "team/web-1"
    assert pod.requests == {"cpu": 1000, "memory": GI}
    assert pod.priority == 10 and pod.labels == {"app": "web"}
    assert pod.tolerations[0].operator == "Equal"
    assert pod.containers[0].ports[0].host_port == 8080
    assert pod.node_selector == {"disk": "ssd"}
    assert pod.raw == builder.manifest()
    assert parse_pod(builder.manifest()) == pod


def test_manifest_is_a_fresh_copy() -> None:
    builder = make_pod("p").req(cpu="1")
    first = builder.manifest()
    first["spec"]["containers"][0]["name"] = "changed"
    assert builder.manifest()["spec"]["containers"][0]["name"] == "c0"


def test_pod_without_containers_gets_one() -> None:
    pod = make_pod("p").obj()
    assert len(pod.containers) == 1 and pod.containers[0].requests == {}


def test_each_req_adds_a_container() -> None:
    pod = make_pod("p").req(cpu="1").req({"example.com/gpu": 1}, memory="1Gi").obj()
    assert [c.name for c in pod.containers] == ["c0", "c1"]
    assert pod.requests == {"cpu": 1000, "memory": GI, "example.com/gpu": 1}


def test_init_sidecar_overhead_and_limits() -> None:
    pod = (
        make_pod("p")
        .limits(cpu="1", memory="1Gi")
        .sidecar_req(cpu="500m")
        .init_req(cpu="2")
        .overhead(cpu="100m")
        .obj()
    )
    assert pod.init_containers[0].restart_policy == "Always"
    assert pod.containers[0].requests == {"cpu": 1000, "memory": GI}
    assert pod.requests == {"cpu": 2600, "memory": GI}
    assert pod.nonzero_memory == GI + DEFAULT_MEMORY_REQUEST


def test_affinity_helpers() -> None:
    pod = (
        make_pod("p")
        .label("app", "web")
        .affinity_required_zone("z1", "z2")
        .node_affinity_preferred(10, expr("disk", "In", "ssd"))
        .pod_affinity(ZONE_LABEL, {"app": "db"})
        .pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"}, weight=50)
        .spread(1, ZONE_LABEL, match_labels={"app": "web"}, min_domains=2)
        .obj()
    )
    assert pod.affinity is not None and pod.affinity.node_affinity is not None
    required = pod.affinity.node_affinity.required
    assert required is not None
    assert node_selector_matches(required, "n1", {ZONE_LABEL: "z2"})
    assert not node_selector_matches(required, "n1", {ZONE_LABEL: "z3"})
    assert pod.affinity.node_affinity.preferred[0].weight == 10
    assert (
        pod.affinity.pod_affinity is not None
        and pod.affinity.pod_affinity.required[0].topology_key == ZONE_LABEL
    )
    anti = pod.affinity.pod_anti_affinity
    assert anti is not None and anti.preferred[0].weight == 50
    assert label_selector_matches(anti.preferred[0].term.label_selector, {"app": "web"})
    assert pod.topology_spread_constraints[0].min_domains == 2


def test_status_and_metadata_helpers() -> None:
    pod = (
        make_pod("p")
        .node("n1")
        .phase("Running")
        .nominated("n2")
        .start_time(100.5)
        .created(50.0)
        .owner("ReplicaSet", "rs-1")
        .uid("u-1")
        .scheduling_gates("example.com/wait")
        .preemption_policy("Never")
        .priority_class("high")
        .obj()
    )
    assert (pod.node_name, pod.phase, pod.nominated_node_name) == ("n1", "Running", "n2")
    assert (pod.start_time, pod.meta.creation_timestamp) == (100.5, 50.0)
    assert pod.meta.owner_references[0].kind == "ReplicaSet" and pod.uid == "u-1"
    assert pod.scheduling_gates == ("example.com/wait",)
    assert (pod.preemption_policy, pod.priority_class_name) == ("Never", "high")


def test_invalid_builder_input_is_reported() -> None:
    with pytest.raises(InvalidObjectError, match="Pod default/p"):
        make_pod("p").req(cpu="4x").obj()


def test_node_builder() -> None:
    builder = (
        make_node("n1")
        .capacity(cpu="4", memory="32Gi", pods=110)
        .zone("z1")
        .label("disk", "ssd")
        .taint("dedicated", "gpu", "NoSchedule")
        .unschedulable()
        .image("nginx:1.25", 5000, "nginx")
    )
    node = builder.obj()
    assert node.allocatable == node.capacity == {"cpu": 4000, "memory": 32 * GI, "pods": 110}
    assert node.labels == {HOSTNAME_LABEL: "n1", ZONE_LABEL: "z1", "disk": "ssd"}
    assert node.taints[0].value == "gpu" and node.unschedulable
    assert node.images[0].names == ("nginx:1.25", "nginx")
    assert parse_node(builder.manifest()) == node


def test_node_allocatable_separate_from_capacity() -> None:
    node = make_node("n1").capacity(cpu="4").allocatable(cpu="3500m").obj()
    assert (node.capacity, node.allocatable) == ({"cpu": 4000}, {"cpu": 3500})


def test_other_builders() -> None:
    assert make_namespace("team", {"env": "prod"}).meta.labels == {"env": "prod"}
    pdb = make_pdb(
        "b", {"app": "web"}, min_available="50%", disruptions_allowed=1, disrupted_pods={"p1": 10.0}
    )
    assert (pdb.min_available, pdb.disruptions_allowed, pdb.disrupted_pods) == (
        "50%",
        1,
        {"p1": 10.0},
    )
    assert make_priority_class("high", 1000).value == 1000
    for kind in ("Service", "ReplicationController", "ReplicaSet", "StatefulSet"):
        ctrl = make_controller(kind, "w", {"app": "web"})
        assert isinstance(ctrl, WorkloadController) and ctrl.kind == kind
        assert ctrl.selector == LabelSelector(match_labels=(("app", "web"),))


def test_rfc3339() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
