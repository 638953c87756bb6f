"""``cluster-sched get``, ``describe`` and ``delete`` against a real Redis after a small
scheduled run: kubectl's columns, namespaces, v1 Lists for -o json|yaml, one object by
NAME, every stored kind by kubectl's names, describe's node, nominated node, conditions
and events, describe node's pods and allocated resources, and one-line errors with
exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.cli import main
from cluster_sched.redis_server import connect
from cluster_sched.store.store import Store


def _node(name: str, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": "v1.35.0"},
        },
    }
    doc.update(extra)
    return doc


def _pod(name: str, namespace: str = "default", cpu: str = "500m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]
        },
    }


@pytest.fixture
def scheduled(redis_url: str, tmp_path: Path) -> str:
    """A store after a run: web-1, web-2 bound; huge unschedulable; team/api bound."""
    control = _node("cp-0")
    control["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    control["spec"] = {"unschedulable": True}
    docs = [
        control,
        _node("node-a"),
        _pod("web-1"),
        _pod("web-2"),
        _pod("huge", cpu="64"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        _pod("api", namespace="team"),
    ]
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    argv = ["run", "--quiet", "--seed", "1", "--group-timeout", "5", str(path)]
    assert main([*argv, "--redis", redis_url]) == 0
    return redis_url


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _table(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_get_pods_shows_kubectl_columns_in_the_default_namespace(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "get", "pods", "--redis", scheduled)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    # columns align: every row's READY starts where the header's does
    assert {line.index("0/1") for line in lines[1:]} == {lines[0].index("READY")}
    assert [row[:4] for row in _table(out)[1:]] == [
        ["huge", "0/1", "Pending", "0"],
        ["web-1", "0/1", "Pending", "0"],
        ["web-2", "0/1", "Pending", "0"],
    ]


def test_get_pods_wide_all_namespaces_shows_node_and_nominated_node(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "get", "po", "-A", "-o", "wide", "--redis", scheduled)
    assert code == 0
    header = out.splitlines()[0]
    for title in ("NAMESPACE", "NAME", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"):
        assert title in header
    rows = {row[1]: row for row in _table(out)[1:]}
    assert set(rows) == {"huge", "web-1", "web-2", "api"}
    assert rows["api"][0] == "team"
    assert rows["web-1"][7] == "node-a" and rows["web-2"][7] == "node-a"
    assert rows["huge"][6:] == ["<none>", "<none>", "<none>", "<none>"]


def test_get_nodes_shows_status_roles_and_version(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "get", "nodes", "--redis", scheduled)
    assert code == 0
    table = _table(out)
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [table[1][:3], table[2][:3]] == [
        ["cp-0", "Ready,SchedulingDisabled", "control-plane"],
        ["node-a", "Ready", "<none>"],
    ]
    assert table[2][4] == "v1.35.0"


def test_get_events_lists_scheduled_and_failed_scheduling(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "get", "events", "--redis", scheduled)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any("Normal" in line and "Scheduled" in line and "pod/web-1" in line for line in lines)
    assert any(
        "Warning" in line and "FailedScheduling" in line and "pod/huge" in line for line in lines
    )
    assert not any("pod/api" in line for line in lines)  # namespace team
    code, out, _ = _run(capsys, "get", "events", "-n", "team", "--redis", scheduled)
    assert "pod/api" in out and "pod/web-1" not in out


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_get_output_json_and_yaml_is_a_v1_list(
    scheduled: str, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    code, out, _ = _run(capsys, "get", "pods", "-A", "-o", fmt, "--redis", scheduled)
    assert code == 0
    doc = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert doc["apiVersion"] == "v1" and doc["kind"] == "List"
    assert list(doc["items"][0])[:3] == ["apiVersion", "kind", "metadata"]
    by_name = {p["metadata"]["name"]: p for p in doc["items"]}
    assert by_name["web-1"]["spec"]["nodeName"] == "node-a"
    code, out, _ = _run(capsys, "get", "events", "-o", fmt, "--redis", scheduled)
    events = (json.loads(out) if fmt == "json" else yaml.safe_load(out))["items"]
    scheduled_events = [e for e in events if e["reason"] == "Scheduled"]
    assert {e["involvedObject"]["name"] for e in scheduled_events} == {"web-1", "web-2"}
    assert all(e["kind"] == "Event" and e["count"] == 1 for e in events)


def test_describe_pod_shows_node_conditions_and_events(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "describe", "pod", "default/web-1", "--redis", scheduled)
    assert code == 0
    fields = {
        line.split(":", 1)[0]: line.split(":", 1)[1].strip()
        for line in out.splitlines()
        if line and not line.startswith(" ") and ":" in line
    }
    assert fields["Name"] == "web-1" and fields["Namespace"] == "default"
    assert fields["Node"] == "node-a/"
    assert fields["Labels"] == "app=web-1"
    assert "  PodScheduled   True" in out
    assert "Successfully assigned default/web-1 to node-a" in out
    assert "default-scheduler" in out


def test_describe_unschedulable_pod_shows_why(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "describe", "pod", "huge", "-n", "default", "--redis", scheduled)
    assert code == 0
    assert "Node:" in out and "<none>" in out.split("Node:", 1)[1].splitlines()[0]
    assert "PodScheduled   False" in out
    assert "FailedScheduling" in out and "Insufficient cpu" in out


def test_describe_shows_the_nominated_node(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = _pod("waiting")
    pod["status"] = {"nominatedNodeName": "node-a"}
    Store(connect(redis_url)).apply(pod)
    code, out, _ = _run(capsys, "describe", "pod", "default/waiting", "--redis", redis_url)
    assert code == 0
    assert "NominatedNodeName:  node-a" in out
    assert out.rstrip().endswith("Events:          <none>")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["describe", "pod", "default/nope"], 'error: pods "nope" not found in namespace default'),
        (["describe", "pod", "a/b", "-n", "c"], "error: a/b: names namespace a, but -n says c"),
        (["get", "pods", "-A", "-n", "x"], "error: -n and -A cannot be used together"),
    ],
    ids=["unknown-pod", "two-namespaces", "n-and-A"],
)
def test_errors_are_one_line_and_exit_2(
    redis_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _run(capsys, *argv, "--redis", redis_url)
    assert (code, out, err) == (2, "", message + "\n")


def test_no_store_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLUSTER_SCHED_REDIS_URL", raising=False)
    code, _, err = _run(capsys, "get", "nodes")
    assert code == 2
    assert err == "error: get needs a store: pass --redis URL or set CLUSTER_SCHED_REDIS_URL\n"


def test_empty_namespace_says_no_resources(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "get", "pods", "-n", "empty", "--redis", redis_url)
    assert (code, out, err) == (0, "", "No resources found in empty namespace.\n")


def test_check_passes_on_a_consistent_store_and_names_each_problem(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--redis", scheduled, "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"bound": 3, "pending": 1, "problems": []}
    # A second Scheduled event for a bound pod is what a lost-then-repeated binding
    # would leave: the check must name it and fail.
    store = Store(connect(scheduled))
    store.record_event("Pod", "default/web-1", "Scheduled", "again")
    assert main(["check", "--redis", scheduled]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bound 3, pending 1, problems 1"
    assert out[1:] == ["2 Scheduled events for default/web-1"]


# --- issue 26 finding 11: get KIND NAME, describe node, delete, for every stored kind ----


def test_get_names_one_object_and_o_json_prints_it_alone(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "get", "pods", "web-2", "--redis", scheduled)
    assert code == 0
    assert [row[:3] for row in _table(out)] == [
        ["NAME", "READY", "STATUS"],
        ["web-2", "0/1", "Pending"],
    ]
    code, out, _ = _run(capsys, "get", "po", "team/api", "-o", "json", "--redis", scheduled)
    doc = json.loads(out)
    assert (doc["kind"], doc["metadata"]["name"], doc["spec"]["nodeName"]) == (
        "Pod",
        "api",
        "node-a",
    )
    code, out, _ = _run(capsys, "get", "node", "node-a", "cp-0", "--redis", scheduled)
    assert [row[0] for row in _table(out)] == ["NAME", "node-a", "cp-0"]


def test_get_any_stored_kind_by_kubectl_names(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for spelling in ("namespaces", "namespace", "ns", "Namespace"):
        code, out, _ = _run(capsys, "get", spelling, "team", "--redis", scheduled)
        assert code == 0 and [row[0] for row in _table(out)] == ["NAME", "team"], spelling
    code, out, err = _run(capsys, "get", "pdb", "--redis", scheduled)
    assert (code, out, err) == (0, "", "No resources found in default namespace.\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["get", "pods", "nope"], 'error: pods "nope" not found in namespace default'),
        (["get", "nodes", "nope"], 'error: nodes "nope" not found'),
        (["get", "widgets"], 'error: the server doesn\'t have a resource type "widgets"'),
        (["describe", "node", "nope"], 'error: nodes "nope" not found'),
        (["describe", "node", "a/b"], "error: a/b: nodes are cluster-scoped: give NAME alone"),
        (["delete", "events", "x"], "error: events are a stream in this store"),
    ],
    ids=["pod", "node", "kind", "describe-node", "cluster-scoped", "delete-events"],
)
def test_missing_objects_and_kinds_are_one_line_and_exit_2(
    scheduled: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _run(capsys, *argv, "--redis", scheduled)
    assert code == 2 and out == ""
    [line] = err.splitlines()
    assert line.startswith(message)


def test_describe_node_shows_its_pods_and_allocated_resources(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "describe", "node", "node-a", "--redis", scheduled)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["Name:", "node-a"]
    assert "Non-terminated Pods:  (3 in total)" in lines
    pods = {line.split()[1]: line.split() for line in lines if line.startswith("  default ")}
    pods.update({line.split()[1]: line.split() for line in lines if line.startswith("  team ")})
    assert set(pods) == {"web-1", "web-2", "api"}
    assert pods["web-1"][2:4] == ["500m", "(25%)"]  # of node-a's 2 allocatable cpus
    allocated = lines[lines.index("Allocated resources:") :]
    cpu = next(line.split() for line in allocated if line.startswith("  cpu "))
    assert cpu[1:3] == ["1500m", "(75%)"]
    assert lines[-1].startswith("Events:")


def test_delete_removes_the_objects_and_reports_each(
    scheduled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "delete", "pod", "web-1", "huge", "nope", "--redis", scheduled)
    assert code == 2
    assert out.splitlines() == ['pod "web-1" deleted', 'pod "huge" deleted']
    assert err == 'error: pods "nope" not found in namespace default\n'
    code, out, _ = _run(capsys, "delete", "ns", "team", "--redis", scheduled)
    assert (code, out) == (0, 'namespace "team" deleted\n')
    store = Store(connect(scheduled))
    try:
        assert sorted(d["metadata"]["name"] for d in store.list("Pod")) == ["api", "web-2"]
        assert store.get("Namespace", "team") is None
    finally:
        store.close()
