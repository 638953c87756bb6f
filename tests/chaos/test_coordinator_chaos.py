"""Coordinators killed, paused and doubled, as plain processes on 127.0.0.1.

Each test starts ``cluster-sched serve`` processes with leader election on (a LEASE-second
lease), applies nodes and pods through an unfenced client as ``kubectl`` would, does
something violent to the leader, waits until the cluster is full, and then asks only the
store (``check_store``): every pod bound exactly once or still pending, one Scheduled
Event per bound pod, no node over-committed. The cluster has room for fewer pods than
are applied, so the over-commit check has something to refuse, and "recovered without
help" means: exactly the room was filled, by processes nobody restarted.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cluster_sched.store.check import check_store
from cluster_sched.store.store import Store
from tests.chaos.chaos_procs import (
    Procs,
    bound_count,
    lease,
    node_doc,
    pod_doc,
    wait_until,
    write_config,
)
from tests.testing_plugins.cs_chaos_plugins import hold_keys

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

NODES = 10
#: 2 cpu per node, 200m per pod: room for ROOM pods, PODS are applied.
ROOM = NODES * 10
PODS = ROOM + 40
#: Holds one binding cycle in PreBind until the test releases it.
HOLD = "tests.testing_plugins.cs_chaos_plugins:HoldBinding"


@pytest.fixture
def procs(redis_url: str, tmp_path: Path) -> Iterator[Procs]:
    p = Procs(redis_url, write_config(tmp_path), tmp_path)
    yield p
    p.close()


def apply_cluster(store: Store, pods: range) -> list[str]:
    store.apply_many([node_doc(i) for i in range(NODES)])
    return apply_pods(store, pods)


def apply_pods(store: Store, pods: range) -> list[str]:
    store.apply_many([pod_doc(f"p{i}") for i in pods])
    return [f"default/p{i}" for i in pods]


def settle(client: redis.Redis, procs: Procs) -> None:
    wait_until("the cluster is full", lambda: bound_count(client) >= ROOM, procs)


def assert_store_is_sound(store: Store, expected: list[str]) -> None:
    report = check_store(store, expected)
    assert report.problems() == []
    assert len(report.bound) == ROOM, "exactly the room was filled"
    assert len(report.pending) == PODS - ROOM


def test_kill_9_leader_standby_takes_over(
    redis_url: str, redis_client: redis.Redis, procs: Procs
) -> None:
    store = Store(redis_client)
    expected = apply_cluster(store, range(0, PODS // 2))
    leader = procs.serve("leader")
    wait_until("a leader", lambda: bool(lease(redis_client).get("holder")))
    first = lease(redis_client)
    standby = procs.serve("standby")
    wait_until("binding started", lambda: bound_count(redis_client) >= 20)
    expected += apply_pods(store, range(PODS // 2, PODS))  # arriving while it dies
    leader.send_signal(signal.SIGKILL)
    leader.wait()
    settle(redis_client, procs)
    after = lease(redis_client)
    assert after["holder"] != first["holder"] and int(after["token"]) == int(first["token"]) + 1
    assert procs.stop(standby) == 0
    assert_store_is_sound(store, expected)


def test_two_coordinators_started_together_one_leads(
    redis_url: str, redis_client: redis.Redis, procs: Procs
) -> None:
    store = Store(redis_client)
    expected = apply_cluster(store, range(PODS))
    both = [procs.serve("a"), procs.serve("b")]
    settle(redis_client, procs)
    held = lease(redis_client)
    assert held["token"] == "1" and held["leaseTransitions"] == "1", "one term only"
    assert [procs.stop(p) for p in both] == [0, 0]
    assert_store_is_sound(store, expected)


def test_paused_leader_is_fenced_and_steps_down(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """SIGSTOP the leader for longer than its lease while one of its binding cycles is
    in flight (HoldBinding holds it in PreBind): the standby takes over and fills the
    cluster; when the old leader wakes up, the binding it still had in flight is sent
    and refused by the fencing token (it reports the refusal), its renewal finds
    another holder, and it exits 1 (upstream's fatal OnStoppedLeading) without having
    bound anything after the takeover."""
    procs = Procs(redis_url, write_config(tmp_path, (HOLD,)), tmp_path)
    try:
        store = Store(redis_client)
        _, held, release = hold_keys(store.keys.prefix)
        expected = apply_cluster(store, range(0, PODS // 2))
        old = procs.serve("old")
        wait_until("a leader", lambda: bool(lease(redis_client).get("holder")))
        standby = procs.serve("standby")
        wait_until("a binding cycle held in flight", lambda: bool(redis_client.exists(held)))
        old.send_signal(signal.SIGSTOP)
        wait_until("the standby took over", lambda: lease(redis_client).get("token") == "2")
        expected += apply_pods(store, range(PODS // 2, PODS))
        settle(redis_client, procs)  # the standby bound every pod it could, held one too
        redis_client.set(release, "1")  # the held cycle goes on as soon as the old wakes
        old.send_signal(signal.SIGCONT)
        assert old.wait(timeout=60) == 1
        stderr = procs.stderr("old")
        assert "leaderelection lost" in stderr
        assert re.search(r"fenced writes refused: .*store\.bind=[1-9]", stderr), stderr
        assert procs.stop(standby) == 0
        assert_store_is_sound(store, expected)
    finally:
        procs.close()
