"""Pods with ResourceClaims on node shards: a pod whose claim has several requests (which
the shards' free-device column cannot decide) is placed, and its devices allocated, as
the serial loop places and allocates it, and so are one-request pods beside it."""

from __future__ import annotations

from typing import Any

import redis

from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.coordinator import Coordinator
from tests.dra.dra_fixtures import claim, device, device_class, node, request, resource_slice
from tests.scheduler.shards.shard_runs import run_outcome

MODEL_A = 'device.attributes["driver-a"].model == "a"'
MODEL_B = 'device.attributes["driver-a"].model == "b"'


def _pod(name: str, claim_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "r"}]}}],
            "resourceClaims": [{"name": "r", "resourceClaimName": claim_name}],
        },
    }


def _workload() -> list[dict[str, Any]]:
    """Six nodes; only n3 and n5 have a model-a and a model-b device both free, n1 has two
    of model a. ``multi`` wants one of each (two requests), ``pair`` two of model a (one
    request, count 2), ``one`` one device of any model."""
    models = {"n0": "a", "n1": "aa", "n2": "b", "n3": "ab", "n4": "", "n5": "ba"}
    docs: list[dict[str, Any]] = [device_class()]
    for name, kinds in models.items():
        docs.append(node(name))
        devices = [device(f"{name}-d{i}", model=m) for i, m in enumerate(kinds)]
        docs.append(resource_slice(f"{name}-slice", devices, node=name, pool=name))
    docs += [
        claim("multi", request("req-a", "class-a", 1, MODEL_A), request("req-b", "class-a", 1, MODEL_B)),
        claim("multi-2", request("req-a", "class-a", 1, MODEL_A), request("req-b", "class-a", 1, MODEL_B)),
        claim("pair", request("req-0", "class-a", 2, MODEL_A)),
        claim("one"),
    ]  # fmt: skip
    docs += [_pod("p-multi", "multi"), _pod("p-multi-2", "multi-2")]
    docs += [_pod("p-pair", "pair"), _pod("p-one", "one")]
    return docs


def _allocations(into: dict[str, Any]) -> Any:
    def inspect(coord: Coordinator) -> None:
        for c in coord.store.list("ResourceClaim"):
            results = ((c.get("status") or {}).get("allocation") or {}).get("devices", {})
            into[c["metadata"]["name"]] = sorted(
                (r["request"], r["device"]) for r in results.get("results", [])
            )

    return inspect


def test_multi_request_claims_on_two_shards_are_placed_as_serially(
    redis_client: redis.Redis,
) -> None:
    docs = _workload()
    serial_claims: dict[str, Any] = {}
    serial = run_outcome(
        redis_client, docs, ExecutorOptions("local"), 4, _allocations(serial_claims)
    )
    sharded_claims: dict[str, Any] = {}
    options = ExecutorOptions("shards", shards=2, shard_dispatch="shards")
    sharded = run_outcome(redis_client, docs, options, 4, _allocations(sharded_claims))
    placements = serial[0]
    # the serial loop places every pod, each multi-request pod on a node with both models
    assert {placements["p-multi"], placements["p-multi-2"]} == {"n3", "n5"}
    assert placements["p-pair"] == "n1"
    assert placements["p-one"] != ""
    assert serial_claims["multi"][0][0] == "req-a" and len(serial_claims["multi"]) == 2
    # two shards: the same placements, the same devices, and no FailedScheduling
    assert sharded[0] == placements
    assert sharded_claims == serial_claims
    assert sharded[1] == serial[1]
