"""What an allocation result carries besides its devices (upstream Allocate's tail):
the device configurations, from the classes the requests chose and from the claim,
and the node selector that pins the claim where its devices are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_sched.api.objects import Node
from cluster_sched.dra.objects import (
    FIRST_AVAILABLE_MAX_SIZE,
    AllocationResult,
    DeviceClass,
    DeviceConfig,
    ExactRequest,
    ResourceClaim,
    ResourceSlice,
)

__all__ = ["allocation_configs", "compute_score", "node_selector"]


def allocation_configs(
    classes: Mapping[str, DeviceClass], claim: ResourceClaim, chosen: list[tuple[str, ExactRequest]]
) -> tuple[DeviceConfig, ...]:
    """upstream's result configs: each class's configs once, naming every request
    that chose the class; then the claim's configs for the requests (or chosen
    subrequests) they name, once per such request (as upstream's table expects:
    a single request's class config still names it)."""
    out: list[tuple[str, Any, list[str], str]] = []
    by_class: dict[str, tuple[int, int]] = {}
    for name, alt in chosen:
        span = by_class.get(alt.device_class_name)
        if span is not None:
            for i in range(*span):
                out[i][2].append(name)
            continue
        start = len(out)
        for cfg in classes[alt.device_class_name].config:
            out.append((cfg.driver, cfg.parameters, [name], "FromClass"))
        by_class[alt.device_class_name] = (start, len(out))
    picked = {name.partition("/")[0]: name for name, _ in chosen if "/" in name}
    for cfg in claim.spec.config:
        if not cfg.requests:
            out.append((cfg.driver, cfg.parameters, [], "FromClaim"))
            continue
        for req in claim.spec.requests:
            sub = picked.get(req.name)
            if req.name in cfg.requests or (sub is not None and sub in cfg.requests):
                out.append((cfg.driver, cfg.parameters, list(cfg.requests), "FromClaim"))
    return tuple(
        DeviceConfig(driver, params, tuple(reqs), source) for driver, params, reqs, source in out
    )


def node_selector(slices: list[ResourceSlice], node: Node) -> Mapping[str, object] | None:
    """upstream createNodeSelector: a node-local device pins the claim to the node; a
    network-attached one to its slice's selector (the terms' requirements combined);
    devices for all nodes add nothing."""
    if any(s.node_name for s in slices):
        return {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.name]}]}
            ]
        }
    selectors = []
    for s in slices:
        if s.node_selector_raw is not None and s.node_selector_raw not in selectors:
            selectors.append(s.node_selector_raw)
    if not selectors:
        return None
    if len(selectors) == 1:
        return selectors[0]
    exprs: list[object] = []
    fields: list[object] = []
    for sel in selectors:
        for term in sel.get("nodeSelectorTerms") or []:  # type: ignore[attr-defined]
            exprs.extend(term.get("matchExpressions") or [])
            fields.extend(term.get("matchFields") or [])
    merged: dict[str, object] = {}
    if exprs:
        merged["matchExpressions"] = exprs
    if fields:
        merged["matchFields"] = fields
    return {"nodeSelectorTerms": [merged]}


def compute_score(claims: list[ResourceClaim], allocations: list[AllocationResult]) -> int:
    """upstream computeScore (DynamicResources' Score on a node): every allocated
    subrequest at index i of its request's firstAvailable adds
    FirstAvailableDeviceRequestMaxSize - i, once however many devices it got;
    ``allocations`` match ``claims`` one by one."""
    score = 0
    for i, claim in enumerate(claims):
        if i >= len(allocations):
            raise ValueError(
                f"number of allocations {len(allocations)} is smaller than number of claims"
            )
        chosen = {r.request for r in allocations[i].devices if "/" in r.request}
        for req in claim.spec.requests:
            for rank, sub in enumerate(req.first_available):
                if f"{req.name}/{sub.name}" in chosen:
                    score += FIRST_AVAILABLE_MAX_SIZE - rank
    return score
