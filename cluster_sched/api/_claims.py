"""A pod's ``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (core/v1), the
pod side of Dynamic Resource Allocation; the resource.k8s.io kinds are ``dra``'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cluster_sched.api._decode as d
from cluster_sched.errors import InvalidObjectError

__all__ = ["PodResourceClaim", "pod_claim_statuses", "pod_resource_claims"]


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One ``pod.spec.resourceClaims`` entry: exactly one of the two sources is set."""

    name: str
    resource_claim_name: str = ""
    resource_claim_template_name: str = ""


def pod_resource_claims(value: object, field: str) -> tuple[PodResourceClaim, ...]:
    """``pod.spec.resourceClaims``: unique names, exactly one source each."""
    out: list[PodResourceClaim] = []
    for i, item in enumerate(d.seq(value, field)):
        path = f"{field}[{i}]"
        entry = d.mapping(item, path)
        name = d.required_string(entry.get("name"), f"{path}.name")
        claim = d.string(entry.get("resourceClaimName"), f"{path}.resourceClaimName")
        template = d.string(
            entry.get("resourceClaimTemplateName"), f"{path}.resourceClaimTemplateName"
        )
        if bool(claim) == bool(template):
            raise InvalidObjectError(
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                field=path,
            )
        if any(c.name == name for c in out):
            raise InvalidObjectError(f"Duplicate value: {name!r}", field=f"{path}.name")
        out.append(PodResourceClaim(name, claim, template))
    return tuple(out)


def pod_claim_statuses(status: Mapping[str, Any]) -> Mapping[str, str | None]:
    """``pod.status.resourceClaimStatuses``: pod claim name -> generated claim name."""
    value, field = status.get("resourceClaimStatuses"), "status.resourceClaimStatuses"
    out: dict[str, str | None] = {}
    for i, item in enumerate(d.seq(value, field)):
        entry = d.mapping(item, f"{field}[{i}]")
        name = d.required_string(entry.get("name"), f"{field}[{i}].name")
        claim = entry.get("resourceClaimName")
        out[name] = (
            d.string(claim, f"{field}[{i}].resourceClaimName") if claim is not None else None
        )
    return out
