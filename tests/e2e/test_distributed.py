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
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Node, Pod
from cluster_sched.cli import main
from cluster_sched.store.store import Store
from tests.workers.shard_scenario import KillBeforeCall
from workers.ray_shard import ACTOR_NAME_PREFIX

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = str(ROOT / "examples" / "mixed-small.yaml")
SEED = "11"
PODS = 300


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


@pytest.mark.parametrize("prefetch", [True, False], ids=["batched", "per-pod"])
def test_both_shard_protocols_give_the_in_process_placements(
    local_placements: dict[str, str], tmp_path: Path, prefetch: bool
) -> None:
    """``--no-shard-prefetch`` (the per-pod protocol, kept for measuring it) asks the
    shards per attempt: no prefetched answer is used, and placements do not change."""
    flag = "--shard-prefetch" if prefetch else "--no-shard-prefetch"
    args = ("--executor", "shards", "--shards", "2", "--no-compiled", "--no-report", flag)
    assert run(tmp_path, *args) == local_placements
    counts = json.loads((tmp_path / "summary.json").read_text())["shard_speculation"]
    if prefetch:
        assert counts["prefetch_hits"] > 0
    else:
        assert counts["prefetch_hits"] == counts["prefetch_misses"] == 0
        assert counts["speculative_score_hits"] > 0, "the per-pod calls still carry scores"


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


def test_a_killed_shard_worker_is_rebuilt_from_the_replica_and_the_run_completes(
    ray_session: None,
    local_placements: dict[str, str],
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The design's promise for a lost shard: rebuilt from the coordinator's replica, the
    call repeated, so the run completes with the placements of the in-process executor
    and no pod bound twice. Every cycle asks both shards (60 nodes are fewer than the
    minimum feasible nodes to find), so shard 1's 100th Filter call is cycle 100 of 300.
    (``--no-compiled``: the compiled path would answer these pods on the replica and
    send the shards only deltas.)"""
    from cluster_sched.scheduler import assembly

    new_ray_shard_clients = assembly.new_ray_shard_clients
    wrapped: list[KillBeforeCall] = []

    def with_a_kill(*args: Any) -> list[Any]:
        real = new_ray_shard_clients(*args)
        wrapped.append(KillBeforeCall(real[1], kill_at=PODS // 3))
        return [real[0], wrapped[-1], *real[2:]]

    monkeypatch.setattr(assembly, "new_ray_shard_clients", with_a_kill)
    placements = run(
        tmp_path, "--executor", "ray", "--shards", "2", "--redis", redis_url, "--no-compiled"
    )  # asserts rc 0, every pod scheduled, none unschedulable

    (shard1,) = wrapped
    assert shard1.killed_pid is not None and shard1.filter_calls > shard1.kill_at, "mid-run"
    assert shard1.rebuilds == 1 and shard1.generation == 1, "rebuilt once, from the replica"
    assert placements == local_placements
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["attempts_per_pod"]["max"] == 1, "no cycle failed for the lost shard"
    scheduled = Counter(e["key"] for e in Store(redis_client).events(reason="Scheduled"))
    assert len(scheduled) == PODS and set(scheduled.values()) == {1}, "each pod bound once"
    assert over_commitments(Store(redis_client)) == []
