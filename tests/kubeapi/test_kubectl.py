"""A real kubectl against the API: apply with default validation, get, label, cordon,
patch (three types), describe, api-resources, delete, get -w."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import NODE, Kubectl, pod


def _apply(kubectl: Kubectl, tmp_path: Path, *docs: dict) -> str:
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all(list(docs)))
    return kubectl.run("apply", "-f", str(path)).stdout


def test_apply_with_default_validation_stores_objects(
    kubectl: Kubectl, store: Store, tmp_path: Path
) -> None:
    out = _apply(kubectl, tmp_path, NODE, pod("p1"))
    assert "node/n1 created" in out and "pod/p1 created" in out
    stored = store.get("Pod", "default/p1")
    assert stored is not None and stored["metadata"]["uid"]
    assert store.get("Node", "n1") is not None
    # re-applying a change goes through a strategic merge patch
    changed = pod("p1")
    changed["metadata"]["labels"]["tier"] = "front"
    assert "pod/p1 configured" in _apply(kubectl, tmp_path, changed)
    assert store.get("Pod", "default/p1")["metadata"]["labels"]["tier"] == "front"


def test_unknown_field_is_refused_by_strict_validation(
    kubectl: Kubectl, store: Store, tmp_path: Path
) -> None:
    bad = pod("p1")
    bad["spec"]["nodeSelecter"] = {"a": "b"}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    proc = kubectl.run("apply", "-f", str(path), check=False)
    assert proc.returncode != 0
    assert "nodeSelecter" in proc.stderr
    assert store.get("Pod", "default/p1") is None


def test_get_wide_shows_node_of_bound_pod(kubectl: Kubectl, store: Store, tmp_path: Path) -> None:
    _apply(kubectl, tmp_path, NODE, pod("p1"), pod("p2"))
    store.bind("default/p1", "n1")
    out = kubectl.run("get", "pods", "-A", "-o", "wide").stdout
    header, *rows = out.strip().splitlines()
    assert header.split()[:3] == ["NAMESPACE", "NAME", "READY"] and "NODE" in header
    by_name = {r.split()[1]: r.split() for r in rows}
    node_col = header.split().index("NODE")
    assert by_name["p1"][node_col] == "n1"
    assert by_name["p2"][node_col] == "<none>"


def test_label_and_cordon_node(kubectl: Kubectl, store: Store, tmp_path: Path) -> None:
    _apply(kubectl, tmp_path, NODE)
    kubectl.run("label", "node", "n1", "zone=a")
    kubectl.run("cordon", "n1")
    node = store.get("Node", "n1")
    assert node["metadata"]["labels"]["zone"] == "a"
    assert node["spec"]["unschedulable"] is True
    assert "SchedulingDisabled" in kubectl.run("get", "nodes").stdout
    assert kubectl.run("get", "nodes", "-l", "zone=a", "-o", "name").stdout.strip() == "node/n1"
    assert kubectl.run("get", "nodes", "-l", "zone in (b,c)", "-o", "name").stdout.strip() == ""


def test_patch_types(kubectl: Kubectl, store: Store, tmp_path: Path) -> None:
    _apply(kubectl, tmp_path, NODE, pod("p1"))
    kubectl.run("patch", "pod", "p1", "--type", "merge", "-p", '{"metadata":{"labels":{"m":"1"}}}')
    kubectl.run(
        "patch", "pod", "p1", "--type", "json",
        "-p", '[{"op":"add","path":"/metadata/labels/j","value":"2"}]',
    )  # fmt: skip
    # strategic: containers merge by name, so the patch adds an env var without a replace
    kubectl.run(
        "patch", "pod", "p1",
        "-p", '{"spec":{"containers":[{"name":"c","env":[{"name":"E","value":"v"}]}]}}',
    )  # fmt: skip
    stored = store.get("Pod", "default/p1")
    assert {"m": "1", "j": "2"}.items() <= stored["metadata"]["labels"].items()
    (container,) = stored["spec"]["containers"]
    assert container["image"] == "nginx" and container["env"] == [{"name": "E", "value": "v"}]
    bad = kubectl.run(
        "patch",
        "pod",
        "p1",
        "--type",
        "json",
        "-p",
        '[{"op":"remove","path":"/nope"}]',
        check=False,
    )
    assert bad.returncode != 0


def test_describe_shows_failed_scheduling(kubectl: Kubectl, store: Store, tmp_path: Path) -> None:
    _apply(kubectl, tmp_path, NODE, pod("p1", cpu="64"))
    store.record_event(
        "Pod", "default/p1", "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient cpu.", type="Warning",
    )  # fmt: skip
    out = kubectl.run("describe", "pod", "p1").stdout
    assert "FailedScheduling" in out and "Insufficient cpu" in out
    events = kubectl.run("get", "events", "-o", "json").stdout
    assert [e["reason"] for e in json.loads(events)["items"]] == ["FailedScheduling"]


def test_api_resources_lists_informer_kinds(kubectl: Kubectl) -> None:
    out = kubectl.run("api-resources", "-o", "name").stdout.split()
    for name in ("pods", "nodes", "namespaces", "events", "persistentvolumeclaims",
                 "replicasets.apps", "poddisruptionbudgets.policy", "csinodes.storage.k8s.io",
                 "resourceslices.resource.k8s.io", "leases.coordination.k8s.io"):  # fmt: skip
        assert name in out


def test_delete_pod_returns_at_once(kubectl: Kubectl, store: Store, tmp_path: Path) -> None:
    _apply(kubectl, tmp_path, NODE, pod("p1"))
    out = kubectl.run("delete", "pod", "p1").stdout
    assert 'pod "p1" deleted' in out
    assert store.get("Pod", "default/p1") is None
    assert "NotFound" in kubectl.run("get", "pod", "p1", check=False).stderr


def test_get_watch_prints_new_pods(kubectl: Kubectl, store: Store, tmp_path: Path) -> None:
    _apply(kubectl, tmp_path, NODE, pod("p1"))
    proc = kubectl.popen("get", "pods", "-w", "--no-headers")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.split()[0] == "p1"
        store.apply(pod("p2"))
        second = proc.stdout.readline()
        assert second.split()[0] == "p2"
    finally:
        proc.kill()
        proc.communicate()
