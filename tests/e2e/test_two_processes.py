"""Two processes share one store and queue: ``cluster-sched serve`` schedules while
``cluster-sched apply`` processes (two at a time) keep adding pods.

Every pod must be bound exactly once: one Scheduled event each, spec.nodeName written
once and never changed (read back from the watch stream), no binding conflicts, nothing
left pending, and the independent checker finds no over-commit.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis
import yaml

from cluster_sched.store.store import Store
from cluster_sched.workload.spec import Workload, load_workload
from tests.workload.checker import Cluster

NODES = 20
BATCHES = 6
PODS_PER_BATCH = 40
#: Guards against a hung subprocess; never a performance assertion. 240 s (the test
#: takes ~11 s on a quiet 2-core machine): at 120 s it ran out in a two-worker suite run
#: on a machine at load 15-19, with every process still making progress.
DEADLINE = 240.0


def cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "cluster_sched.cli", *argv]


def node_doc(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "30"}},
    }


def pod_doc(batch: int, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"b{batch}-pod-{i}",
            "namespace": "default",
            "labels": {"batch": str(batch)},
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}},
                }
            ]
        },
    }


def wait_for_line(proc: subprocess.Popen[str], deadline: float) -> str:
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if sel.select(timeout=0.2):
            line = proc.stdout.readline()
            if line:
                return line
        if proc.poll() is not None:
            break
    stderr = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"serve did not start (rc={proc.poll()}): {stderr}")


def all_events(store: Store) -> list[Any]:
    out: list[Any] = []
    last = "0-0"
    while True:
        batch = store.read_events(last, count=5000)
        if not batch:
            return out
        out += batch
        last = batch[-1].id


def test_serve_and_apply_share_one_queue(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    store = Store(redis_client)
    files: list[Path] = []
    nodes_file = tmp_path / "nodes.yaml"
    nodes_file.write_text(yaml.safe_dump_all([node_doc(i) for i in range(NODES)]))
    for b in range(BATCHES):
        path = tmp_path / f"pods-{b}.yaml"
        path.write_text(yaml.safe_dump_all([pod_doc(b, i) for i in range(PODS_PER_BATCH)]))
        files.append(path)
    expected = {f"default/b{b}-pod-{i}" for b in range(BATCHES) for i in range(PODS_PER_BATCH)}
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CLUSTER_SCHED_REDIS_URL", None)

    deadline = time.monotonic() + DEADLINE
    subprocess.run(
        cli("apply", "-f", str(nodes_file), "--redis", redis_url),
        check=True,
        env=env,
        capture_output=True,
    )
    serve = subprocess.Popen(
        cli("serve", "--redis", redis_url, "--seed", "3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        ready = json.loads(wait_for_line(serve, deadline))
        assert ready["profiles"] == ["default-scheduler"]
        # Two writers at a time, while the coordinator is already scheduling.
        for first, second in zip(files[0::2], files[1::2], strict=True):
            writers = [
                subprocess.Popen(
                    cli("apply", "-f", str(f), "--redis", redis_url),
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                for f in (first, second)
            ]
            for w in writers:
                _, err = w.communicate(timeout=max(1.0, deadline - time.monotonic()))
                assert w.returncode == 0, err
        bound: dict[str, str] = {}
        while time.monotonic() < deadline:
            bound = {
                f"{d['metadata']['namespace']}/{d['metadata']['name']}": d["spec"]["nodeName"]
                for d in store.list("Pod")
                if d.get("spec", {}).get("nodeName")
            }
            if len(bound) == len(expected) or serve.poll() is not None:
                break
            time.sleep(0.1)
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            _, serve_err = serve.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            _, serve_err = serve.communicate()
    assert serve.returncode == 0, serve_err
    assert "Traceback" not in serve_err, serve_err

    # Nothing lost: every pod bound.
    assert set(bound) == expected

    # Bound exactly once: one Scheduled event per pod, no conflicts, no failures.
    scheduled = store.events(reason="Scheduled")
    assert sorted(e["key"] for e in scheduled) == sorted(expected)
    failed = store.events(reason="FailedScheduling")
    assert failed == [], failed[:3]

    # The watch stream: nodeName goes from unset to a node once, and never changes.
    transitions: dict[str, list[str]] = {}
    last_node: dict[str, str] = {}
    for ev in all_events(store):
        if ev.kind != "Pod" or ev.type == "DELETED":
            continue
        node = (ev.obj.get("spec") or {}).get("nodeName") or ""
        if node != last_node.get(ev.key, ""):
            transitions.setdefault(ev.key, []).append(node)
            last_node[ev.key] = node
    assert {k: len(v) for k, v in transitions.items()} == {k: 1 for k in expected}
    assert {k: v[0] for k, v in transitions.items()} == bound

    # The independent checker agrees that no node is over-committed.
    nodes = load_workload(nodes_file)
    pods = [load_workload(f) for f in files]
    workload = Workload(
        "two-processes",
        node_docs=nodes.node_docs,
        pod_groups=[g for w in pods for g in w.pod_groups],
    )
    assert Cluster.from_workload(workload).check(bound) == []
