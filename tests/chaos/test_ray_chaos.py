"""Ray processes killed with SIGKILL mid-run: binding workers and a shard actor.

``cluster-sched run`` in this process with the Ray executor (2 shard actors, binding
cycles as Ray tasks) on a cluster with room for exactly its pods, then ``check_store``
over the store the run used: every pod bound exactly once, one Scheduled Event each, no
node over-committed. Nobody restarts anything: Ray starts fresh workers for later tasks,
the coordinator rebuilds a lost shard from its replica and requeues the pods of a task
that died before binding them.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from cluster_sched.cli import main
from cluster_sched.store.check import check_store
from cluster_sched.store.store import Store
from tests.testing_plugins.cs_chaos_plugins import KILL_AT_LABEL
from tests.workers.shard_scenario import KillBeforeCall
from workers.ray_shard import ACTOR_NAME_PREFIX

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

NODES = 10
#: 2 cpu per node and 200m per pod: room for exactly PODS pods.
PODS = NODES * 10
KILLER = "tests.testing_plugins.cs_chaos_plugins:KillBindingWorker"


def workload(path: Path, kills: dict[str, int]) -> None:
    """A Workload file: NODES nodes, PODS pods of which ``kills[point]`` ask to kill
    their binding worker at ``point``."""

    def group(name: str, count: int, labels: dict[str, str]) -> dict[str, Any]:
        return {
            "name": name,
            "count": count,
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}},
                        }
                    ]
                },
            },
        }

    groups = [group(f"kill-{p.lower()}", n, {KILL_AT_LABEL: p}) for p, n in kills.items()]
    groups.append(group("plain", PODS - sum(kills.values()), {}))
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "chaos"},
        "spec": {
            "nodeGroups": [
                {
                    "count": NODES,
                    "template": {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {"name": "n"},
                        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
                    },
                }
            ],
            "podGroups": groups,
        },
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")


def config(path: Path) -> Path:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": KILLER}]}}}],
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def shard_actor_names() -> set[str]:
    import ray

    return {n for n in ray.util.list_named_actors() if n.startswith(ACTOR_NAME_PREFIX)}


def run(tmp: Path, redis_url: str, *extra: str) -> None:
    import ray

    before = shard_actor_names()
    try:
        argv = ["run", str(tmp / "w.yaml"), "--seed", "3", "--quiet", "--no-report"]
        argv += ["--output", str(tmp / "out"), "--executor", "ray", "--shards", "2"]
        rc = main([*argv, "--redis", redis_url, *extra])
    finally:
        for name in shard_actor_names() - before:  # runs leave their actors to the driver
            with contextlib.suppress(ValueError):
                ray.kill(ray.get_actor(name), no_restart=True)
    assert rc == 0


def assert_sound(client: redis.Redis) -> None:
    report = check_store(Store(client))
    assert report.problems() == []
    assert len(report.bound) == PODS and report.pending == []


def test_binding_workers_killed_before_and_after_binding(
    ray_session: None, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """Two workers die in PreBind (their tasks' pods are requeued and bound later), two
    after their tasks' bindings were written (the pods count as bound; their Scheduled
    events were written with the bindings, so none is missing)."""
    workload(tmp_path / "w.yaml", {"PreBind": 2, "PostBind": 2})
    run(tmp_path, redis_url, "--config", str(config(tmp_path / "c.yaml")))
    killed = [k for k in redis_client.scan_iter(match="*:chaos:killed:*")]
    assert len(killed) == 4, "every kill happened"
    assert_sound(redis_client)


def test_shard_actor_killed_mid_run(
    ray_session: None,
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cluster_sched.scheduler import assembly

    real = assembly.new_ray_shard_clients
    wrapped: list[KillBeforeCall] = []

    def with_a_kill(*args: Any) -> list[Any]:
        clients = real(*args)
        wrapped.append(KillBeforeCall(clients[1], kill_at=5))
        return [clients[0], wrapped[-1], *clients[2:]]

    monkeypatch.setattr(assembly, "new_ray_shard_clients", with_a_kill)
    workload(tmp_path / "w.yaml", {})
    # --no-compiled: every attempt fans out to the shards (the compiled path would answer
    # these pods on the coordinator's replica and send the shards only deltas)
    run(tmp_path, redis_url, "--batch-size", "8", "--no-compiled")
    assert wrapped and wrapped[0].killed, "the shard died mid-run"
    assert_sound(redis_client)
