"""DRA values back to their resource.k8s.io/v1 manifest form (what PreBind writes to a
claim's status and ``run --output`` lists)."""

from __future__ import annotations

from typing import Any

from cluster_sched.dra.objects import AllocationResult

__all__ = ["allocation_to_manifest"]


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
