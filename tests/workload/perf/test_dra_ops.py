"""scheduler_perf's DRA config (examples/scheduler_perf/dra-config.yaml): createResourceDriver
publishes a slice per scheduler-perf-dra-* node, pods from the claim template get their
own claims, and every claim ends allocated on its pod's node, one device each."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cluster_sched.config.load import default_config
from cluster_sched.scheduler.coordinator import DEFAULT_BATCH_SIZE, Coordinator
from cluster_sched.store.store import Store
from cluster_sched.workload.cli_args import add_executor_options
from cluster_sched.workload.perf.command import run_workload
from cluster_sched.workload.perf.config import load_test_cases, select_workloads

CONFIG = Path(__file__).resolve().parents[3] / "examples" / "scheduler_perf" / "dra-config.yaml"


def _args(redis_url: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_executor_options(parser)
    values = {**vars(parser.parse_args([])), "redis": redis_url, "batch_size": DEFAULT_BATCH_SIZE}
    return argparse.Namespace(**{**values, "seed": 1, "timeout": 120.0})


def test_scheduling_with_resource_claim_template(redis_url: str) -> None:
    (planned,) = select_workloads(
        load_test_cases(CONFIG), "SchedulingWithResourceClaimTemplate", "fast", str(CONFIG)
    )
    seen: dict[str, Any] = {}

    def inspect(store: Store, coord: Coordinator) -> None:
        seen["slices"] = store.list("ResourceSlice")
        seen["claims"] = store.list("ResourceClaim")
        seen["pods"] = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in store.list("Pod")
        }

    outcome = run_workload(planned, default_config(), _args(redis_url), inspect)
    assert outcome.failures == []
    (slice_,) = seen["slices"]
    node = slice_["spec"]["nodeName"]
    assert node.startswith("scheduler-perf-dra-") and len(slice_["spec"]["devices"]) == 10
    claims = seen["claims"]
    assert len(claims) == 10
    devices = set()
    for claim in claims:
        (user,) = claim["status"]["reservedFor"]
        pod = seen["pods"][f"{claim['metadata']['namespace']}/{user['name']}"]
        assert pod["spec"]["nodeName"] == node
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        devices.add(result["device"])
        statuses = pod["status"]["resourceClaimStatuses"]
        assert statuses == [{"name": "resource", "resourceClaimName": claim["metadata"]["name"]}]
    assert len(devices) == 10


def _steady_config(tmp_path: Path, init_claims: int) -> Path:
    """The shipped SteadyStateClusterResourceClaimTemplate at two nodes of ten devices."""
    text = CONFIG.read_text().replace("templates/dra/", f"{CONFIG.parent}/templates/dra/")
    text = text.replace(
        "  - name: empty_100nodes\n    params:\n      nodesWithDRA: 100\n"
        "      nodesWithoutDRA: 0\n      initClaims: 0\n",
        "  - name: tiny\n    params:\n      nodesWithDRA: 2\n"
        f"      nodesWithoutDRA: 0\n      initClaims: {init_claims}\n",
    ).replace("duration: 10s", "duration: 3s")
    path = tmp_path / "dra-config.yaml"
    path.write_text(text)
    return path


def test_alloc_resource_claims_then_a_steady_state(redis_url: str, tmp_path: Path) -> None:
    """allocResourceClaims allocates the 10 init claims out of band (one device each,
    none twice, no pod reserved); the steady state then fills the 10 devices left with
    10 pods, deletes them once all are scheduled and starts again, so more than 10 pods
    get scheduled in total and the devices they hold never overlap the init claims'."""
    path = _steady_config(tmp_path, 10)
    (planned,) = select_workloads(
        load_test_cases(path), "SteadyStateClusterResourceClaimTemplate", "tiny", str(path)
    )
    seen: dict[str, Any] = {}

    def inspect(store: Store, coord: Coordinator) -> None:
        seen["claims"] = store.list("ResourceClaim")
        seen["pods"] = store.list("Pod")

    outcome = run_workload(planned, default_config(), _args(redis_url), inspect)
    assert outcome.failures == []
    (throughput,) = [i for i in outcome.items if i.labels["Metric"] == "SchedulingThroughput"]
    assert throughput.data["Average"] > 0
    init = [c for c in seen["claims"] if c["metadata"]["namespace"] == "init"]
    assert len(init) == 10
    held = {
        (r["pool"], r["device"])
        for c in init
        for r in c["status"]["allocation"]["devices"]["results"]
    }
    assert len(held) == 10
    assert all("reservedFor" not in c["status"] for c in init)
    test_pods = [p for p in seen["pods"] if p["metadata"]["namespace"] == "test"]
    assert len(test_pods) == 10  # the batch alive at the end
    created = max(int(p["metadata"]["name"].rsplit("-", 1)[1]) for p in test_pods)
    assert created >= 10  # at least one batch was scheduled, deleted and replaced
    live = [c for c in seen["claims"] if c["metadata"]["namespace"] == "test"]
    for c in live:
        allocation = (c.get("status") or {}).get("allocation")
        if allocation:
            (r,) = allocation["devices"]["results"]
            assert (r["pool"], r["device"]) not in held


def test_alloc_resource_claims_fails_when_a_claim_fits_nowhere(
    redis_url: str, tmp_path: Path
) -> None:
    path = _steady_config(tmp_path, 21)  # two nodes of ten devices
    (planned,) = select_workloads(
        load_test_cases(path), "SteadyStateClusterResourceClaimTemplate", "tiny", str(path)
    )
    outcome = run_workload(planned, default_config(), _args(redis_url))
    assert len(outcome.failures) == 1
    assert "Could not allocate claim 20 out of 21" in outcome.failures[0]


def test_claims_shared_by_five_pods(redis_url: str) -> None:
    """SchedulingWithResourceClaim: test-claim-N serves pods 5N..5N+4, all on its node."""
    (planned,) = select_workloads(
        load_test_cases(CONFIG), "SchedulingWithResourceClaim", "fast", str(CONFIG)
    )
    seen: dict[str, Any] = {}

    def inspect(store: Store, coord: Coordinator) -> None:
        seen["claims"] = store.list("ResourceClaim")
        seen["pods"] = {p["metadata"]["name"]: p for p in store.list("Pod")}

    outcome = run_workload(planned, default_config(), _args(redis_url), inspect)
    assert outcome.failures == []
    assert len(seen["claims"]) == 2
    for claim in seen["claims"]:
        n = int(claim["metadata"]["name"].rsplit("-", 1)[1])
        users = sorted(r["name"] for r in claim["status"]["reservedFor"])
        assert users == sorted(f"test-dra-{i}" for i in range(5 * n, 5 * n + 5))
        nodes = {seen["pods"][u]["spec"]["nodeName"] for u in users}
        assert len(nodes) == 1 and next(iter(nodes)).startswith("scheduler-perf-dra-")
