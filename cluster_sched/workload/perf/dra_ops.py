"""scheduler_perf's DRA pieces (test/integration/scheduler_perf/dra.go): the
``createResourceDriver`` op, which publishes a ResourceSlice per matching node,
``allocResourceClaims``, which allocates claims out of band with the scheduler's own
allocator, and the resourceclaim controller's part for created pods (a claim per template
entry, named in the pod's status, created with it)."""

from __future__ import annotations

import copy
import fnmatch
import random
from collections.abc import Mapping
from typing import Any

from cluster_sched.api.controllers import instantiate_claims
from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Namespace, Node
from cluster_sched.dra.allocator import Allocator
from cluster_sched.dra.listers import DraListers
from cluster_sched.dra.objects import DeviceClass, ResourceClaim, ResourceSlice
from cluster_sched.dra.wire import allocation_to_manifest
from cluster_sched.features import DRA_ADMIN_ACCESS, DRA_PRIORITIZED_LIST, FeatureGates
from cluster_sched.store.store import Store
from cluster_sched.workload.perf.ops import AllocResourceClaims, CreateResourceDriver

__all__ = [
    "ClaimAllocationFailed",
    "ClaimTemplates",
    "alloc_resource_claims",
    "create_resource_driver",
    "driver_slice",
]

API = "resource.k8s.io/v1"


def _device(i: int) -> dict[str, Any]:
    """upstream's test driver device: one per claim the node can hold."""
    return {
        "name": f"instance-{i}",
        "attributes": {
            "model": {"string": "A100"},
            "family": {"string": "GPU"},
            "driverVersion": {"version": "1.2.3"},
            "dra.example.com/numa": {"int": i},
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


class ClaimAllocationFailed(Exception):
    """allocResourceClaims found no node for a claim (upstream fails the workload)."""


def alloc_resource_claims(
    store: Store, op: AllocResourceClaims, rng: random.Random, features: FeatureGates
) -> int:
    """Upstream allocResourceClaimsOp: every unallocated claim of ``op.namespace`` (all
    namespaces if empty), one at a time, on the first node of a fresh shuffle where the
    allocator (the DynamicResources plugin's, with the same gates) finds devices; each
    allocation is written at once and counts as taken for the next claim. No pod is
    reserved and no finalizer added, as upstream's op writes only ``status.allocation``.
    Returns how many claims were allocated."""
    dra = DraListers()
    for kind in ("DeviceClass", "ResourceSlice", "ResourceClaim"):
        for doc in store.list(kind):
            obj = parse_object(doc)
            assert isinstance(obj, DeviceClass | ResourceSlice | ResourceClaim)
            dra.set(obj)
    nodes = [n for n in map(parse_object, store.list("Node")) if isinstance(n, Node)]
    labels = {
        ns.name: ns.meta.labels
        for ns in map(parse_object, store.list("Namespace"))
        if isinstance(ns, Namespace)
    }
    local, shared = dra.slice_index()
    allocator = Allocator(
        dra.classes,
        (),
        dra.is_allocated,
        lambda name: labels.get(name, {}),
        admin_access=features.enabled(DRA_ADMIN_ACCESS),
        prioritized_list=features.enabled(DRA_PRIORITIZED_LIST),
        slices_for=lambda node: [*local.get(node.name, ()), *shared],
    )
    todo = [
        c
        for c in dra.claims.values()
        if c.allocation is None and (not op.namespace or c.meta.namespace == op.namespace)
    ]
    for i, claim in enumerate(todo):
        allocator.validate([claim])
        rng.shuffle(nodes)
        for node in nodes:
            result = allocator.allocate(node, [claim])
            if result is None:
                continue
            stored = store.get("ResourceClaim", claim.key)
            assert stored is not None
            doc = copy.deepcopy(stored)
            doc.setdefault("status", {})["allocation"] = allocation_to_manifest(result[0])
            store.apply(doc, source="allocResourceClaims")
            allocated = parse_object(doc)
            assert isinstance(allocated, ResourceClaim)
            dra.set(allocated)  # taken for the next claim, as upstream's assume cache
            break
        else:
            raise ClaimAllocationFailed(f"Could not allocate claim {i} out of {len(todo)}")
    return len(todo)


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
