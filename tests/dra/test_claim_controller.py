"""A deleted pod's claims, as kube-controller-manager handles them: a claim the pod owns
is deleted; a shared claim loses the pod's reservation and, reserved by nobody, its
allocation (so its devices are free again)."""

from __future__ import annotations

from typing import Any

import redis

from cluster_sched.api.manifest import parse_object
from cluster_sched.dra.claim_controller import pod_releases, release_claims, release_pod_claims
from cluster_sched.dra.listers import DraListers
from cluster_sched.store.store import Store
from tests.dra.dra_fixtures import claim

ALLOCATION = {
    "devices": {"results": [{"request": "req-0", "driver": "d", "pool": "p", "device": "x"}]}
}


def _pod(name: str, uid: str, entries: list[dict[str, str]], statuses: list[Any]) -> Any:
    return parse_object({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": entries},
        "status": {"resourceClaimStatuses": statuses},
    })  # fmt: skip


def test_pod_delete_releases_its_claims(redis_client: redis.Redis) -> None:
    store = Store(redis_client, prefix="{dra-ctl}")
    owned = claim("p1-gpu-abcde")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": "u1", "controller": True}
    ]
    owned["status"] = {
        "allocation": ALLOCATION,
        "reservedFor": [{"resource": "pods", "name": "p1", "uid": "u1"}],
    }
    shared = claim("shared")
    shared["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    shared["status"] = {
        "allocation": ALLOCATION,
        "reservedFor": [
            {"resource": "pods", "name": "p1", "uid": "u1"},
            {"resource": "pods", "name": "p2", "uid": "u2"},
        ],
    }
    dra = DraListers()
    for doc in (owned, shared):
        store.apply(doc)
        dra.set(parse_object(store.get("ResourceClaim", f"default/{doc['metadata']['name']}")))
    p1 = _pod("p1", "u1", [{"name": "gpu", "resourceClaimTemplateName": "t"}, {"name": "s", "resourceClaimName": "shared"}],
              [{"name": "gpu", "resourceClaimName": "p1-gpu-abcde"}])  # fmt: skip
    release_pod_claims(store, p1, dra)
    assert store.get("ResourceClaim", "default/p1-gpu-abcde") is None
    after = store.get("ResourceClaim", "default/shared")
    assert after is not None
    assert [r["uid"] for r in after["status"]["reservedFor"]] == ["u2"]
    assert after["status"]["allocation"] == ALLOCATION

    dra.set(parse_object(after))
    p2 = _pod("p2", "u2", [{"name": "s", "resourceClaimName": "shared"}], [])
    release_pod_claims(store, p2, dra)
    last = store.get("ResourceClaim", "default/shared")
    assert last is not None
    assert "allocation" not in last["status"] and "reservedFor" not in last["status"]
    assert "finalizers" not in last["metadata"]


def test_release_leaves_a_claim_recreated_under_the_same_name(redis_client: redis.Redis) -> None:
    """The reservation is dropped from the claim the pod used (its uid), not from a claim
    made again under that name since (upstream's UID precondition on the update)."""
    store = Store(redis_client, prefix="{dra-ctl-uid}")
    shared = claim("shared")
    shared["status"] = {
        "allocation": ALLOCATION,
        "reservedFor": [{"resource": "pods", "name": "p1", "uid": "u1"}],
    }
    store.apply(shared)
    dra = DraListers()
    dra.set(parse_object(store.get("ResourceClaim", "default/shared")))
    store.delete("ResourceClaim", "default/shared")
    shared["metadata"]["uid"] = "uid-shared-2"
    store.apply(shared)  # re-created: another uid, the same name
    p1 = _pod("p1", "u1", [{"name": "s", "resourceClaimName": "shared"}], [])
    release_pod_claims(store, p1, dra)
    after = store.get("ResourceClaim", "default/shared")
    assert after is not None
    assert [r["uid"] for r in after["status"]["reservedFor"]] == ["u1"]
    assert after["status"]["allocation"] == ALLOCATION


def test_pods_deleted_together_release_their_claims_in_one_pass(redis_client: redis.Redis) -> None:
    """Two pods of one informer batch: a claim both reserved loses both reservations in
    one update (so it is deallocated once), and every reservation is dropped before the
    claims made for the pods are deleted (syncClaim before the garbage collector)."""
    store = Store(redis_client, prefix="{dra-ctl-batch}")
    pods = [("p1", "u1"), ("p2", "u2")]
    shared = claim("shared")
    shared["status"] = {
        "allocation": ALLOCATION,
        "reservedFor": [{"resource": "pods", "name": n, "uid": u} for n, u in pods],
    }
    docs = [shared]
    for name, uid in pods:
        own = claim(f"{name}-gpu")
        own["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid, "controller": True}
        ]
        own["status"] = {
            "allocation": ALLOCATION,
            "reservedFor": [{"resource": "pods", "name": name, "uid": uid}],
        }
        docs.append(own)
    dra = DraListers()
    for doc in docs:
        store.apply(doc)
        dra.set(parse_object(store.get("ResourceClaim", f"default/{doc['metadata']['name']}")))
    since = store.last_event_id()
    releases = [
        r
        for name, uid in pods
        for r in pod_releases(
            _pod(
                name,
                uid,
                [
                    {"name": "gpu", "resourceClaimTemplateName": "t"},
                    {"name": "s", "resourceClaimName": "shared"},
                ],
                [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}],
            ),
            dra,
        )
    ]
    release_claims(store, releases)
    seen = [(ev.type.value, ev.key) for ev in store.read_events(since)]
    assert sorted(seen[:3]) == [
        ("MODIFIED", "default/p1-gpu"),
        ("MODIFIED", "default/p2-gpu"),
        ("MODIFIED", "default/shared"),
    ]
    assert seen[3:] == [("DELETED", "default/p1-gpu"), ("DELETED", "default/p2-gpu")]
    after = store.get("ResourceClaim", "default/shared")
    assert after is not None
    assert "allocation" not in after["status"] and "reservedFor" not in after["status"]
