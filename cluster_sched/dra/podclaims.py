"""A pod's ResourceClaims as DynamicResources sees them: name resolution (upstream
resourceclaim.Name / IsForPod / IsReservedForPod) and the per-class device counts of the
Filter pre-check."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.dra.listers import DraListers
from cluster_sched.dra.objects import ResourceClaim

__all__ = [
    "claim_change_helps",
    "claim_name",
    "class_needs",
    "free_devices",
    "is_for_pod",
    "is_simple",
    "pod_change_helps",
    "pod_claims",
    "reserved_for_pod",
]


def claim_name(pod: Pod, entry: Any) -> tuple[str | None, bool, str]:
    """upstream resourceclaim.Name: (claim name or None, must check owner, error)."""
    if entry.resource_claim_name:
        return entry.resource_claim_name, False, ""
    if entry.name in pod.resource_claim_statuses:
        return pod.resource_claim_statuses[entry.name], True, ""
    return None, False, f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet'


def is_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """upstream resourceclaim.IsForPod: the pod controls the claim (by uid when both
    have one: claims made from a snapshot's templates may predate the pod's uid)."""
    if claim.meta.namespace != pod.namespace:
        return False
    for ref in claim.meta.owner_references:
        if ref.controller and ref.kind == "Pod" and ref.name == pod.name:
            return not (ref.uid and pod.uid) or ref.uid == pod.uid
    return False


def pod_claims(pod: Pod, dra: DraListers) -> tuple[list[ResourceClaim], str]:
    """upstream foreachPodResourceClaim: the pod's claims, or the first error."""
    out = []
    for entry in pod.resource_claims:
        name, check_owner, err = claim_name(pod, entry)
        if err:
            return [], err
        if name is None:
            continue
        claim = dra.claim(pod.namespace, name)
        if claim is None:
            return [], f'resourceclaim.resource.k8s.io "{name}" not found'
        if claim.meta.deletion_timestamp is not None:
            return [], f'resourceclaim "{claim.name}" is being deleted'
        if check_owner and not is_for_pod(pod, claim):
            return [], (
                f"ResourceClaim {claim.key} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)"
            )
        out.append(claim)
    return out, ""


def class_needs(claims: list[ResourceClaim]) -> dict[str, int]:
    """Devices each class must still have free on a node for ``claims`` to fit there:
    every exactly-request's count (1 for All; none with admin access, which shares
    devices). A lower bound: firstAvailable requests are left to the allocator."""
    need: dict[str, int] = {}
    for claim in claims:
        for req in claim.spec.requests:
            ex = req.exactly
            if ex is None or ex.admin_access:
                continue
            want = 1 if ex.allocation_mode == "All" else ex.count
            need[ex.device_class_name] = need.get(ex.device_class_name, 0) + want
    return need


def is_simple(claims: list[ResourceClaim]) -> bool:
    """One request in all: ExactCount of one class, no selectors, constraints or admin
    access. Then enough free devices of the class on a node is exactly "fits there"
    (the count check decides Filter; the allocator runs once, in Reserve)."""
    requests = [req for claim in claims for req in claim.spec.requests]
    if len(requests) != 1 or any(claim.spec.constraints for claim in claims):
        return False
    ex = requests[0].exactly
    return (
        ex is not None
        and ex.allocation_mode == "ExactCount"
        and not ex.selectors
        and not ex.admin_access
    )


def free_devices(dra: DraListers, class_name: str, node: str) -> int:
    """Node-local devices of ``node`` the class accepts that nobody holds, counted
    afresh: the reference for ``DraListers.free_count``, which keeps it incrementally."""
    return sum(1 for d in dra.class_devices(class_name).get(node, ()) if not dra.is_allocated(d))


def claim_change_helps(
    pod: Pod, old: ResourceClaim | None, new: ResourceClaim | None, dra: DraListers
) -> bool:
    """upstream isSchedulableAfterClaimChange: a deallocation (devices freed), the
    creation of one of the pod's claims, or a change of its status. A pod whose own
    claims do not resolve is skipped first, whatever changed (upstream's order)."""
    for obj in (old, new):
        if obj is not None and not isinstance(obj, ResourceClaim):
            raise TypeError(f"unexpected object in isSchedulableAfterClaimChange: {obj!r}")
    claims, err = pod_claims(pod, dra)
    if err or new is None:
        return False
    if old is not None and old.allocation is not None and new.allocation is None:
        return True
    if not any(c.meta.uid == new.meta.uid for c in claims):
        return False
    if old is None:
        return True
    return _semantic(_status(old)) != _semantic(_status(new)) or (
        (old.allocation, old.reserved_for) != (new.allocation, new.reserved_for)
    )


def pod_change_helps(pod: Pod, new: Any, dra: DraListers | None) -> bool:
    """upstream isSchedulableAfterPodChange: the pod itself changed and now every one
    of its claims resolves (the claim controller named the generated ones)."""
    if not isinstance(new, Pod):
        raise TypeError(f"unexpected object in isSchedulableAfterPodChange: {new!r}")
    if new.uid != pod.uid or dra is None:
        return False
    return not pod_claims(new, dra)[1]


def _status(claim: ResourceClaim) -> Any:
    return (claim.raw or {}).get("status") or {}


def _semantic(value: Any) -> Any:
    """What apimachinery's Semantic.DeepEqual compares: an empty list is the same as
    an absent one (a nil slice); an empty object is not (a pointer to an empty struct,
    as ``allocation: {}``)."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != []}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    return any(ref.uid == pod.uid for ref in claim.reserved_for)
