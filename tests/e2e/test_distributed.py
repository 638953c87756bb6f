"""The distributed executor end to end: same placements as in-process, and a killed shard.

Runs ``cluster-sched run`` in this process (``cluster_sched.cli.main``) on
examples/mixed-small.yaml — 60 nodes in 3 zones, 300 pods including required pod
anti-affinity on the hostname, topology spread on the zone and preferred pod affinity —
with the in-process executor, in-process shards, and Ray actor shards (Filter/Score)
plus Ray binding tasks. One local Ray serves the whole module.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Node, Pod
from cluster_sched.cli import main
from cluster_sched.store.store import Store
from workers.ray_shard import ACTOR_NAME_PREFIX

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = str(ROOT / "examples" / "mixed-small.yaml")
SEED = "11"
PODS = 300
#: liveness bound for a whole run (never a timing assertion)
PATIENCE = 600.0


def shard_actor_names() -> set[str]:
    import ray

    return {n for n in ray.util.list_named_actors() if n.startswith(ACTOR_NAME_PREFIX)}


def kill_shard_actors(names: set[str]) -> None:
    """Runs leave their shard actors to the driver; free them between runs."""
    import ray

    for name in names:
        with contextlib.suppress(ValueError):  # already gone
            ray.kill(ray.get_actor(name), no_restart=True)


def run(out: Path, *extra: str) -> dict[str, str]:
    before = shard_actor_names()
    try:
        rc = main(["run", WORKLOAD, "--seed", SEED, "--quiet", "--output", str(out), *extra])
    finally:
        kill_shard_actors(shard_actor_names() - before)
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scheduled"] == PODS and summary["unschedulable"] == 0
    return json.loads((out / "placements.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def local_placements(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    placements = run(tmp_path_factory.mktemp("local"), "--executor", "local")
    assert len(placements) == PODS
    return placements


def test_the_workload_uses_affinity_and_spread() -> None:
    from cluster_sched.plugins import interpodaffinity, podtopologyspread
    from cluster_sched.plugins.names import INTER_POD_AFFINITY, POD_TOPOLOGY_SPREAD

    assert (
        interpodaffinity.NAME == INTER_POD_AFFINITY
        and podtopologyspread.NAME == POD_TOPOLOGY_SPREAD
    )
    text = Path(WORKLOAD).read_text()
    assert "podAntiAffinity" in text and "topologySpreadConstraints" in text


@pytest.mark.parametrize(
    "executor",
    [("shards", "4"), ("ray", "2"), ("ray", "4")],
    ids=["in-process-4-shards", "ray-2-shards", "ray-4-shards"],
)
def test_placements_equal_the_in_process_executor(
    ray_session: None, local_placements: dict[str, str], tmp_path: Path, executor: tuple[str, str]
) -> None:
    kind, shards = executor
    placements = run(tmp_path, "--executor", kind, "--shards", shards)
    assert placements == local_placements


def over_commitments(store: Store) -> list[str]:
    """Nodes whose bound pods request more than they have (computed from the store)."""
    nodes = {
        n.name: n for n in (parse_object(d) for d in store.list("Node")) if isinstance(n, Node)
    }
    used: dict[str, Counter[str]] = {name: Counter() for name in nodes}
    for doc in store.list("Pod"):
        pod = parse_object(doc)
        assert isinstance(pod, Pod)
        if pod.node_name:
            used[pod.node_name].update(pod.requests)
            used[pod.node_name]["pods"] += 1
    return [
        f"{name}: {res} {amount} > {nodes[name].allocatable.get(res, 0)}"
        for name, counts in used.items()
        for res, amount in counts.items()
        if amount > nodes[name].allocatable.get(res, 0)
    ]


def test_a_killed_shard_worker_is_rebuilt_or_the_run_stops_clearly(
    ray_session: None,
    local_placements: dict[str, str],
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import ray

    store = Store(redis_client)
    before = shard_actor_names()
    result: dict[str, Any] = {}

    def go() -> None:
        argv = ["run", WORKLOAD, "--seed", SEED, "--quiet", "--output", str(tmp_path)]
        result["rc"] = main([*argv, "--executor", "ray", "--shards", "2", "--redis", redis_url])

    thread = threading.Thread(target=go, name="cluster-sched-run", daemon=True)
    thread.start()
    killed = None
    deadline = time.monotonic() + PATIENCE
    # Actor names seen while the run lasts: the coordinator ends its actors when it
    # closes, so a rebuilt shard is only observable during the run.
    after: set[str] = set()
    try:
        while killed is None and thread.is_alive():
            assert time.monotonic() < deadline, "the run never got going"
            bound = sum(1 for d in store.list("Pod") if (d.get("spec") or {}).get("nodeName"))
            after |= shard_actor_names() - before
            shard1 = [n for n in after if n.endswith("-1-0")]
            if bound >= 40 and shard1:
                pid = ray.get(ray.get_actor(shard1[0]).pid.remote())
                os.kill(pid, signal.SIGKILL)
                killed = (pid, bound)
            time.sleep(0.02)
        while thread.is_alive() and time.monotonic() < deadline + PATIENCE:
            after |= shard_actor_names() - before
            thread.join(0.05)
        assert not thread.is_alive(), "the run did not finish"
    finally:
        kill_shard_actors(shard_actor_names() - before)
    assert killed is not None and killed[1] < PODS, "the shard was not killed mid-run"

    # Whatever the outcome: no node over-committed, no pod bound twice.
    assert over_commitments(store) == []
    scheduled = Counter(e["key"] for e in store.events(reason="Scheduled"))
    assert all(n == 1 for n in scheduled.values()), scheduled.most_common(3)
    if result["rc"] != 0:
        err = capsys.readouterr().err
        assert "shard 1 lost" in err, err
        return
    # Completed: shard 1 was rebuilt (a second generation of its actor), every pod bound.
    assert any(n.endswith("-1-1") for n in after), after
    summary = json.loads((tmp_path / "summary.json").read_text())
    placements = json.loads((tmp_path / "placements.json").read_text())
    assert summary["scheduled"] == PODS and len(placements) == PODS == len(scheduled)
    if summary["attempts_per_pod"]["max"] == 1:
        # no cycle failed: the rebuilt shard answered exactly as the lost one would have
        assert placements == local_placements
