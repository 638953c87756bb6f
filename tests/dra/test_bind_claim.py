"""PreBind's claim write (upstream bindClaim): one compare-and-set against the claim as
the informer holds it, so a current copy costs no read, and a stale one never
overwrites what was written since (the claim is read and decided again)."""

from __future__ import annotations

from typing import Any

import redis

from cluster_sched.api.manifest import parse_object
from cluster_sched.dra.objects import CLAIM_FINALIZER, AllocationResult, DeviceResult
from cluster_sched.dra.wire import bind_claim
from cluster_sched.store.store import Store
from tests.dra.dra_fixtures import claim

MINE = AllocationResult((DeviceResult("req-0", "d", "p", "dev-1"),))
OTHER = {"devices": {"results": [{"request": "req-0", "driver": "d", "pool": "p", "device": "x"}]}}


def _pod(name: str, uid: str) -> Any:
    return parse_object({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    })  # fmt: skip


def _reads(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return sum(int((stats.get(f"cmdstat_{c}") or {}).get("calls", 0)) for c in ("hget", "hmget"))


def test_a_current_claim_is_allocated_and_reserved_without_a_read(
    redis_client: redis.Redis,
) -> None:
    store = Store(redis_client, prefix="{bind-claim-current}")
    store.apply(claim("c"))
    seen = store.get("ResourceClaim", "default/c")
    before = _reads(redis_client)
    assert bind_claim(store, "default/c", MINE, _pod("p", "u1"), seen) == ""
    # apply.lua's own HGET of the stored version is the write's; nothing else read it
    assert _reads(redis_client) - before == 1
    after = store.get("ResourceClaim", "default/c") or {}
    assert after["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "u1"}]
    assert after["status"]["allocation"]["devices"]["results"][0]["device"] == "dev-1"
    assert CLAIM_FINALIZER in after["metadata"]["finalizers"]


def test_a_stale_copy_never_overwrites_an_allocation_made_since(
    redis_client: redis.Redis,
) -> None:
    store = Store(redis_client, prefix="{bind-claim-stale}")
    store.apply(claim("c"))
    seen = store.get("ResourceClaim", "default/c")
    elsewhere = claim("c")
    elsewhere["status"] = {"allocation": OTHER}
    store.apply(elsewhere)
    problem = bind_claim(store, "default/c", MINE, _pod("p", "u1"), seen)
    assert problem == "claim default/c got allocated elsewhere in the meantime"
    after = store.get("ResourceClaim", "default/c") or {}
    assert after["status"] == {"allocation": OTHER}


def test_a_stale_copy_still_adds_the_reservation_to_an_allocated_claim(
    redis_client: redis.Redis,
) -> None:
    """Only reserving (the claim was allocated already): the reservation another pod
    added since stays, the new one is appended."""
    store = Store(redis_client, prefix="{bind-claim-reserve}")
    shared = claim("c")
    shared["status"] = {"allocation": OTHER}
    store.apply(shared)
    seen = store.get("ResourceClaim", "default/c")
    shared["status"]["reservedFor"] = [{"resource": "pods", "name": "q", "uid": "u0"}]
    store.apply(shared)
    assert bind_claim(store, "default/c", None, _pod("p", "u1"), seen) == ""
    after = store.get("ResourceClaim", "default/c") or {}
    assert [r["uid"] for r in after["status"]["reservedFor"]] == ["u0", "u1"]


def test_a_claim_deleted_since_is_reported(redis_client: redis.Redis) -> None:
    store = Store(redis_client, prefix="{bind-claim-gone}")
    store.apply(claim("c"))
    seen = store.get("ResourceClaim", "default/c")
    store.delete("ResourceClaim", "default/c")
    problem = bind_claim(store, "default/c", MINE, _pod("p", "u1"), seen)
    assert problem == "claim default/c got deleted in the meantime"
    assert store.get("ResourceClaim", "default/c") is None
