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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from cluster_sched.api.objects import Pod
from cluster_sched.dra.listers import DraListers
from cluster_sched.dra.objects import CLAIM_FINALIZER
from cluster_sched.dra.podclaims import is_for_pod, pod_claims
from cluster_sched.store.objects import Update

__all__ = ["Release", "pod_releases", "release_claims", "release_pod_claims"]


class ClaimStore(Protocol):
    def update_many(self, updates: Sequence[Update]) -> Any: ...

    def delete_many(self, items: Sequence[tuple[str, str]]) -> Any: ...


@dataclass(frozen=True, slots=True)
class Release:
    """What a deleted pod leaves to do on one of its claims: drop ``pod_uid`` from its
    reservedFor (``reserved``), then delete it (``owned``: made for the pod)."""

    claim_key: str
    claim_uid: str | None
    pod_uid: str
    reserved: bool
    owned: bool
    #: the claim as the informer held it: the reservation's first write goes against it
    cached: Mapping[str, Any] | None = field(default=None, compare=False)


def pod_releases(pod: Pod, dra: DraListers) -> list[Release]:
    """The releases of ``pod``'s claims, as the listers know them when its delete is seen."""
    claims, _ = pod_claims(pod, dra)
    return [
        Release(
            claim.key,
            claim.meta.uid or None,
            pod.uid,
            any(ref.uid == pod.uid for ref in claim.reserved_for),
            is_for_pod(pod, claim)
            and any(ref.controller and ref.kind == "Pod" for ref in claim.meta.owner_references),
            claim.raw,
        )
        for claim in claims
    ]


def release_pod_claims(store: ClaimStore, pod: Pod, dra: DraListers) -> None:
    release_claims(store, pod_releases(pod, dra))


def release_claims(store: ClaimStore, releases: Sequence[Release]) -> None:
    """Carry out ``releases`` (of any number of deleted pods) in two writes: every
    reservation first (one compare-and-set per claim against the informer's copy, all
    claims in one round trip, read only where the copy was stale; a claim's
    reservations of several pods go in one edit), then the
    deletes of the claims made for the pods (upstream syncClaim drops the reservation
    before the garbage collector deletes the claim: a watcher sees the update first)."""
    unreserve: dict[tuple[str, str | None], list[str]] = {}
    cached: dict[tuple[str, str | None], Mapping[str, Any] | None] = {}
    for r in releases:
        if r.reserved:
            unreserve.setdefault((r.claim_key, r.claim_uid), []).append(r.pod_uid)
            cached[(r.claim_key, r.claim_uid)] = r.cached
    if unreserve:
        # upstream syncClaim: the reservation goes first (an update the scheduler's
        # queueing hints see: pods waiting for these devices are retried) ...
        store.update_many(
            [
                Update(
                    "ResourceClaim",
                    key,
                    partial(_unreserve, frozenset(uids)),
                    uid,
                    cached[(key, uid)],
                )
                for (key, uid), uids in unreserve.items()
            ]
        )
    owned = list(dict.fromkeys(r.claim_key for r in releases if r.owned))
    if owned:
        # ... then the claim made for the pod (the garbage collector's delete)
        store.delete_many([("ResourceClaim", key) for key in owned])


def _unreserve(uids: frozenset[str], stored: dict[str, Any]) -> dict[str, Any] | None:
    """The stored claim with ``uids`` dropped from its ``reservedFor`` (None: not there);
    reserved by nobody, the claim is deallocated (its allocation and finalizer dropped),
    so its devices are free again. One read and one compare-and-set: the claim's uid
    guards against a claim re-created under the same name, as upstream's UID precondition."""
    doc = copy.deepcopy(stored)
    status = doc.setdefault("status", {})
    before = status.get("reservedFor") or []
    refs = [r for r in before if r.get("uid") not in uids]
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
