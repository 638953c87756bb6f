"""``explain``'s inputs go through the checks every workload file gets (issue 26,
findings 1, 8 and the empty-file half of 9): the pod file's schema, its kinds, empty
files; a ``--cluster`` Workload file is expanded as ``run`` expands it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.cli import EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "examples/small-basic.yaml"

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "plain", "labels": {"disk": "hdd"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
SSD_NODE = {**NODE, "metadata": {"name": "fast", "labels": {"disk": "ssd"}}}


def pod(spec_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x"}], **(spec_extra or {})},
    }


def write(tmp_path: Path, name: str, docs: list[Any] | str) -> str:
    path = tmp_path / name
    path.write_text(docs if isinstance(docs, str) else yaml.safe_dump_all(docs))
    return str(path)


def explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["explain", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_a_typo_in_the_pod_file_is_refused_naming_file_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path, "cluster.yaml", [NODE, SSD_NODE])
    pod_file = write(tmp_path, "pod.yaml", [pod({"nodeSelecter": {"disk": "ssd"}})])
    code, out, err = explain(capsys, "--cluster", cluster, "--pod", pod_file)
    assert code == EXIT_USAGE and out == ""
    assert err.splitlines() == [
        f"error: {pod_file}: Pod default/p: field spec.nodeSelecter: unknown field "
        "'nodeSelecter' (Kubernetes v1.35 to v1.37 Pod has no such field)"
    ]


def test_lenient_explains_the_pod_file_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path, "cluster.yaml", [NODE])
    pod_file = write(tmp_path, "pod.yaml", [pod({"nodeSelecter": {"disk": "ssd"}})])
    code, out, err = explain(
        capsys, "--cluster", cluster, "--pod", pod_file, "--lenient", "--output", "json"
    )
    assert code == 0 and json.loads(out)["selectedNode"] == "plain"
    assert err.startswith(f"warning: {pod_file}: Pod default/p: field spec.nodeSelecter:")


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ("", "the file holds no objects (empty manifest)"),
        ("# nothing here\n---\n", "the file holds no objects (empty manifest)"),
        ([NODE, pod()], "expected exactly one Pod, found a Node (plain) too"),
        ([pod(), {**pod(), "metadata": {"name": "q"}}], "expected exactly one Pod, found 2"),
        ([pod({"containers": [{"name": "c", "resources": {"requests": {"cpu": "4x"}}}]})], "cpu"),
    ],
    ids=["empty", "comments-only", "a-node-too", "two-pods", "bad-quantity"],
)
def test_a_pod_file_must_hold_exactly_one_valid_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[Any] | str, message: str
) -> None:
    cluster = write(tmp_path, "cluster.yaml", [NODE])
    pod_file = write(tmp_path, "pod.yaml", docs)
    code, out, err = explain(capsys, "--cluster", cluster, "--pod", pod_file)
    assert code == EXIT_USAGE and out == ""
    [line] = err.splitlines()
    assert line.startswith(f"error: {pod_file}: ") and message in line


def test_an_empty_cluster_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path, "cluster.yaml", "")
    pod_file = write(tmp_path, "pod.yaml", [pod()])
    code, _, err = explain(capsys, "--cluster", cluster, "--pod", pod_file)
    assert code == EXIT_USAGE
    assert err == f"error: {cluster}: the file holds no objects (empty manifest)\n"


def test_a_workload_cluster_is_expanded_as_run_expands_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod_file = write(tmp_path, "pod.yaml", [pod()])
    code, out, err = explain(
        capsys, "--cluster", str(SMALL), "--pod", pod_file, "--output", "json", "--seed", "3"
    )
    assert code == 0 and err == ""
    result = json.loads(out)
    # small-basic's 100 generated nodes, every one feasible for a pod without requests
    assert result["selectedNode"] in {f"node-{i}" for i in range(100)}
    assert result["feasibleNodes"] == result["evaluatedNodes"] == 100
    assert sorted(result["filter"]) == sorted(f"node-{i}" for i in range(100))


def test_a_pending_pod_of_a_workload_cluster_can_be_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = explain(capsys, "--cluster", str(SMALL), "--pod", "default/pod-7")
    assert code == 0 and err == ""
    assert "pod default/pod-7: selected node node-" in " ".join(out.split())
