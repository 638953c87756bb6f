"""``cluster-sched run examples/stateful.yaml``: pods with claims over zonal
WaitForFirstConsumer storage, placed end to end and checked independently.

The check reads only the store's manifests after the run (pods, claims, volumes, storage
classes, CSINodes) with its own small label matcher, never the scheduler's plugins: every
claim is bound, its PV bound back to it, every pod sits on a node its PVs' node affinity
and zone label allow (and, for a PV provisioned for it, its class's allowedTopologies
admit), and no node attaches more of a driver's volumes than its CSINode allows.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import redis

from cluster_sched.cli import main
from cluster_sched.store.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stateful.yaml"
ZONE = "topology.kubernetes.io/zone"


def _requirement(req: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = req["key"], req["operator"], req.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"operator {op} not used by the example")


def _affinity_allows(pv: dict[str, Any], labels: dict[str, str]) -> bool:
    required = ((pv["spec"].get("nodeAffinity") or {}).get("required")) or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    return any(all(_requirement(r, labels) for r in t.get("matchExpressions", [])) for t in terms)


def _topologies_allow(sc: dict[str, Any], labels: dict[str, str]) -> bool:
    terms = sc.get("allowedTopologies") or []
    return not terms or any(
        all(labels.get(e["key"]) in e["values"] for e in t["matchLabelExpressions"]) for t in terms
    )


def test_stateful_example_places_every_pod_with_its_volumes(
    tmp_path: Path, capsys: Any, redis_url: str, redis_client: redis.Redis
) -> None:
    rc = main(["run", str(EXAMPLE), "--output", str(tmp_path), "--quiet", "--redis", redis_url])
    _, err = capsys.readouterr()
    assert rc == 0, err
    placements = json.loads((tmp_path / "placements.json").read_text())
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["scheduled"] == 11 and summary["unschedulable"] == 0

    store = Store(redis_client)
    pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in store.list("Pod")}
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in store.list("Node")}
    pvs = {pv["metadata"]["name"]: pv for pv in store.list("PersistentVolume")}
    classes = {sc["metadata"]["name"]: sc for sc in store.list("StorageClass")}
    limits = {
        c["metadata"]["name"]: {d["name"]: d["allocatable"]["count"] for d in c["spec"]["drivers"]}
        for c in store.list("CSINode")
    }
    assert set(placements) == set(pods)
    attached: dict[tuple[str, str], set[str]] = defaultdict(set)
    for key, node in placements.items():
        assert pods[key]["spec"]["nodeName"] == node
        labels = nodes[node]
        for vol in pods[key]["spec"]["volumes"]:
            claim = store.get(
                "PersistentVolumeClaim", f"default/{vol['persistentVolumeClaim']['claimName']}"
            )
            assert claim is not None
            pv_name = claim["spec"].get("volumeName")
            assert pv_name, f"{key}: claim not bound"
            assert "pv.kubernetes.io/bind-completed" in claim["metadata"]["annotations"]
            pv = pvs[pv_name]
            assert pv["spec"]["claimRef"]["name"] == claim["metadata"]["name"]
            assert _affinity_allows(pv, labels), f"{key} on {node}: PV {pv_name} affinity"
            pv_zone = pv["metadata"].get("labels", {}).get(ZONE)
            assert pv_zone in (None, labels[ZONE]), f"{key} on {node}: PV {pv_name} in {pv_zone}"
            if "pv.kubernetes.io/provisioned-by" in pv["metadata"].get("annotations", {}):
                # provisioned for this pod: where the class allows provisioning
                assert _topologies_allow(classes[claim["spec"]["storageClassName"]], labels)
            csi = pv["spec"].get("csi")
            if csi:
                attached[(node, csi["driver"])].add(csi["volumeHandle"])
    for (node, driver), handles in attached.items():
        assert len(handles) <= limits[node][driver], f"{node}: {len(handles)} {driver} volumes"
    # The workload's own constraints, spelled out: web claims are provisioned only where
    # the class allows, the pre-bound db volumes pin their pods' zones, the local PVs
    # their pods' nodes.
    assert {nodes[placements[f"default/web-{i}"]][ZONE] for i in range(6)} <= {"zone-a", "zone-b"}
    assert [nodes[placements[f"default/db-{i}"]][ZONE] for i in range(3)] == [
        "zone-c",
        "zone-a",
        "zone-b",
    ]
    assert {placements["default/cache-0"], placements["default/cache-1"]} == {
        "node-a-0",
        "node-c-1",
    }
