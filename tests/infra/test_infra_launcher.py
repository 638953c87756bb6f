"""The local launcher starts the compose services as real processes and stops exactly those.

Ray start-up costs seconds on two cores, so there are two launcher runs in all: one
with redis + a Ray head + one extra Ray node, one with the coordinator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import redis

from infra import launcher, services

NODES_SCRIPT = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
print(json.dumps(sorted(n["NodeManagerAddress"] + ":" + str(n["NodeManagerPort"]) for n in ray.nodes() if n["Alive"])))
ray.shutdown()
"""


def alive_ray_nodes(topology: services.Topology) -> list[str]:
    """Ask the cluster from a separate driver process, so this test process joins no
    cluster; the driver presents the run's token, as every process of it must."""
    address = topology.ray_address
    env = {**os.environ, **services.ray_auth_env(topology)}
    out = subprocess.run(
        [sys.executable, "-c", NODES_SCRIPT, address],
        capture_output=True, text=True, timeout=180, check=True, env=env,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_up_starts_redis_ray_head_and_a_second_ray_node_then_down_stops_them(
    tmp_path: Path,
) -> None:
    state = launcher.up(
        tmp_path, workers=1, redis_port=0, ray_port=0, head_cpus=1, worker_cpus=1, coordinator=False
    )
    try:
        assert [p.name for p in state.processes] == ["redis", "ray-head", "ray-worker-1"]
        assert launcher.status(tmp_path) == {"redis": True, "ray-head": True, "ray-worker-1": True}
        client = redis.Redis.from_url(state.redis_url, decode_responses=True)
        assert client.ping()
        # Durable as in compose: the append-only file in the state dir.
        assert client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("dir")["dir"] == str((tmp_path / "redis-data").resolve())
        client.close()
        assert len(alive_ray_nodes(state.topology)) == 2

        # Locked down: no password, no Redis; secrets on no command line, files 0600.
        port = state.topology.redis_port
        with pytest.raises(redis.RedisError, match=r"(?i)auth"):
            redis.Redis(host="127.0.0.1", port=port, socket_timeout=5).ping()
        secrets = (state.topology.redis_password, state.topology.ray_auth_token)
        for proc in state.processes:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace")
            assert not any(secret in cmdline for secret in secrets), proc.name
        for name in ("launcher.json", "redis.conf"):
            assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name
        assert json.loads((tmp_path / "launcher.json").read_text())["redis_url"] == state.redis_url

        # What ran is what services.py renders (argv[0] resolved to a path).
        head = state.processes[1]
        expected = services.ray_head_service(state.topology, 1).argv
        assert Path(head.argv[0]).name == "ray"
        assert head.argv[1:] == expected[1:]
        assert (
            json.loads((tmp_path / "launcher.json").read_text())["topology"]["ray_host"]
            == "127.0.0.1"
        )
    finally:
        stopped = launcher.down(tmp_path)

    assert not any(launcher._alive(p) for p in stopped.processes)
    assert not Path(stopped.ray_temp_dir).exists()
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(stopped.redis_url, socket_connect_timeout=2).ping()
    with pytest.raises(launcher.LauncherError, match="nothing is running"):
        launcher.status(tmp_path)


def test_serve_accepts_every_flag_the_coordinator_service_passes() -> None:
    """The coordinator service runs `cluster-sched serve`: a broken or renamed command
    fails here with its own stderr, not later as a service that died at start."""
    argv = services.coordinator_service(
        services.COMPOSE, join_ray=False, api_port=services.COMPOSE_API_PORT
    ).argv
    probe = subprocess.run(
        [launcher._executable(argv[0]), argv[1], "--help"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    flags = [a for a in argv if a.startswith("--")]
    assert flags and all(f in probe.stdout for f in flags), (flags, probe.stdout)


def test_up_runs_the_coordinator_serving_metrics(tmp_path: Path) -> None:
    """Coordinator leg of the launcher: `cluster-sched serve` against redis + Ray."""
    state = launcher.up(
        tmp_path, workers=0, redis_port=0, ray_port=0, metrics_port=0, head_cpus=2, shards=1
    )
    try:
        assert [p.name for p in state.processes] == ["redis", "ray-head", "coordinator"]
        url = f"http://127.0.0.1:{state.topology.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode()
        assert "scheduler_pending_pods" in body
        assert all(launcher.status(tmp_path).values())
    finally:
        stopped = launcher.down(tmp_path)
    assert not any(launcher._alive(p) for p in stopped.processes)


def test_up_refuses_to_overwrite_a_running_state(tmp_path: Path) -> None:
    (tmp_path / "launcher.json").write_text("{}")
    with pytest.raises(launcher.LauncherError, match="run `down` first"):
        launcher.up(tmp_path, coordinator=False)


def test_cli_status_without_state_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert launcher.main(["--state-dir", str(tmp_path), "status"]) == 2
    assert "nothing is running" in capsys.readouterr().err


def test_unreadable_state_is_reported(tmp_path: Path) -> None:
    (tmp_path / "launcher.json").write_text('{"state_dir": 1}')
    with pytest.raises(launcher.LauncherError, match="unreadable launcher state"):
        launcher.down(tmp_path)
