"""Redis goes away under a serving coordinator; afterwards the store must be consistent.

Plain processes on 127.0.0.1: a private redis-server with an append-only file in a
directory the test keeps, ``cluster-sched serve`` against it. Mid-run, Redis is stopped
(SIGTERM), killed (SIGKILL, so up to a second of writes is lost) or paused (SIGSTOP for
15 s, then SIGCONT); a stopped one is restarted on the same port and directory. The
coordinator waits and resumes; every pod then gets bound, and the independent check in
``cluster_sched.store.check`` finds the store consistent. A Redis that comes back empty is
refused (exit 3).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster_sched.cli import EXIT_STORE_LOST
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.scheduler.outage import DEFAULT_MAX_BACKOFF
from cluster_sched.store.check import check_store
from cluster_sched.store.store import Store

NODES = 12
PODS = 360
#: Guards against a hung process; never a performance assertion.
DEADLINE = 180.0
PAUSE_S = 15.0
#: How long a stopped or killed Redis stays down before it is restarted: twice the
#: coordinator's cap on one reconnection backoff step (``outage.DEFAULT_MAX_BACKOFF``), so
#: it meets the outage (its calls fail, it waits) rather than a reconnect that just works.
OUTAGE_S = 2 * DEFAULT_MAX_BACKOFF


def _node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "40"}},
    }


def _pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i}", "namespace": "default", "labels": {"app": f"a{i % 7}"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ]
        },
    }


class Deployment:
    """One Redis (kept directory, fixed port) and one ``cluster-sched serve``."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "redis"
        self.redis = RedisServer(directory=self.dir).start()
        self.port = self.redis.port
        self.url = self.redis.url
        self.serve: subprocess.Popen[str] | None = None

    def store(self) -> Store:
        return Store(connect(self.url, attempts=50, max_wait=0.5))

    def seed(self, pods: range) -> None:
        """Write nodes and pods durably (fsync per write while seeding)."""
        store = self.store()
        client = store._client
        client.config_set("appendfsync", "always")
        store.apply_many([_node(i) for i in range(NODES)] + [_pod(i) for i in pods])
        client.config_set("appendfsync", "everysec")
        client.close()

    def start_serve(self) -> None:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        env.pop("CLUSTER_SCHED_REDIS_URL", None)
        self.serve = subprocess.Popen(
            [sys.executable, "-m", "cluster_sched.cli", "serve", "--redis", self.url,
             "--seed", "1", "--batch-size", "8", "--store-outage-timeout", "120"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        sel = selectors.DefaultSelector()
        assert self.serve.stdout is not None
        sel.register(self.serve.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline and self.serve.poll() is None:
            if sel.select(timeout=0.2):
                assert json.loads(self.serve.stdout.readline())["serving"]
                return
        raise AssertionError(f"serve did not start: {self.stop_serve()}")

    def stop_serve(self) -> str:
        assert self.serve is not None
        if self.serve.poll() is None:
            self.serve.send_signal(signal.SIGTERM)
        try:
            _, err = self.serve.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.serve.kill()
            _, err = self.serve.communicate()
        return err

    def wait_bound(self, at_least: int) -> int:
        """Block until the store shows ``at_least`` bound pods (or serve died)."""
        store = self.store()
        deadline = time.monotonic() + DEADLINE
        n = 0
        while time.monotonic() < deadline:
            n = len(check_store(store).bound)
            if n >= at_least or (self.serve is not None and self.serve.poll() is not None):
                break
            time.sleep(0.05)
        store._client.close()
        return n

    def restart_redis(self) -> None:
        self.redis.stop()
        self.redis = RedisServer(directory=self.dir, port=self.port).start()

    def close(self) -> None:
        if self.serve is not None and self.serve.poll() is None:
            self.stop_serve()
        self.redis.stop()


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    d = Deployment(tmp_path)
    try:
        yield d
    finally:
        d.close()


def _wait_exit(server: RedisServer) -> None:
    """Until the signalled redis-server has exited, then ``OUTAGE_S`` more with it down.

    ``server.running`` polls (so reaps) the child: it was started by this process, and
    a killed child stays a zombie until reaped, which ``os.kill(pid, 0)`` still finds
    (that check waited out its whole 30 s deadline every time)."""
    deadline = time.monotonic() + 30
    while server.running and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(OUTAGE_S)


def _stop_then_restart(d: Deployment, sig: signal.Signals) -> None:
    os.kill(d.redis.pid, sig)
    _wait_exit(d.redis)
    d.restart_redis()


def _pause(d: Deployment, sig: signal.Signals) -> None:
    os.kill(d.redis.pid, signal.SIGSTOP)
    time.sleep(PAUSE_S)
    os.kill(d.redis.pid, signal.SIGCONT)


CASES = {
    "sigterm": (signal.SIGTERM, _stop_then_restart),
    "sigkill": (signal.SIGKILL, _stop_then_restart),
    "sigstop-15s": (signal.SIGSTOP, _pause),
}


@pytest.mark.parametrize(
    "case",
    [
        "sigterm",
        "sigkill",
        pytest.param("sigstop-15s", marks=pytest.mark.slow),
    ],
)
def test_coordinator_survives_redis_going_away_mid_run(deployment: Deployment, case: str) -> None:
    sig, action = CASES[case]
    deployment.seed(range(PODS // 2))
    deployment.start_serve()
    # Mid-run: some pods bound, more arriving while Redis goes away.
    assert deployment.wait_bound(20) >= 20
    deployment.seed(range(PODS // 2, PODS))
    action(deployment, sig)
    assert deployment.wait_bound(PODS) == PODS, deployment.stop_serve()
    err = deployment.stop_serve()
    assert deployment.serve is not None and deployment.serve.returncode == 0, err
    assert "Redis unavailable" in err and "Redis is back" in err, err
    report = check_store(deployment.store(), expected=[f"default/pod-{i}" for i in range(PODS)])
    assert len(report.bound) == PODS
    assert report.problems() == []


def test_redis_that_comes_back_empty_is_refused(deployment: Deployment) -> None:
    deployment.seed(range(40))
    deployment.start_serve()
    assert deployment.wait_bound(40) == 40
    os.kill(deployment.redis.pid, signal.SIGKILL)
    _wait_exit(deployment.redis)
    for path in deployment.dir.glob("appendonly*"):
        path.unlink()  # Redis restarted without its data
    deployment.restart_redis()
    assert deployment.serve is not None
    _, err = deployment.serve.communicate(timeout=DEADLINE)
    assert deployment.serve.returncode == EXIT_STORE_LOST, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: Redis came back without its data"), err
    # Nothing was scheduled from the empty store.
    assert deployment.store().count("Pod") == 0
