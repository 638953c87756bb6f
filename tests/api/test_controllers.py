"""Controller expansion: each controller's naming and counting rules."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cluster_sched.api.controllers import (
    ALPHANUMS,
    add_daemon_tolerations,
    compute_hash,
    expand_controllers,
    fnv32a,
    node_name_affinity,
    safe_encode_string,
)
from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.errors import InvalidObjectError

SUFFIX = f"[{ALPHANUMS}]{{5}}"
SPEC = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]}


def template(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {**SPEC, **spec}}


def ctrl(kind: str, name: str, spec: dict[str, Any], uid: str = "", **extra: Any) -> dict[str, Any]:
    api = {"Job": "batch/v1", "ReplicationController": "v1"}.get(kind, "apps/v1")
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec, **extra}


def pod(
    name: str, owner: dict[str, Any] | None = None, phase: str = "Running", **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {**SPEC, **spec},
        "status": {"phase": phase},
    }


def ref(kind: str, name: str, uid: str = "", api: str = "apps/v1") -> dict[str, Any]:
    out = {"apiVersion": api, "kind": kind, "name": name, "controller": True}
    if uid:
        out["uid"] = uid
    return out


def node(name: str, taints: list[dict[str, str]] | None = None, **labels: str) -> Any:
    return parse_node(
        {
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": "4"}},
        }
    )


def names(exp: Any) -> list[str]:
    return [p["metadata"]["name"] for p in exp.pods]


# --- hash and names ------------------------------------------------------------------------


def test_fnv32a_matches_the_published_vectors() -> None:
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert fnv32a(b"foobar") == 0xBF9CF968


def test_safe_encode_string_maps_each_character_into_the_alphabet() -> None:
    # '0' is 48: 48 % 27 = 21 → '4'; '9' is 57 → 57 % 27 = 3 → 'f'
    assert safe_encode_string("09") == "4f"
    assert set(safe_encode_string("1234567890")) <= set(ALPHANUMS)


def test_compute_hash_is_stable_and_changes_with_template_and_collisions() -> None:
    a = template({"app": "a"})
    assert compute_hash(a) == compute_hash({"spec": a["spec"], "metadata": a["metadata"]})
    assert compute_hash(a) != compute_hash(template({"app": "b"}))
    assert compute_hash(a) != compute_hash(a, 1)
    assert re.fullmatch(f"[{ALPHANUMS}]{{1,10}}", compute_hash(a))


def test_names_are_deterministic_for_a_seed() -> None:
    docs = [
        ctrl("ReplicaSet", "rs", {"replicas": 3, "selector": {}, "template": template({"a": "b"})})
    ]
    first = names(expand_controllers(docs, [], seed=7))
    assert first == names(expand_controllers(docs, [], seed=7))
    assert first != names(expand_controllers(docs, [], seed=8))


# --- ReplicaSet / ReplicationController ------------------------------------------------------


def test_replica_set_creates_only_the_missing_pods_named_after_it() -> None:
    rs = ctrl(
        "ReplicaSet",
        "rs",
        {"replicas": 3, "selector": {}, "template": template({"a": "b"})},
        uid="u1",
    )
    docs = [
        rs,
        pod("rs-aaaaa", ref("ReplicaSet", "rs", "u1")),  # counts
        pod("rs-bbbbb", ref("ReplicaSet", "rs", "u1"), phase="Succeeded"),  # terminal: no
        pod("rs-ccccc", ref("ReplicaSet", "rs", "old-uid")),  # an earlier rs of that name: no
        pod("stray", None),  # selector would match, but not owned: no
    ]
    exp = expand_controllers(docs, [])
    assert len(exp.pods) == 2
    assert all(re.fullmatch(f"rs-{SUFFIX}", n) for n in names(exp))
    created = exp.pods[0]
    assert created["metadata"]["labels"] == {"a": "b"}
    assert created["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "u1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert exp.created == {"ReplicaSet ns/rs": 2}


def test_replication_controller_owner_is_v1() -> None:
    rc = ctrl("ReplicationController", "rc", {"replicas": 1, "template": template({"a": "b"})})
    exp = expand_controllers([rc], [])
    assert exp.pods[0]["metadata"]["ownerReferences"][0]["apiVersion"] == "v1"


def test_replica_set_replicas_default_to_one_and_names_avoid_existing_ones() -> None:
    rs = ctrl("ReplicaSet", "rs", {"selector": {}, "template": template({})})
    exp = expand_controllers([rs], [])
    assert len(exp.pods) == 1


# --- Deployment ------------------------------------------------------------------------------


def test_deployment_without_replica_set_creates_one_with_the_template_hash() -> None:
    tmpl = template({"app": "web"})
    dep = ctrl(
        "Deployment",
        "web",
        {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": tmpl},
        uid="d1",
    )
    exp = expand_controllers([dep], [])
    pod_hash = compute_hash(tmpl)
    (rs,) = exp.objects
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["replicas"] == 2
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert all(re.fullmatch(f"web-{pod_hash}-{SUFFIX}", n) for n in names(exp))
    assert all(
        p["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash} for p in exp.pods
    )
    assert parse_pod(exp.pods[0]).meta.owner_references[0].name == f"web-{pod_hash}"


def test_deployment_with_its_current_replica_set_only_scales_it() -> None:
    tmpl = template({"app": "web"})
    dep = ctrl("Deployment", "web", {"replicas": 3, "selector": {}, "template": tmpl}, uid="d1")
    rs_tmpl = template({"app": "web", "pod-template-hash": "abc"})
    rs = ctrl(
        "ReplicaSet", "web-abc", {"replicas": 2, "selector": {}, "template": rs_tmpl}, uid="r1"
    )
    rs["metadata"]["ownerReferences"] = [ref("Deployment", "web", "d1")]
    docs = [dep, rs, pod("web-abc-aaaaa", ref("ReplicaSet", "web-abc", "r1"))]
    exp = expand_controllers(docs, [])
    assert exp.objects == []  # no new ReplicaSet: the template matches but for the hash
    assert len(exp.pods) == 2 and all(n.startswith("web-abc-") for n in names(exp))


def test_deployment_rollout_surge_limits_the_new_replica_set() -> None:
    dep = ctrl(
        "Deployment",
        "web",
        {"replicas": 4, "selector": {}, "template": template({"v": "2"})},
        uid="d1",
    )
    old = ctrl(
        "ReplicaSet",
        "web-old",
        {"replicas": 4, "selector": {}, "template": template({"v": "1"})},
        uid="r0",
    )
    old["metadata"]["ownerReferences"] = [ref("Deployment", "web", "d1")]
    running = [pod(f"web-old-{i}", ref("ReplicaSet", "web-old", "r0")) for i in range(4)]
    exp = expand_controllers([dep, old, *running], [])
    (new_rs,) = exp.objects
    assert new_rs["spec"]["replicas"] == 1  # maxSurge 25% of 4 = 1 over the 4 old ones
    assert len(exp.pods) == 1


def test_paused_deployment_creates_nothing() -> None:
    dep = ctrl("Deployment", "web", {"paused": True, "selector": {}, "template": template({})})
    assert expand_controllers([dep], []).pods == []


# --- StatefulSet ---------------------------------------------------------------------------


def test_stateful_set_fills_missing_ordinals_with_claims() -> None:
    claim = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    sts = ctrl(
        "StatefulSet",
        "db",
        {
            "replicas": 3,
            "serviceName": "db-svc",
            "selector": {"matchLabels": {"app": "db"}},
            "template": template(
                {"app": "db"},
                volumes=[{"name": "data", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}],
            ),
            "volumeClaimTemplates": [claim],
        },
        uid="s1",
    )
    existing_claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-db-2", "namespace": "ns"},
    }
    docs = [sts, pod("db-1", ref("StatefulSet", "db", "s1")), existing_claim]
    exp = expand_controllers(docs, [])
    assert names(exp) == ["db-0", "db-2"]
    db0 = exp.pods[0]
    assert db0["metadata"]["labels"] == {
        "app": "db",
        "controller-revision-hash": db0["metadata"]["labels"]["controller-revision-hash"],
        "statefulset.kubernetes.io/pod-name": "db-0",
        "apps.kubernetes.io/pod-index": "0",
    }
    assert (db0["spec"]["hostname"], db0["spec"]["subdomain"]) == ("db-0", "db-svc")
    assert db0["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}},
        {"name": "tmp", "emptyDir": {}},
    ]
    claims = [o["metadata"] for o in exp.objects]
    assert claims == [{"name": "data-db-0", "namespace": "ns", "labels": {"app": "db"}}]


def test_stateful_set_start_ordinal() -> None:
    sts = ctrl(
        "StatefulSet",
        "s",
        {"replicas": 2, "ordinals": {"start": 5}, "selector": {}, "template": template({})},
    )
    assert names(expand_controllers([sts], [])) == ["s-5", "s-6"]


# --- Job -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "pods", "want"),
    [
        ({"parallelism": 3, "completions": 10}, [], 3),
        ({"parallelism": 3, "completions": 2}, [], 2),
        ({"parallelism": 3, "completions": 4}, ["Succeeded", "Succeeded", "Running"], 1),
        ({"parallelism": 2}, [], 2),  # no completions: a work queue of parallelism pods
        ({"parallelism": 2}, ["Succeeded", "Running"], 0),  # one succeeded: no new ones
        ({"parallelism": 2, "suspend": True}, [], 0),
        ({"parallelism": 2, "backoffLimit": 1}, ["Failed", "Failed"], 0),
        ({}, [], 1),
    ],
    ids=[
        "parallelism",
        "capped-by-completions",
        "completions-left",
        "work-queue",
        "work-queue-done",
        "suspended",
        "backoff-exceeded",
        "defaults",
    ],
)
def test_job_counts(spec: dict[str, Any], pods: list[str], want: int) -> None:
    job = ctrl("Job", "j", {**spec, "template": template({})}, uid="j1")
    owned = [
        pod(f"j-{i}", ref("Job", "j", "j1", "batch/v1"), phase=ph) for i, ph in enumerate(pods)
    ]
    exp = expand_controllers([job, *owned], [])
    assert len(exp.pods) == want
    assert all(re.fullmatch(f"j-{SUFFIX}", n) for n in names(exp))
    assert all(p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j" for p in exp.pods)


def test_finished_job_creates_nothing() -> None:
    job = ctrl(
        "Job",
        "j",
        {"template": template({})},
        status={"conditions": [{"type": "Complete", "status": "True"}]},
    )
    assert expand_controllers([job], []).pods == []


def test_indexed_job_fills_the_lowest_free_indexes() -> None:
    job = ctrl(
        "Job",
        "j",
        {"completionMode": "Indexed", "completions": 5, "parallelism": 2, "template": template({})},
        status={"completedIndexes": "0,2"},
    )
    exp = expand_controllers([job], [])
    assert [
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in exp.pods
    ] == ["1", "3"]
    assert re.fullmatch(f"j-1-{SUFFIX}", names(exp)[0])


# --- DaemonSet -----------------------------------------------------------------------------


def test_daemon_set_one_pod_per_eligible_node_without_one() -> None:
    ds = ctrl(
        "DaemonSet", "agent", {"selector": {}, "template": template({"app": "agent"})}, uid="ds1"
    )
    nodes = [
        node("a"),
        node("b"),
        node("tainted", [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        node("noexec", [{"key": "k", "effect": "NoExecute"}]),
        node("prefer", [{"key": "k", "effect": "PreferNoSchedule"}]),  # not filtering
        node("cordoned", [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
        node("notready", [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
    ]
    # already there: one bound, one pending (pinned by matchFields)
    on_a = pod("agent-x", ref("DaemonSet", "agent", "ds1"), nodeName="a")
    on_b = pod(
        "agent-y",
        ref("DaemonSet", "agent", "ds1"),
        affinity=node_name_affinity(None, "b"),
        phase="Pending",
    )
    exp = expand_controllers([ds, on_a, on_b], nodes)
    targets = [
        p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchFields"][0]["values"]
        for p in exp.pods
    ]
    assert targets == [["prefer"], ["cordoned"], ["notready"]]
    assert all(re.fullmatch(f"agent-{SUFFIX}", n) for n in names(exp))
    tolerations = exp.pods[0]["spec"]["tolerations"]
    assert {(t["key"], t["effect"]) for t in tolerations} == {
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    }


def test_daemon_set_node_selector_affinity_and_template_tolerations() -> None:
    ds = ctrl(
        "DaemonSet",
        "gpu",
        {
            "selector": {},
            "template": template(
                {},
                nodeSelector={"gpu": "true"},
                tolerations=[{"key": "dedicated", "operator": "Exists"}],
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["z1"]}
                                    ]
                                }
                            ]
                        },
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 1,
                                "preference": {
                                    "matchExpressions": [{"key": "p", "operator": "Exists"}]
                                },
                            }
                        ],
                    }
                },
            ),
        },
    )
    nodes = [
        node(
            "g1",
            [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            gpu="true",
            zone="z1",
        ),
        node("g2", gpu="true", zone="z2"),  # affinity says no
        node("c1", zone="z1"),  # nodeSelector says no
    ]
    exp = expand_controllers([ds], nodes)
    (created,) = exp.pods
    affinity = created["spec"]["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["g1"]}]}
        ]
    }
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 1  # kept


@pytest.mark.parametrize(
    ("host_network", "extra"), [(False, 0), (True, 1)], ids=["pod-network", "host-network"]
)
def test_daemon_tolerations_replace_equal_ones_and_add_network_unavailable(
    host_network: bool, extra: int
) -> None:
    spec: dict[str, Any] = {
        "hostNetwork": host_network,
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 30,
            },
            {"key": "mine", "operator": "Exists"},
        ],
    }
    add_daemon_tolerations(spec)
    assert len(spec["tolerations"]) == 7 + extra
    assert spec["tolerations"][0] == {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
    }
    network = {
        "key": "node.kubernetes.io/network-unavailable",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    assert (network in spec["tolerations"]) is host_network


# --- errors --------------------------------------------------------------------------------


def test_errors_name_the_controller_and_field() -> None:
    rs = ctrl("ReplicaSet", "rs", {"replicas": "three", "selector": {}, "template": template({})})
    with pytest.raises(
        InvalidObjectError, match=r"^ReplicaSet ns/rs: field spec.replicas: must be an integer"
    ):
        expand_controllers([rs], [])


def test_controller_without_template_creates_nothing_and_says_so() -> None:
    sts = ctrl("StatefulSet", "s", {"replicas": 2, "selector": {}})
    exp = expand_controllers([sts], [])
    assert exp.pods == []
    assert exp.warnings == ["StatefulSet ns/s: has no spec.template, so it creates no pods"]
