"""Cluster snapshots (``kubectl get -A -o json``): loading, expansion, checks, and a run
whose placements the independent checker judges."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cluster_sched.api import schema
from cluster_sched.api.controllers import ALPHANUMS
from cluster_sched.cli import main
from cluster_sched.errors import InvalidObjectError
from cluster_sched.testing.cluster_snapshot import DEMO_EXPECTED, demo_snapshot
from cluster_sched.workload.explain_input import pod_reference
from cluster_sched.workload.snapshot import load_snapshot
from cluster_sched.workload.spec import load_workload
from tests.workload.checker import Cluster

SUFFIX = f"[{ALPHANUMS}]{{5}}"
#: The Kubernetes versions whose schemas judge field names: v1.35 and the newest shipped.
K8S = " to ".join(f"v{v}" for v in schema.schema_versions())


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(demo_snapshot(), indent=1))
    return path


@pytest.fixture
def typo_file(tmp_path: Path) -> Path:
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(demo_snapshot(typo=True)))
    return path


def keys(docs: list[dict[str, Any]]) -> list[str]:
    return [f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in docs]


def pinned_node(pod: dict[str, Any]) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    return str(terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])


def test_snapshot_expands_controllers_and_leaves_out_what_the_scheduler_never_sees(
    snapshot_file: Path,
) -> None:
    snap = load_snapshot(snapshot_file, seed=1)
    created = dict(snap.created)
    api = [k for k in created if k.startswith("ReplicaSet team/api-")]
    assert len(api) == 1 and created.pop(api[0]) == DEMO_EXPECTED["api_pods"]
    assert created == DEMO_EXPECTED["created"]
    assert sorted(snap.terminal) == DEMO_EXPECTED["terminal"]
    assert snap.skipped_kinds == DEMO_EXPECTED["skipped_kinds"]
    assert snap.warnings == [
        f"{snapshot_file}: skipped 2 ConfigMap objects: kind not modelled by the scheduler",
        f"{snapshot_file}: skipped 1 Secret object: kind not modelled by the scheduler",
        f"{snapshot_file}: skipped 1 Widget object: kind not modelled by the scheduler",
    ]
    pod_keys = keys(snap.pod_docs)
    assert not set(pod_keys) & set(DEMO_EXPECTED["terminal"])
    by_ds: dict[str, list[str]] = {"node-agent": [], "gpu-driver": []}
    for pod in snap.pod_docs:
        owner = (pod["metadata"].get("ownerReferences") or [{}])[0]
        if owner.get("kind") == "DaemonSet" and not pod["spec"].get("nodeName"):
            by_ds[owner["name"]].append(pinned_node(pod))
            assert re.fullmatch(f"{owner['name']}-{SUFFIX}", pod["metadata"]["name"])
    assert by_ds == {k: DEMO_EXPECTED[k] for k in by_ds}
    assert {"default/db-0", "default/db-1", "default/db-2"} <= set(pod_keys)
    assert sum(bool(re.fullmatch(f"team/web-7d9f8b6c5d-{SUFFIX}", k)) for k in pod_keys) == 3
    claims = [o["metadata"]["name"] for o in snap.objects if o["kind"] == "PersistentVolumeClaim"]
    assert claims == ["data-db-0", *DEMO_EXPECTED["claims_created"]]
    kinds = {o["kind"] for o in snap.objects}
    assert not kinds & {"Deployment", "DaemonSet", "Job", "ConfigMap", "Secret", "Widget"}


def test_same_seed_same_names(snapshot_file: Path) -> None:
    first = keys(load_snapshot(snapshot_file, seed=5).pod_docs)
    assert first == keys(load_snapshot(snapshot_file, seed=5).pod_docs)
    assert first != keys(load_snapshot(snapshot_file, seed=6).pod_docs)


def test_unknown_field_is_one_error_naming_file_object_and_field(typo_file: Path) -> None:
    with pytest.raises(InvalidObjectError) as err:
        load_snapshot(typo_file)
    assert str(err.value) == (
        f"{typo_file}: Pod default/solo: field spec.nodeSelecter: unknown field 'nodeSelecter' "
        f"(Kubernetes {K8S} Pod has no such field)"
    )
    lenient = load_snapshot(typo_file, lenient=True)
    assert lenient.warnings[0] == str(err.value)
    assert "default/solo" in keys(lenient.pod_docs)


def test_unknown_field_in_a_controller_template(tmp_path: Path) -> None:
    snap = demo_snapshot()
    deploy = next(i for i in snap["items"] if i["kind"] == "Deployment")
    deploy["spec"]["template"]["spec"]["containers"][0]["imagePulPolicy"] = "Always"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snap))
    with pytest.raises(
        InvalidObjectError,
        match=r"Deployment team/web: field spec\.template\.spec\.containers\[0\]\.imagePulPolicy: unknown field",
    ):
        load_snapshot(path)


def test_invalid_template_names_the_controller(tmp_path: Path) -> None:
    snap = demo_snapshot()
    job = next(i for i in snap["items"] if i["kind"] == "Job")
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snap))
    with pytest.raises(
        InvalidObjectError,
        match=r"^.*s\.json: Job default/batch: field spec\.template\.spec\.containers\[0\]\.resources\.requests\.cpu: ",
    ):
        load_snapshot(path)


def test_run_cli_typo_is_exit_2_with_one_line_and_lenient_runs(
    typo_file: Path, tmp_path: Path, capsys: Any, redis_url: str
) -> None:
    assert main(["run", str(typo_file), "--quiet", "--redis", redis_url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"error: {typo_file}: Pod default/solo: field spec.nodeSelecter: unknown field "
        f"'nodeSelecter' (Kubernetes {K8S} Pod has no such field)"
    ]


def test_run_places_the_snapshot_and_the_checker_agrees(
    snapshot_file: Path, tmp_path: Path, capsys: Any, redis_url: str
) -> None:
    out_dir = tmp_path / "out"
    rc = main(
        [
            "run",
            str(snapshot_file),
            "--quiet",
            "--seed",
            "1",
            "--no-report",
            "--output",
            str(out_dir),
            "--redis",
            redis_url,
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "warning: " in err and "skipped 2 ConfigMap objects" in err
    assert "gated          1" in out
    summary = json.loads((out_dir / "summary.json").read_text())
    placements = json.loads((out_dir / "placements.json").read_text())

    workload = load_workload(snapshot_file, seed=1)
    cluster = Cluster.from_workload(workload)
    assert cluster.check(placements) == []
    # every pod is placed but the gated one; nothing finished is placed or queued
    pending = set(cluster.pods) - set(placements)
    assert pending == set(DEMO_EXPECTED["gated"])
    assert not set(placements) & set(DEMO_EXPECTED["terminal"])
    assert summary["gated"] == 1 and summary["gated_pods"] == DEMO_EXPECTED["gated"]
    assert summary["unschedulable"] == 0
    assert summary["unschedulable_pods"] == [] and summary["unschedulable_reasons"] == {}
    assert summary["terminal_pods_skipped"] == len(DEMO_EXPECTED["terminal"])
    created = sum(workload.created.values())
    assert summary["scheduled"] == created + 1  # the controllers' pods and solo
    # DaemonSet pods sit on the nodes they were made for
    for key, node in placements.items():
        owner = (cluster.pods[key].meta.owner_references or (None,))[0]
        if owner is not None and owner.kind == "DaemonSet" and key not in cluster.prebound:
            assert node in DEMO_EXPECTED[owner.name]
    on_node = {n: sorted(k for k, v in placements.items() if v == n) for n in cluster.nodes}
    assert sorted(k.split("/")[1].rsplit("-", 1)[0] for k in on_node["node-2"]) == ["gpu-driver"]


def test_explain_picks_a_pending_pod_of_the_snapshot(snapshot_file: Path, capsys: Any) -> None:
    rc = main(
        ["explain", "--cluster", str(snapshot_file), "--pod", "default/solo", "--output", "json"]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    result = json.loads(out)
    # node-0 and node-1 fit only because their Succeeded/Failed pods hold nothing
    assert result["feasibleNodes"] == 2
    assert result["selectedNode"] in {"node-0", "node-1"}
    assert {n for n, f in result["filter"].items() if f["code"] == "Success"} == {
        "node-0",
        "node-1",
    }


def test_explain_a_pod_a_controller_creates(snapshot_file: Path, capsys: Any) -> None:
    snap = load_snapshot(snapshot_file, seed=4)
    gpu = next(k for k in keys(snap.pod_docs) if k.startswith("kube-system/gpu-driver-"))
    args = ["explain", "--cluster", str(snapshot_file), "--pod", gpu, "--seed", "4"]
    assert main([*args, "--output", "json"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["selectedNode"] == "node-2"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("default/nope", "no pod default/nope in the snapshot"),
        (
            "team/web-7d9f8b6c5d-qwrtz",
            "pod team/web-7d9f8b6c5d-qwrtz is not pending: it is bound to node node-0",
        ),
        (
            "default/crashed",
            "pod default/crashed is not pending: it has finished (Succeeded or Failed)",
        ),
    ],
    ids=["absent", "bound", "finished"],
)
def test_explain_pod_reference_errors_are_one_line(
    snapshot_file: Path, capsys: Any, ref: str, message: str
) -> None:
    assert main(["explain", "--cluster", str(snapshot_file), "--pod", ref]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines()[-1] == f"error: {snapshot_file}: {message}"


def test_workload_format_templates_are_checked_for_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "apiVersion: cluster-sched.io/v1alpha1\n"
        "kind: Workload\n"
        "spec:\n"
        "  podGroups:\n"
        "  - count: 1\n"
        "    template:\n"
        "      apiVersion: v1\n"
        "      kind: Pod\n"
        "      metadata: {name: p}\n"
        "      spec: {containers: [{name: c, image: i}], tolerration: []}\n"
    )
    with pytest.raises(InvalidObjectError) as err:
        load_workload(path)
    assert str(err.value) == (
        f"{path}: Pod default/p-0: field spec.podGroups[0].template.spec.tolerration: "
        f"unknown field 'tolerration' (Kubernetes {K8S} Pod has no such field)"
    )
    assert load_workload(path, lenient=True).warnings == [str(err.value)]


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("default/solo", "default/solo"),
        ("kube-system/gpu-driver-x2b4k", "kube-system/gpu-driver-x2b4k"),
        ("missing/pod.yaml", None),  # a file that is not there: reported as such
        ("pod", None),
        ("Default/solo", None),  # namespaces are DNS labels
    ],
    ids=["pod", "generated", "yaml-path", "no-slash", "not-a-namespace"],
)
def test_pod_reference_or_file(value: str, key: str | None) -> None:
    assert pod_reference(value) == key


def test_pod_reference_prefers_an_existing_file(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "default").mkdir()
    (tmp_path / "default" / "solo").write_text("")
    assert pod_reference("default/solo") is None
