"""What kube-controller-manager does with a deleted pod's ResourceClaims (the
resourceclaim controller and the garbage collector), done when the scheduler's watch
sees the pod go: the pod is removed from the ``reservedFor`` of its claims, and a claim
reserved by nobody any more is deallocated (its allocation and finalizer dropped), so
its devices are free again; then claims the pod owns (made from its templates) are
deleted. The deallocation is an update the scheduler's queueing hints see, as upstream's
(a delete alone would leave pods waiting for the devices unschedulable).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from cluster_sched.api.objects import Pod
from cluster_sched.dra.listers import DraListers
from cluster_sched.dra.objects import CLAIM_FINALIZER
from cluster_sched.dra.podclaims import is_for_pod, pod_claims

__all__ = ["release_pod_claims"]


class ClaimStore(Protocol):
    def update(
        self, kind: str, key: str, mutate: Callable[[dict[str, Any]], Any], uid: str | None = None
    ) -> Any: ...

    def delete(self, kind: str, key: str) -> bool: ...


def release_pod_claims(store: ClaimStore, pod: Pod, dra: DraListers) -> None:
    claims, _ = pod_claims(pod, dra)
    for claim in claims:
        owned = is_for_pod(pod, claim) and any(
            ref.controller and ref.kind == "Pod" for ref in claim.meta.owner_references
        )
        if any(ref.uid == pod.uid for ref in claim.reserved_for):
            # upstream syncClaim: the reservation goes first (an update the scheduler's
            # queueing hints see: pods waiting for these devices are retried) ...
            store.update(
                "ResourceClaim", claim.key, partial(_unreserve, pod.uid), claim.meta.uid or None
            )
        if owned:
            # ... then the claim made for the pod (the garbage collector's delete)
            store.delete("ResourceClaim", claim.key)


def _unreserve(uid: str, stored: dict[str, Any]) -> dict[str, Any] | None:
    """The stored claim with ``uid`` dropped from its ``reservedFor`` (None: not there);
    reserved by nobody, the claim is deallocated (its allocation and finalizer dropped),
    so its devices are free again. One read and one compare-and-set: the claim's uid
    guards against a claim re-created under the same name, as upstream's UID precondition."""
    doc = copy.deepcopy(stored)
    status = doc.setdefault("status", {})
    before = status.get("reservedFor") or []
    refs = [r for r in before if r.get("uid") != uid]
    if len(refs) == len(before):
        return None
    if refs:
        status["reservedFor"] = refs
    else:
        for field in ("reservedFor", "allocation", "devices"):
            status.pop(field, None)
        meta = doc.setdefault("metadata", {})
        finalizers = [f for f in meta.get("finalizers") or [] if f != CLAIM_FINALIZER]
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
    return doc
