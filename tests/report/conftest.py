"""The report tests' shared run: ``mixed_run``, one evaluation per test session of this
package, through ``run_evaluation`` against the session's real redis-server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.store.store import Store
from cluster_sched.workload.runner import RunOptions, RunResult, run_evaluation
from tests.report.gpu_trace import write_gpu_trace
from tests.report.mixed import MIXED_WORKLOAD, MOST_ALLOCATED, MixedRun


@pytest.fixture(scope="package")
def mixed_run(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MixedRun]:
    client = connect(redis_server.url)
    client.flushall()
    root = tmp_path_factory.mktemp("report")
    workload = root / "mixed.yaml"
    workload.write_text(MIXED_WORKLOAD)
    config = root / "most-allocated.yaml"
    config.write_text(MOST_ALLOCATED)
    out = root / "out"
    result = run_evaluation(
        RunOptions(
            workload=str(workload),
            config=str(config),
            seed=7,
            output=str(out),
            quiet=True,
            redis=redis_server.url,
        )
    )
    events: dict[str, list[str]] = {}
    try:
        for e in Store(client).events(reason="FailedScheduling"):
            events.setdefault(e["key"], []).append(e["message"])
    finally:
        client.close()
    yield MixedRun(
        workload=workload,
        config=config,
        out=out,
        result=result,
        placements=json.loads((out / "placements.json").read_text()),
        summary=json.loads((out / "summary.json").read_text()),
        failed_scheduling=events,
    )


@pytest.fixture(scope="package")
def gpu_trace_run(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[RunResult, Path]:
    """The GPU-share trace (``tests.report.gpu_trace``) replayed in virtual time, with
    its report in the returned directory."""
    root = tmp_path_factory.mktemp("gpu-trace")
    out = root / "out"
    result = run_evaluation(
        RunOptions(
            workload=str(write_gpu_trace(root)),
            seed=3,
            output=str(out),
            quiet=True,
            redis=redis_server.url,
            prefix="{gpu}",
            clock="virtual",
        )
    )
    return result, out
