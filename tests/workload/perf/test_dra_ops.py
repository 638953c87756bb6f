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
