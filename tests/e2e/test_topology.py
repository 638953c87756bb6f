"""The deployment topology as plain processes, end to end.

`infra.launcher` starts separate OS processes for redis-server, the Ray head, one more
Ray node and the coordinator (`cluster-sched serve --executor ray`), all exporting traces
to an OTLP/HTTP receiver this test runs. Another process (`cluster-sched apply`) submits a
workload. Then: every pod is bound, no node is over-committed (independent checker), the
receiver got scheduling-cycle spans with extension-point children, and binding spans
linked to their cycles.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from cluster_sched.redis_server import connect
from cluster_sched.store.store import Store
from cluster_sched.testing.otlp_receiver import OtlpReceiver
from cluster_sched.testing.workload_file import write_workload
from cluster_sched.workload.spec import load_workload
from infra import launcher
from tests.workload.checker import Cluster

NODES, PODS = 12, 60
EXTENSION_POINT_SPANS = {"preFilter", "filter", "preScore", "score", "reserve", "permit"}


def _workload(path: Path) -> Path:
    return write_workload(
        path, NODES, PODS, node_cpu="2", node_memory="8Gi", pod_cpu="300m", pod_memory="1Gi",
        zones=("a", "b", "c"), name="topology",
    )  # fmt: skip


def _bound(store: Store) -> dict[str, str]:
    out = {}
    for doc in store.list("Pod"):
        node = (doc.get("spec") or {}).get("nodeName")
        if node:
            out[f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"] = node
    return out


def test_plain_process_topology_schedules_traces_and_links(tmp_path: Path) -> None:
    workload = _workload(tmp_path / "workload.yaml")
    with OtlpReceiver() as receiver:
        state = launcher.up(
            tmp_path / "state",
            workers=1,
            head_cpus=2,
            worker_cpus=1,
            shards=2,
            otlp_endpoint=receiver.endpoint,
        )
        try:
            names = [p.name for p in state.processes]
            assert names == ["redis", "ray-head", "ray-worker-1", "coordinator"]
            assert len({p.pid for p in state.processes}) == 4
            url = state.redis_url  # with the run's password: Redis refuses clients without
            exe = str(Path(sys.executable).with_name("cluster-sched"))
            applied = subprocess.run(
                [exe, "apply", "-f", str(workload), "--redis", url],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert applied.returncode == 0, applied.stderr
            store = Store(connect(url))
            deadline = time.monotonic() + 180
            placements: dict[str, str] = {}
            while time.monotonic() < deadline:
                placements = _bound(store)
                if len(placements) == PODS:
                    break
                time.sleep(0.5)
            assert len(placements) == PODS, f"{len(placements)} of {PODS} bound"
            assert Cluster.from_workload(load_workload(workload)).check(placements) == []
            scheduled = store.events(reason="Scheduled")
            assert len(scheduled) == PODS

            def complete(spans: list) -> bool:  # type: ignore[type-arg]
                return (
                    sum(s.name == "bindingCycle" for s in spans) >= PODS
                    and sum(s.name == "schedulingCycle" for s in spans) >= PODS
                )

            receiver.wait_for(complete, timeout=60)
        finally:
            launcher.down(tmp_path / "state")
        spans = receiver.spans()
    by_id = {s.span_id: s for s in spans}
    cycles = [s for s in spans if s.name == "schedulingCycle"]
    children = {by_id[s.parent_span_id].span_id: set() for s in spans if s.parent_span_id in by_id}
    for s in spans:
        if s.parent_span_id in children:
            children[s.parent_span_id].add(s.name)
    scheduled = [c for c in cycles if c.attributes.get("scheduler.result") == "scheduled"]
    assert len(scheduled) >= PODS
    missing = {c.span_id: EXTENSION_POINT_SPANS - children.get(c.span_id, set()) for c in scheduled}
    assert not any(missing.values()), [
        (c.attributes, missing[c.span_id]) for c in scheduled if missing[c.span_id]
    ][:3]
    # Filter and Score ran in the Ray shards: one shardCall span per shard per fan-out,
    # under the coordinator's extension-point span.
    shard_calls = [s for s in spans if s.name == "shardCall"]
    assert shard_calls and all(
        by_id[s.parent_span_id].name in ("filter", "score") for s in shard_calls
    )
    assert {s.attributes.get("scheduler.shard.id") for s in shard_calls} == {0, 1}
    cycle_ids = {(c.trace_id, c.span_id) for c in cycles}
    bindings = [s for s in spans if s.name == "bindingCycle"]
    assert bindings
    assert all(any(tuple(link) in cycle_ids for link in b.links) for b in bindings)
    bound_pods = {
        (b.attributes.get("k8s.pod.namespace"), b.attributes.get("k8s.pod.name")) for b in bindings
    }
    assert {tuple(k.split("/")) for k in placements} <= bound_pods
