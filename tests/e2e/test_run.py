"""``cluster-sched run`` end to end, in-process through ``cluster_sched.cli.main``.

Placements are judged by the independent checker (tests/workload/checker.py), never by
the scheduler's own accounting.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import redis

from cluster_sched.cli import main
from cluster_sched.store.store import Store
from cluster_sched.workload.spec import load_workload
from tests.workload.checker import Cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    rc = main(["run", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def outputs(directory: Path) -> tuple[dict[str, str], dict[str, Any]]:
    placements = json.loads((directory / "placements.json").read_text())
    summary = json.loads((directory / "summary.json").read_text())
    return placements, summary


@pytest.mark.slow
def test_scheduling_basic_example(tmp_path: Path, capsys: Any) -> None:
    """The full SchedulingBasic example: 5,000 nodes, 11,000 pods (about 20-30 s)."""
    path = EXAMPLES / "scheduling-basic.yaml"
    rc, out, err = run(capsys, str(path), "--output", str(tmp_path), "--quiet", "--seed", "1")
    assert rc == 0, err
    placements, summary = outputs(tmp_path)

    cluster = Cluster.from_workload(load_workload(path))
    assert len(cluster.pods) == 11_000
    assert set(placements) == set(cluster.pods), "every pod is placed"
    assert cluster.check(placements) == []
    assert summary["scheduled"] == 11_000
    assert summary["unschedulable"] == 0
    assert summary["preempted"] == 0
    assert summary["throughput"] > 0
    assert set(summary["latency_ms"]) >= {"p50", "p90", "p99"}
    assert (
        0
        <= summary["latency_ms"]["p50"]
        <= summary["latency_ms"]["p90"]
        <= summary["latency_ms"]["p99"]
    )
    assert summary["invalid"] == []
    # Spread, as LeastAllocated + BalancedAllocation would: no node far above average.
    per_node: dict[str, int] = {}
    for node in placements.values():
        per_node[node] = per_node.get(node, 0) + 1
    assert len(per_node) == 5000
    assert max(per_node.values()) <= 4
    assert "scheduled      11000" in out


# Messages are upstream's FitError grammar for the default profile (the preemption
# part is DefaultPreemption's PostFilter message).
NOT_HELPFUL = "no new claims to deallocate, preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling."
SELECTOR_MISS = (
    "0/8 nodes are available: 2 node(s) had untolerated taint(s), 2 node(s) were unschedulable, "
    "4 node(s) didn't match Pod's node affinity/selector. " + NOT_HELPFUL
)
# A request above a node's whole allocatable is UnschedulableAndUnresolvable (upstream
# Fit), so preemption is not helpful anywhere.
TOO_BIG = (
    "0/8 nodes are available: 2 node(s) had untolerated taint(s), 2 node(s) were unschedulable, "
    "4 Insufficient cpu. " + NOT_HELPFUL
)
EXPECTED_FAILURES = {"gpu-greedy": SELECTOR_MISS, "nvme": SELECTOR_MISS, "huge": TOO_BIG}


def test_constraints_example_places_exactly_what_fits(
    tmp_path: Path, capsys: Any, redis_url: str, redis_client: redis.Redis
) -> None:
    path = EXAMPLES / "constraints.yaml"
    rc, _out, err = run(
        capsys, str(path), "--output", str(tmp_path), "--quiet", "--redis", redis_url
    )
    assert rc == 0, err
    placements, summary = outputs(tmp_path)

    cluster = Cluster.from_workload(load_workload(path))
    candidates = {key: cluster.candidate_nodes(key) for key in cluster.pods}
    fitting = {key for key, nodes in candidates.items() if nodes}
    # The example is built so that no pod's fate depends on another's placement.
    assert cluster.uncontested(fitting) == []
    assert len(fitting) == 22 and len(cluster.pods) == 30

    assert set(placements) == fitting
    for key, node in placements.items():
        assert node in candidates[key], key
    assert cluster.check(placements) == []
    assert summary["scheduled"] == 22
    assert summary["unschedulable"] == 8

    # Each unschedulable pod has exactly one FailedScheduling event naming the reasons
    # (its own status write does not requeue it, so it is tried once).
    events = Store(redis_client).events(reason="FailedScheduling")
    by_pod: dict[str, list[str]] = {}
    for e in events:
        by_pod.setdefault(e["key"], []).append(e["message"])
    assert set(by_pod) == set(cluster.pods) - fitting
    for key, messages in by_pod.items():
        group = key.split("/")[1].rsplit("-", 1)[0]
        assert messages == [EXPECTED_FAILURES[group]], key
    scheduled_events = Store(redis_client).events(reason="Scheduled")
    assert {e["key"] for e in scheduled_events} == fitting


PLAIN = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: 1 core}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2}
spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}
"""


def test_malformed_pod_in_plain_yaml_is_reported_and_the_rest_runs(
    tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(textwrap.dedent(PLAIN))
    out_dir = tmp_path / "out"
    rc, out, err = run(capsys, str(path), "--output", str(out_dir), "--quiet")
    assert rc == 0, err
    placements, summary = outputs(out_dir)
    assert set(placements) == {"default/web-1", "default/web-2"}
    (line,) = summary["invalid"]
    assert "Pod default/broken" in line
    assert "field spec.containers[0].resources.requests.cpu" in line
    assert f"skipped invalid object: {line}" in out
    assert summary["scheduled"] == 2
    assert Cluster.from_workload(load_workload(path)).check(placements) == []


def test_unreachable_redis_is_one_clear_line(capsys: Any) -> None:
    rc, out, err = run(
        capsys, str(EXAMPLES / "small-basic.yaml"), "--quiet", "--redis", "redis://127.0.0.1:1"
    )
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "127.0.0.1:1" in lines[0]
    assert "Traceback" not in err and "Traceback" not in out


def test_invalid_workload_is_one_clear_line(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        (EXAMPLES / "small-basic.yaml")
        .read_text()
        .replace("requests: {cpu: 100m", "requests: {cpu: lots")
    )
    rc, _out, err = run(capsys, str(path), "--quiet")
    assert rc == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {path}: ")
    assert "field spec.podGroups[0].template.spec.containers[0].resources.requests.cpu" in line


@pytest.mark.parametrize("example", ["constraints.yaml", "small-basic.yaml"])
def test_sharded_placements_equal_local_placements(
    tmp_path: Path, capsys: Any, example: str
) -> None:
    """DESIGN invariant: the same workload and seed place pods identically whether
    Filter/Score run on the coordinator's table or on node shards (in-process here)."""
    path = str(EXAMPLES / example)
    runs = {"local": ["--executor", "local"], "shards": ["--executor", "shards", "--shards", "3"]}
    placements: dict[str, dict[str, str]] = {}
    for name, flags in runs.items():
        out_dir = tmp_path / name
        rc, _out, err = run(
            capsys, path, "--output", str(out_dir), "--quiet", "--seed", "11", *flags
        )
        assert rc == 0, err
        placements[name] = outputs(out_dir)[0]
    assert placements["shards"] == placements["local"]
    assert Cluster.from_workload(load_workload(path)).check(placements["local"]) == []
