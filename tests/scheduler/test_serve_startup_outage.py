"""``serve`` started while Redis is down waits the outage out, as a running coordinator
does, saying so once (issue 26, finding 10): before, it printed ``cannot reach Redis
...: Connection refused`` and exited, and a standby started then was gone for good.

Real processes against a real redis-server that is down when ``serve`` starts and
comes back on the same port with its data (append-only file)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cluster_sched.redis_server import RedisServer

#: Generous bound on any one wait: a slow shared machine must not fail the test.
DEADLINE = 120.0
WAITING = "not serving yet"


class Serve:
    """One ``cluster-sched serve`` process; stderr collected as it comes."""

    def __init__(self, url: str, *extra: str) -> None:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        env.pop("CLUSTER_SCHED_REDIS_URL", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cluster_sched.cli", "serve", "--redis", url, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.err: list[str] = []
        assert self.proc.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.err.append(line)

    def wait_stderr(self, words: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline and self.proc.poll() is None:
            if any(words in line for line in self.err):
                return
            time.sleep(0.05)
        raise AssertionError(f"no {words!r} on stderr: {''.join(self.err)}")

    def wait_serving(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline and self.proc.poll() is None:
            if sel.select(timeout=0.2):
                line = self.proc.stdout.readline()
                if line:
                    return json.loads(line)  # type: ignore[no-any-return]
        raise AssertionError(f"serve did not start (rc {self.proc.poll()}): {''.join(self.err)}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self._reader.join(timeout=5)

    def said(self, words: str) -> int:
        return sum(words in line for line in self.err)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_later(tmp_path: Path) -> Iterator[tuple[str, list[RedisServer]]]:
    """A Redis URL nobody listens on yet; start one with ``start(servers)``."""
    servers: list[RedisServer] = []
    port = free_port()
    try:
        yield f"redis://127.0.0.1:{port}/0", servers
    finally:
        for server in servers:
            server.stop()


def start_redis(tmp_path: Path, url: str, servers: list[RedisServer]) -> RedisServer:
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    server = RedisServer(directory=tmp_path / "data", port=port, appendfsync="always").start()
    servers.append(server)
    return server


def test_serve_started_during_an_outage_waits_and_serves(
    tmp_path: Path, redis_later: tuple[str, list[RedisServer]]
) -> None:
    url, servers = redis_later
    (tmp_path / "data").mkdir()
    serve = Serve(url)
    try:
        serve.wait_stderr(WAITING)
        start_redis(tmp_path, url, servers)
        assert serve.wait_serving()["profiles"] == ["default-scheduler"]
    finally:
        rc = serve.stop()
    assert rc == 0, "".join(serve.err)
    assert serve.said("Redis unavailable") == 1
    assert serve.said("Redis is up after") == 1
    assert serve.said("cannot reach Redis") == 1  # inside the one warning line, as its cause


def test_a_standby_started_during_an_outage_takes_over_later(
    tmp_path: Path, redis_later: tuple[str, list[RedisServer]]
) -> None:
    url, servers = redis_later
    (tmp_path / "data").mkdir()
    config = tmp_path / "sched.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {
                    "leaderElect": True,
                    "leaseDuration": "60s",
                    "renewDeadline": "50s",
                    "retryPeriod": "200ms",
                },
            }
        )
    )
    server = start_redis(tmp_path, url, servers)
    leader = Serve(url, "--config", str(config))
    standby: Serve | None = None
    try:
        leader.wait_serving()
        server.stop()  # Redis goes away under the leader...
        standby = Serve(url, "--config", str(config))  # ...and a standby starts meanwhile
        standby.wait_stderr(WAITING)
        start_redis(tmp_path, url, servers)
        standby.wait_stderr("Redis is up after")
        # The lease outlives the outage: the leader keeps it until it stops and releases it
        assert leader.stop() == 0, "".join(leader.err)
        assert standby.wait_serving()["profiles"] == ["default-scheduler"]
    finally:
        leader.stop()
        rc = standby.stop() if standby is not None else None
    assert standby is not None and rc == 0, "".join(standby.err)
    assert standby.said("Redis unavailable") == 1
