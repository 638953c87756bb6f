"""DRA values back to their resource.k8s.io/v1 manifest form (what PreBind writes to a
claim's status and ``run --output`` lists)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.dra.objects import CLAIM_FINALIZER, AllocationResult

__all__ = ["allocation_to_manifest", "bind_claim", "unreserve_claim"]


def allocation_to_manifest(allocation: AllocationResult) -> dict[str, Any]:
    """``status.allocation`` of a ResourceClaim."""
    results = []
    for r in allocation.devices:
        item: dict[str, Any] = {
            "request": r.request,
            "driver": r.driver,
            "pool": r.pool,
            "device": r.device,
        }
        if r.admin_access:
            item["adminAccess"] = True
        results.append(item)
    devices: dict[str, Any] = {"results": results}
    if allocation.config:
        devices["config"] = [
            {
                "source": c.source,
                **({"requests": list(c.requests)} if c.requests else {}),
                "opaque": {"driver": c.driver, "parameters": c.parameters},
            }
            for c in allocation.config
        ]
    out: dict[str, Any] = {"devices": devices}
    if allocation.node_selector is not None:
        out["nodeSelector"] = allocation.node_selector
    return out


def bind_claim(
    store: Any,
    key: str,
    allocation: AllocationResult | None,
    pod: Pod,
    cached: Mapping[str, Any] | None = None,
) -> str:
    """PreBind's write for one claim (upstream bindClaim): the finalizer and
    ``status.allocation`` when the scheduler allocated it, then the pod appended to
    ``status.reservedFor``. One compare-and-set, first against ``cached`` (the claim as
    the scheduler's informer holds it, as upstream's first attempt writes its cached
    claim), re-read and decided again on a conflict. Returns upstream's error text, or
    "" when written."""
    problem = ""

    def mutate(stored: dict[str, Any]) -> dict[str, Any] | None:
        nonlocal problem
        problem = ""
        doc = copy.deepcopy(stored)
        meta = doc.setdefault("metadata", {})
        if meta.get("deletionTimestamp"):
            problem = f"claim {key} got deleted in the meantime"
            return None
        status = doc.setdefault("status", {})
        if allocation is not None:
            if status.get("allocation") is not None:
                problem = f"claim {key} got allocated elsewhere in the meantime"
                return None
            finalizers = list(meta.get("finalizers") or [])
            if CLAIM_FINALIZER not in finalizers:
                meta["finalizers"] = [*finalizers, CLAIM_FINALIZER]
            status["allocation"] = allocation_to_manifest(allocation)
        refs = list(status.get("reservedFor") or [])
        refs.append({"resource": "pods", "name": pod.name, "uid": pod.uid})
        status["reservedFor"] = refs
        return doc

    if store.update("ResourceClaim", key, mutate, cached=cached) is None:
        return f"claim {key} got deleted in the meantime"
    return problem


def unreserve_claim(store: Any, key: str, pod: Pod) -> None:
    """Unreserve's write for one claim (upstream: a strategic-merge patch deleting the
    pod's ``status.reservedFor`` entry by uid) when the claim is allocated and reserved
    for the pod, as after a PreBind whose binding then failed. The allocation stays."""
    doc = store.get("ResourceClaim", key)
    status = (doc or {}).get("status") or {}
    refs = list(status.get("reservedFor") or [])
    if doc is None or status.get("allocation") is None:
        return
    kept = [ref for ref in refs if ref.get("uid") != pod.uid]
    if len(kept) == len(refs):
        return
    doc = copy.deepcopy(doc)
    if kept:
        doc["status"]["reservedFor"] = kept
    else:
        doc["status"].pop("reservedFor", None)
    store.apply(doc, source="DynamicResources")
