"""Private redis-server lifecycle, connecting with retries, and redis_session."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import redis

from cluster_sched.errors import StoreError
from cluster_sched.redis_server import (
    ENV_REDIS_URL,
    RedisServer,
    connect,
    find_redis_server,
    redact_url,
    redis_session,
)


def _closed_port() -> int:
    """A localhost port nobody listens on (bound for a moment, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_private_server_starts_answers_and_cleans_up() -> None:
    server = RedisServer()
    with server:
        assert server.running
        client = connect(server.url)
        assert client.ping()
        # No snapshots; writes go to the append-only file, fsynced every second.
        assert client.config_get("save")["save"] == ""
        assert client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("appendfsync")["appendfsync"] == "everysec"
        workdir = Path(client.config_get("dir")["dir"])
        assert workdir.is_dir()
        client.close()
    assert not server.running
    assert not workdir.exists()
    with pytest.raises(StoreError, match="not running"):
        _ = server.url
    server.stop()  # idempotent


def test_find_redis_server_is_executable() -> None:
    assert os.access(find_redis_server(), os.X_OK)


def test_bad_executable_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot start redis-server"):
        RedisServer(executable=str(tmp_path / "no-such-redis")).start()


def test_unreachable_redis_is_one_readable_error() -> None:
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    with pytest.raises(StoreError) as caught:
        connect(url, attempts=2, max_wait=0.01)
    message = str(caught.value)
    assert message.startswith(f"cannot reach Redis at {url}: ")
    assert "\n" not in message
    assert isinstance(caught.value.__cause__, redis.ConnectionError)


def test_default_retries_give_up_too() -> None:
    with pytest.raises(StoreError, match="cannot reach Redis"):
        connect(f"redis://127.0.0.1:{_closed_port()}/0")


def test_password_is_redacted_in_errors() -> None:
    url = f"redis://user:s3cret@127.0.0.1:{_closed_port()}/0"
    with pytest.raises(StoreError) as caught:
        connect(url, attempts=1)
    assert "s3cret" not in str(caught.value) and "user:***@" in str(caught.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://:pw@h:1/2", "redis://:***@h:1/2"),
        ("rediss://u:pw@h/0", "rediss://u:***@h/0"),
    ],
    ids=["plain", "password-only", "user-and-password"],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_invalid_url_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="invalid Redis URL"):
        connect("http://example.com")


def test_no_url_anywhere_is_a_store_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_REDIS_URL, raising=False)
    with pytest.raises(StoreError, match=ENV_REDIS_URL):
        connect(None)


def test_env_url_is_honoured(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    monkeypatch.setenv(ENV_REDIS_URL, redis_url)
    client = connect()
    assert client.ping()
    client.close()
    with redis_session() as session:
        assert session.url == redis_url
        session.client.set("k", "v")
    check = connect(redis_url)
    assert check.get("k") == b"v"
    check.close()


def test_session_with_explicit_url_uses_it(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    monkeypatch.setenv(ENV_REDIS_URL, "redis://127.0.0.1:1/0")  # the argument wins
    with redis_session(redis_url) as (client, url):
        assert url == redis_url and client.ping()


def test_session_without_url_starts_and_stops_a_private_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_REDIS_URL, raising=False)
    with redis_session() as (client, url):
        assert client.ping()
    with pytest.raises(StoreError):
        connect(url, attempts=1)


def test_fixture_gives_each_test_an_empty_database(redis_client: redis.Redis) -> None:
    assert redis_client.dbsize() == 0
    redis_client.set("left-behind", 1)


def test_fixture_gives_each_test_an_empty_database_again(redis_client: redis.Redis) -> None:
    assert redis_client.dbsize() == 0
