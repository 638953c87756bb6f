"""ResourceClaimTemplates in ``kind: Workload`` files: a pod group naming a template gets
a claim per pod (as the resourceclaim controller makes them) and the run allocates each
on its pod's node, never one device twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.cli import main
from cluster_sched.workload.spec import load_workload
from tests.dra.dra_fixtures import device, device_class, resource_slice

TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu", "namespace": "default"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "class-a"}}]}}},
}  # fmt: skip


def _workload(tmp_path: Path, pods: int = 5) -> Path:
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "dra-templates"},
        "spec": {
            "objects": [
                device_class(),
                TEMPLATE,
                *(
                    resource_slice(
                        f"slice-{n}", [device("gpu-0"), device("gpu-1")], node=f"node-{n}",
                        pool=f"node-{n}",
                    )
                    for n in range(2)
                ),
            ],
            "nodeGroups": [{"count": 2, "template": {
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node"},
                "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}}],
            "podGroups": [{"name": "train", "count": pods, "template": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "train", "namespace": "default"},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {
                        "requests": {"cpu": "100m"}}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                }}}],
        },
    }  # fmt: skip
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _claim_names(w: Any) -> list[str]:
    return [o["metadata"]["name"] for o in w.objects if o["kind"] == "ResourceClaim"]


def test_each_pod_gets_its_own_claim_named_in_its_status(tmp_path: Path) -> None:
    w = load_workload(_workload(tmp_path), seed=3)
    names = _claim_names(w)
    assert len(names) == len(set(names)) == 5
    pods = list(w.pod_groups[0].manifests())
    for i, pod in enumerate(pods):
        (status,) = pod["status"]["resourceClaimStatuses"]
        assert status["name"] == "gpu" and status["resourceClaimName"] in names
        assert status["resourceClaimName"].startswith(f"train-{i}-gpu-")
    claim = next(o for o in w.objects if o["metadata"]["name"] == names[0])
    assert claim["metadata"]["ownerReferences"][0]["name"] == "train-0"
    assert claim["spec"] == TEMPLATE["spec"]["spec"]
    # deterministic for a seed
    assert _claim_names(load_workload(_workload(tmp_path), seed=3)) == names
    assert _claim_names(load_workload(_workload(tmp_path), seed=4)) != names


@pytest.mark.parametrize("batch", ["1", "8"])
def test_template_pods_are_placed_on_free_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], batch: str
) -> None:
    out = tmp_path / "out"
    rc = main(
        [
            "run", str(_workload(tmp_path)), "--output", str(out), "--quiet", "--no-report",
            "--batch-size", batch, "--group-timeout", "10",
        ]
    )  # fmt: skip
    capsys.readouterr()
    assert rc == 0
    placements = json.loads((out / "placements.json").read_text())
    claims = json.loads((out / "resourceclaims.json").read_text())["items"]
    # four devices on two nodes: four of the five pods fit
    assert len(placements) == 4
    allocated = [c for c in claims if (c.get("status") or {}).get("allocation")]
    assert len(allocated) == 4 and len(claims) == 5
    devices = set()
    for c in allocated:
        (result,) = c["status"]["allocation"]["devices"]["results"]
        devices.add((result["pool"], result["device"]))
        (user,) = c["status"]["reservedFor"]
        assert placements[f"default/{user['name']}"] == result["pool"]  # pool = its node
        assert c["metadata"]["ownerReferences"][0]["name"] == user["name"]
    assert len(devices) == 4
