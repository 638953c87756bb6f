"""The private redis-server's durability and credentials: AOF policy, kept directory
(a killed server restarts with its data), password and ACL user."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import redis

from cluster_sched.errors import StoreError
from cluster_sched.redis_server import ENV_APPENDFSYNC, RedisServer, connect


@pytest.mark.parametrize("policy", ["always", "no"], ids=str)
def test_appendfsync_comes_from_the_environment(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_APPENDFSYNC, policy)
    with RedisServer() as server:
        client = connect(server.url)
        assert client.config_get("appendfsync")["appendfsync"] == policy
        assert client.config_get("appendonly")["appendonly"] == "yes"
        client.close()


def test_appendfsync_off_means_no_append_only_file() -> None:
    with RedisServer(appendfsync="off") as server:
        client = connect(server.url)
        assert client.config_get("appendonly")["appendonly"] == "no"
        client.close()


def test_unknown_appendfsync_policy_is_refused() -> None:
    with pytest.raises(StoreError, match="appendfsync must be one of"):
        RedisServer(appendfsync="sometimes")


def test_killed_server_restarts_on_the_same_port_and_directory_with_its_data(
    tmp_path: Path,
) -> None:
    first = RedisServer(directory=tmp_path, appendfsync="always").start()
    port = first.port
    client = connect(first.url)
    client.set("kept", "yes")
    client.close()
    os.kill(first.pid, signal.SIGKILL)
    first.stop()  # the process is gone; the kept directory stays
    assert (tmp_path / "appendonly.aof").is_file()
    with RedisServer(directory=tmp_path, port=port) as second:
        client = connect(second.url)
        assert client.get("kept") == b"yes"
        client.close()
    assert tmp_path.is_dir()


def test_password_and_acl_user_are_required(tmp_path: Path) -> None:
    with RedisServer(password="s3cr:et/", username="sched") as server:
        assert "sched:s3cr%3Aet%2F@" in server.url
        client = connect(server.url)
        assert client.acl_whoami() == "sched"
        client.close()
        anonymous = redis.Redis(host="127.0.0.1", port=server.port)
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        anonymous.close()
        with pytest.raises(StoreError, match="cannot reach Redis"):
            connect(f"redis://sched:wrong@127.0.0.1:{server.port}/0", attempts=1)
        # the password is in a 0600 file, never on the command line
        conf = next(Path(p) for p in [server.directory] if p) / "redis.conf"
        assert conf.stat().st_mode & 0o077 == 0
        assert "s3cr" not in Path(f"/proc/{server.pid}/cmdline").read_text()


def test_a_run_s_private_server_logs_writes_but_never_rewrites_its_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``redis_session`` (one bounded run): the append-only file stays on, its automatic
    rewrite (a fork of the whole dataset) is off; a server started alone keeps both."""
    from cluster_sched.redis_server import ENV_REDIS_URL, redis_session

    monkeypatch.delenv(ENV_REDIS_URL, raising=False)
    with redis_session() as session:
        client = session.client
        assert client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("auto-aof-*")["auto-aof-rewrite-percentage"] == "0"
    with RedisServer() as server:
        client = connect(server.url)
        assert (
            client.config_get("auto-aof-rewrite-percentage")["auto-aof-rewrite-percentage"] == "100"
        )
        client.close()
