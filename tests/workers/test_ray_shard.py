"""Shard actors on a real local Ray: same answers as one table, and recovery from a kill."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from cluster_sched.scheduler.shards.source import ShardedSource, ShardRouter
from tests.workers.shard_scenario import local_sequence, run_sequence
from workers.ray_shard import ACTOR_NAME_PREFIX, RayShardClient, ray_shard_clients

pytestmark = pytest.mark.usefixtures("ray_session")


class KillingSource(ShardedSource):
    """Kills shard 1's actor before chosen fan-outs: by ray.kill, or SIGKILL to its process."""

    def __init__(self, router: ShardRouter, clients: list[Any], kills: dict[int, str]) -> None:
        super().__init__(router, clients)
        self.kills = kills
        self.fan_outs = 0

    def _fan_out(self, *args: Any) -> Any:
        self.fan_outs += 1
        how = self.kills.get(self.fan_outs)
        client: RayShardClient = self.clients[1]  # type: ignore[assignment]
        if how == "ray.kill":
            import ray

            ray.kill(client.actor, no_restart=True)
        elif how == "sigkill":
            os.kill(client.pid(), signal.SIGKILL)
        return super()._fan_out(*args)


def test_ray_shards_match_a_single_table_and_survive_killed_actors() -> None:
    expected = local_sequence()
    sources: list[KillingSource] = []

    def source(router: ShardRouter) -> ShardedSource:
        src = KillingSource(
            router, ray_shard_clients(router.n_shards, seed=7), {5: "ray.kill", 17: "sigkill"}
        )
        sources.append(src)
        return src

    got, _ = run_sequence(source, 2)
    src = sources[0]
    try:
        assert got == expected
        assert src.rebuilds == 2
        assert [c.generation for c in src.clients] == [0, 2]  # type: ignore[attr-defined]
    finally:
        src.close()


def test_actors_are_named_and_closed() -> None:
    import ray

    clients = ray_shard_clients(2, seed=1)
    names = {n for n in ray.util.list_named_actors() if n.startswith(ACTOR_NAME_PREFIX)}
    assert len([n for n in names if n.endswith(("-0-0", "-1-0"))]) >= 2
    pids = {c.pid() for c in clients}
    assert len(pids) == 2 and os.getpid() not in pids
    for c in clients:
        c.close()


def test_a_state_that_cannot_travel_fails_the_call_but_still_delivers_the_deltas() -> None:
    import ray

    from cluster_sched.framework.cycle_state import CycleState
    from cluster_sched.framework.state_codec import StateCodecError
    from cluster_sched.testing.builders import make_node, make_pod

    router = ShardRouter(1)
    for i in range(3):
        router.upsert_node(make_node(f"n{i}").capacity(cpu="2").obj())
    (client,) = ray_shard_clients(1)
    try:
        state = CycleState()
        state.write("PreFilterOutOfTree", object())
        pod = make_pod("p").obj()
        with pytest.raises(StateCodecError, match="'PreFilterOutOfTree'"):
            client.submit_filter(
                router.take_deltas(0), "default-scheduler", pod, state, router.shard_row[:3]
            )
        assert ray.get(client.actor.nodes.remote()) == 3
    finally:
        client.close()


def test_an_actor_that_cannot_start_fails_when_waited_for(tmp_path: Any) -> None:
    """Not waited for (``wait=False``: the actors start while the coordinator loads the
    store), the clients come back at once; ``wait_started`` (the coordinator's preload)
    raises what the waited start would have raised, with the cause."""
    from cluster_sched.scheduler.shards.source import ShardLostError

    config = tmp_path / "bad.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n"
        "      enabled:\n      - name: NoSuchPlugin\n"
    )
    (client,) = ray_shard_clients(1, config_path=str(config), wait=False)
    try:
        assert client.starting is not None
        with pytest.raises(ShardLostError, match="NoSuchPlugin"):
            client.wait_started()
        client.wait_started()  # once: the start's outcome was reported
    finally:
        client.close()
    with pytest.raises(ShardLostError, match="NoSuchPlugin"):
        ray_shard_clients(1, config_path=str(config))


def test_a_small_chunk_travels_in_the_call_and_a_big_one_once_in_the_object_store() -> None:
    """``share``: a chunk of compact asks is copied into each shard's call (no ray.put,
    no reference to resolve), a chunk past ``INLINE_PAYLOAD`` (one carrying the node
    order) is stored once; the shard reads the same bytes either way."""
    import ray

    from workers.ray_shard import INLINE_PAYLOAD

    small, big = b"s" * INLINE_PAYLOAD, b"b" * (INLINE_PAYLOAD + 1)
    assert RayShardClient.share(small) is small
    shared = RayShardClient.share(big)
    assert isinstance(shared, ray.ObjectRef) and ray.get(shared) == big
