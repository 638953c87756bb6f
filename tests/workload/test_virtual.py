"""--clock virtual: the real scheduler over simulated time, repeatable for a seed, with
the queue's backoff and flush timers firing at their simulated times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cluster_sched.clock import VirtualClock
from cluster_sched.config.load import load_config
from cluster_sched.errors import UsageError
from cluster_sched.features import POP_FROM_BACKOFF_Q, parse_feature_gates
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.scheduler.assembly import new_scheduler
from cluster_sched.store.store import Store
from cluster_sched.workload.runner import RunOptions, run_evaluation
from cluster_sched.workload.spec import load_workload
from cluster_sched.workload.virtual import VirtualRun
from cluster_sched.workload.virtual_binding import InlineBindingExecutor

CHURN = """
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {name: churn}
spec:
  nodeGroups:
  - count: 6
    template:
      apiVersion: v1
      kind: Node
      metadata: {name: node}
      status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
    labels:
      topology.kubernetes.io/zone: [zone-a, zone-b]
  podGroups:
  - name: jobs
    count: 160
    lifetime: {exponential: {mean: 15m}}
    arrival: {poisson: {count: 160, over: 1h}}
    template:
      apiVersion: v1
      kind: Pod
      metadata: {name: job, namespace: default}
      spec:
        containers:
        - name: main
          image: pause
          resources: {requests: {cpu: 700m, memory: 1Gi}}
"""

#: Wall-clock figures: how long the machine took, not what the scheduler decided.
#: measurements of the machine, not decisions: attempt wall time, peak memory
WALL_KEYS = ("attempt_latency_ms", "memory", "process_cpu_us_per_pod", "simulation_speed")


def _decisions(summary: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in summary.items() if k not in WALL_KEYS}
    out["virtual_time"] = {k: v for k, v in out["virtual_time"].items() if k != "wall_seconds"}
    return out


def _run(tmp_path: Path, url: str, seed: int, prefix: str) -> dict[str, Any]:
    workload = tmp_path / "churn.yaml"
    workload.write_text(CHURN)
    result = run_evaluation(
        RunOptions(
            workload=str(workload),
            seed=seed,
            quiet=True,
            redis=url,
            prefix=prefix,
            clock="virtual",
            report=False,
        )
    )
    return result.summary


def test_one_seed_gives_one_history(tmp_path: Path, redis_server: RedisServer) -> None:
    first = _run(tmp_path, redis_server.url, 5, "{vt-a}")
    second = _run(tmp_path, redis_server.url, 5, "{vt-b}")
    other = _run(tmp_path, redis_server.url, 6, "{vt-c}")
    vt = first["virtual_time"]
    assert vt["arrivals"] == 160 and vt["completions"] == 160
    assert first["scheduled"] == 160
    # Contention: some pods waited for others to complete, so the timers had work.
    assert first["over_time"]["pending_max"] > 0
    assert json.dumps(_decisions(first), sort_keys=True) == json.dumps(
        _decisions(second), sort_keys=True
    )
    assert other["virtual_time"]["history_sha256"] != vt["history_sha256"]


def test_virtual_clock_needs_the_in_process_scheduler(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--clock virtual"):
        run_evaluation(RunOptions(workload="x.yaml", clock="virtual", executor="ray"))


TIMERS_TRACE = [
    # one 4-cpu node: A holds 3 cpu until t=100.5; B waits for it; C never fits
    {"name": "a", "arrival": 0, "lifetime": 100.5, "requests": {"cpu": "3"}},
    {"name": "c", "arrival": 10, "requests": {"cpu": "8"}},
    {"name": "b", "arrival": 100, "lifetime": 50, "requests": {"cpu": "3"}},
    {"name": "d", "arrival": 1000, "requests": {"cpu": "100m"}},
]
TIMERS_WORKLOAD = """
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {name: timers}
spec:
  nodes:
  - apiVersion: v1
    kind: Node
    metadata: {name: only, labels: {kubernetes.io/hostname: only}}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
  podGroups:
  - name: trace
    trace: timers.jsonl
"""


@pytest.mark.parametrize(
    ("gates", "b_pops"),
    [
        # B fails at 100 (1 s backoff, until 101); A's completion at 100.5 moves it to
        # backoffQ, and the backoff flush tick at 101 sends it to activeQ.
        (f"{POP_FROM_BACKOFF_Q}=false", [100.0, 101.0]),
        # v1.35's default: activeQ is empty at 100.5, so B is popped from backoffQ at once.
        (None, [100.0, 100.5]),
    ],
    ids=["PopFromBackoffQ-off", "v1.35-default"],
)
def test_backoff_and_flush_timings_on_the_virtual_clock(
    tmp_path: Path, redis_server: RedisServer, gates: str | None, b_pops: list[float]
) -> None:
    (tmp_path / "timers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TIMERS_TRACE))
    path = tmp_path / "timers.yaml"
    path.write_text(TIMERS_WORKLOAD)
    client = connect(redis_server.url)
    prefix = f"{{vt-timers-{gates is None}}}"
    store = Store(client, prefix=prefix)
    clock = VirtualClock()
    coord = new_scheduler(
        store,
        client,
        load_config(None),
        clock=clock,
        seed=1,
        prefix=prefix,
        binding_executor=InlineBindingExecutor,
        features=parse_feature_gates(gates),
    )
    pops: dict[str, list[float]] = {}
    schedule_one = coord.schedule_one

    def recording(info: Any, cycle: int) -> None:
        pops.setdefault(info.pod_key.split("/")[1], []).append(clock.now() - start)
        schedule_one(info, cycle)

    coord.schedule_one = recording  # type: ignore[method-assign]
    start = clock.now()
    try:
        stats = VirtualRun(coord, store, clock, load_workload(path), seed=1).run()
    finally:
        coord.close()
    assert pops["a"] == [0.0]
    assert pops["d"] == [1000.0]
    assert pops["b"] == b_pops
    # C: A's and B's completions (100.5, 151) move it; then it stays in the pool until
    # the leftover flush (ticks every 30 s) finds it there more than 300 s: 480, 810.
    assert pops["c"][:2] == [10.0, 100.5]
    assert [t for t in pops["c"] if t > 151] == [480.0, 810.0]
    assert stats.completions == 2
    assert stats.end - start == 1000.0
