"""scheduler_perf's DRA pieces (test/integration/scheduler_perf/dra.go): the
``createResourceDriver`` op, which publishes a ResourceSlice per matching node, and the
resourceclaim controller's part for created pods (a claim per template entry, named in
the pod's status, created with it)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from cluster_sched.api.controllers import instantiate_claims
from cluster_sched.store.store import Store
from cluster_sched.workload.perf.ops import CreateResourceDriver

__all__ = ["ClaimTemplates", "create_resource_driver", "driver_slice"]

API = "resource.k8s.io/v1"


def _device(i: int) -> dict[str, Any]:
    """upstream's test driver device: one per claim the node can hold."""
    return {
        "name": f"instance-{i}",
        "attributes": {
            "model": {"string": "A100"},
            "family": {"string": "GPU"},
            "driverVersion": {"version": "1.2.3"},
            "numa": {"int": i},
        },
        "capacity": {"memory": {"value": "1Gi"}},
    }


def driver_slice(node: str, driver: str, devices: int) -> dict[str, Any]:
    """The test driver's ResourceSlice for ``node``: one pool, ``devices`` devices."""
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [_device(i) for i in range(devices)],
        },
    }


def create_resource_driver(store: Store, op: CreateResourceDriver) -> int:
    """One slice per node matching ``op.nodes``; returns how many were published."""
    slices = [
        driver_slice(name, op.driver_name, op.max_claims_per_node)
        for name in ((n.get("metadata") or {}).get("name", "") for n in store.list("Node"))
        if fnmatch.fnmatchcase(name, op.nodes)
    ]
    if slices:
        store.apply_many(slices)
    return len(slices)


class ClaimTemplates:
    """The claims pods need from ResourceClaimTemplates, made as the resourceclaim
    controller makes them; the templates are read from the store once per batch."""

    def __init__(self, store: Store, seed: int = 0) -> None:
        self.store = store
        self.seed = seed
        self.made = 0

    def claims_for(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Claims for ``pods`` (their status is set in place); [] if none needs one."""
        if not any(_names_template(p) for p in pods):
            return []
        templates = self.store.list("ResourceClaimTemplate")
        claims = instantiate_claims(pods, list(templates), seed=self.seed + self.made)
        self.made += len(pods)
        return claims


def _names_template(pod: Mapping[str, Any]) -> bool:
    entries = (pod.get("spec") or {}).get("resourceClaims") or []
    return any(isinstance(e, dict) and e.get("resourceClaimTemplateName") for e in entries)
