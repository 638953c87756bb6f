"""``cluster-sched describe resourceclaim|resourceslice|deviceclass`` against a real
kubectl: both read the same store (kubectl through the project's API server) and must
print the same lines — kubectl's generic describer, with the claim's allocation,
reservedFor and devices."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import redis

from cluster_sched.cli import main
from cluster_sched.kubeapi import ApiServer, ApiServerOptions
from cluster_sched.store import Store
from cluster_sched.workload.describe_generic import smart_label
from tests.dra.dra_fixtures import claim, device, device_class, resource_slice
from tests.kubeapi.kube_helpers import KUBECTL, Kubectl


def _allocated_claim() -> dict[str, Any]:
    doc = claim("gpu-claim")
    doc["metadata"]["labels"] = {"team": "ml", "app": "train"}
    doc["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "req-0", "driver": "driver-a", "pool": "pool-1", "device": "d1"}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                        ]
                    }
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "uid-trainer"}],
        "devices": [
            {
                "driver": "driver-a",
                "pool": "pool-1",
                "device": "d1",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Up",
                        "message": "ok",
                        "lastTransitionTime": "2026-11-27T10:00:00Z",
                    }
                ],
            }
        ],
    }
    return doc


def test_smart_labels_are_kubectls() -> None:
    assert [
        smart_label(f)
        for f in ("reservedFor", "apiVersion", "uid", "nodeSelectorTerms", "HTTPServer", "gpu0")
    ] == ["Reserved For", "API Version", "UID", "Node Selector Terms", "HTTP Server", "gpu0"]


@pytest.mark.skipif(not KUBECTL, reason="kubectl is not installed")
@pytest.mark.parametrize(
    ("kind", "resource", "name", "doc"),
    [
        ("ResourceClaim", "resourceclaim", "gpu-claim", _allocated_claim()),
        ("ResourceSlice", "resourceslice", "s1", resource_slice("s1", [device("d1", numa=1)])),
        ("DeviceClass", "deviceclass", "class-a", device_class()),
    ],
    ids=["claim", "slice", "class"],
)
def test_describe_prints_what_kubectl_prints(
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    resource: str,
    name: str,
    doc: dict[str, Any],
) -> None:
    store = Store(redis_client)
    status = doc.get("status")
    stored = {k: v for k, v in copy.deepcopy(doc).items() if k != "status"}
    store.apply(stored, source="test")
    if status is not None:
        key = f"{doc['metadata'].get('namespace', '')}/{name}".lstrip("/")
        current = store.get(kind, key)
        assert current is not None
        store.apply({**current, "status": status}, source="test")
    server = ApiServer(store, ApiServerOptions()).start()
    try:
        kubectl = Kubectl(
            server.write_kubeconfig(str(tmp_path / "kubeconfig")), str(tmp_path / "cache")
        )
        want = kubectl.run("describe", resource, name).stdout
    finally:
        server.close()
    assert main(["describe", resource, name, "--redis", redis_url]) == 0
    got = capsys.readouterr().out
    strip = [line.rstrip() for line in want.splitlines()]
    assert [line.rstrip() for line in got.splitlines()] == strip
    if kind == "ResourceClaim":
        assert "Reserved For:" in got and "    Name:      trainer" in got
