"""``cluster-sched get`` of the DRA kinds after a run against a real Redis: kubectl's
columns, the claim's state, -o json as a v1 List."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cluster_sched.cli import main
from tests.dra.dra_fixtures import claim, device, device_class, node, resource_slice


def test_get_dra_kinds(redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "resourceClaims": [{"name": "c", "resourceClaimName": "claim-0"}],
        },
    }
    docs = [
        node(),
        device_class(),
        resource_slice("s1", [device("dev-1")]),
        claim(),
        claim("idle"),
        pod,
    ]
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["run", "--quiet", "--group-timeout", "5", str(path), "--redis", redis_url]) == 0
    capsys.readouterr()
    assert main(["get", "resourceclaims", "--redis", redis_url]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == ["NAME", "STATE", "AGE"]
    assert [r[:2] for r in rows[1:]] == [["claim-0", "allocated,reserved"], ["idle", "pending"]]
    assert main(["get", "resourceslices", "--redis", redis_url]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert rows[1][:4] == ["s1", "node-1", "driver-a", "pool-1"]
    assert main(["get", "deviceclasses", "-o", "json", "--redis", redis_url]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["kind"] == "List" and [i["metadata"]["name"] for i in listing["items"]] == [
        "class-a"
    ]
