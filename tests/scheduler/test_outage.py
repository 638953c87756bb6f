"""The serve loop's outage handling against a real redis-server: waits while Redis is
down (gauge set, backoff), gives up after the timeout, notices a store that came back
empty or foreign, and rebuilds the coordinator after an outage."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
import redis

from cluster_sched.errors import StoreError, StoreLostError
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.scheduler.outage import (
    StoreGuard,
    check_run_id,
    ensure_run_id,
    is_outage,
    outage_timeout,
    serve_until,
)
from cluster_sched.telemetry.metrics import Metrics

PREFIX = "{cs}"


def _gauge(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value("cluster_sched_store_unavailable")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (redis.ConnectionError("down"), True),
        (redis.TimeoutError("slow"), True),
        (redis.BusyLoadingError("loading"), True),
        (redis.ResponseError("WRONGTYPE"), False),
        (ValueError("bug"), False),
    ],
    ids=["connection", "timeout", "loading", "response", "bug"],
)
def test_is_outage_follows_the_cause_chain(exc: Exception, expected: bool) -> None:
    assert is_outage(exc) is expected
    try:
        try:
            raise exc
        except Exception as inner:
            raise StoreError("wrapped") from inner
    except StoreError as wrapped:
        assert is_outage(wrapped) is expected


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, None), ("", None), ("0", None), (-1, None), ("2.5", 2.5)]
)
def test_outage_timeout_zero_or_unset_means_forever(
    value: str | float | None, seconds: float | None
) -> None:
    assert outage_timeout(value) == seconds


def test_run_id_is_written_once_and_checked(redis_client: redis.Redis) -> None:
    first = ensure_run_id(redis_client, PREFIX)
    assert ensure_run_id(redis_client, PREFIX) == first
    check_run_id(redis_client, PREFIX, first)
    with pytest.raises(StoreLostError, match="another run's data"):
        check_run_id(redis_client, PREFIX, "someone-else")
    redis_client.flushall()
    with pytest.raises(StoreLostError, match="came back without its data"):
        check_run_id(redis_client, PREFIX, first)


def test_guard_waits_for_a_restarted_redis_then_vouches_for_it(tmp_path: Path) -> None:
    server = RedisServer(directory=tmp_path, appendfsync="always").start()
    port = server.port
    client = connect(server.url)
    run_id = ensure_run_id(client, PREFIX)
    metrics = Metrics()
    guard = StoreGuard(client, prefix=PREFIX, run_id=run_id, metrics=metrics, max_backoff=0.1)
    os.kill(server.pid, signal.SIGKILL)
    server.stop()
    with pytest.raises(redis.ConnectionError) as down:
        client.ping()
    seen: list[float | None] = []
    restarted: list[RedisServer] = []

    def restart() -> None:
        seen.append(_gauge(metrics))  # while the guard waits
        restarted.append(RedisServer(directory=tmp_path, port=port).start())

    timer = threading.Timer(0.5, restart)
    timer.start()
    try:
        assert guard.wait(down.value) is True
    finally:
        timer.join()
        for s in restarted:
            s.stop()
    assert seen == [1.0]
    assert _gauge(metrics) == 0.0
    assert guard.outages == 1


def test_guard_gives_up_after_the_timeout_with_one_line() -> None:
    server = RedisServer().start()
    client = connect(server.url)
    guard = StoreGuard(
        client, prefix=PREFIX, run_id=ensure_run_id(client, PREFIX), timeout=0.3, max_backoff=0.05
    )
    server.stop()
    with pytest.raises(StoreError) as caught:
        guard.wait(redis.ConnectionError("gone"))
    assert not isinstance(caught.value, StoreLostError)
    assert str(caught.value).startswith("Redis unreachable for ")
    assert "\n" not in str(caught.value)


def test_guard_stops_waiting_when_asked() -> None:
    server = RedisServer().start()
    client = connect(server.url)
    guard = StoreGuard(
        client, prefix=PREFIX, run_id=ensure_run_id(client, PREFIX), max_backoff=0.05
    )
    server.stop()
    calls = iter(range(100))
    assert guard.wait(redis.ConnectionError("gone"), stopped=lambda: next(calls) >= 3) is False


def test_guard_refuses_a_redis_that_came_back_empty(tmp_path: Path) -> None:
    server = RedisServer(directory=tmp_path).start()
    port = server.port
    client = connect(server.url)
    guard = StoreGuard(client, prefix=PREFIX, run_id=ensure_run_id(client, PREFIX))
    server.stop()
    for path in tmp_path.glob("appendonly*"):
        path.unlink()
    with (
        RedisServer(directory=tmp_path, port=port),
        pytest.raises(StoreLostError, match="came back without its data"),
    ):
        guard.wait(redis.ConnectionError("gone"))


class _Coordinator:
    """A stand-in for the coordinator whose step fails as a Redis outage would."""

    def __init__(self, log: list[str], fail: BaseException | None) -> None:
        self.log = log
        self.fail = fail

    def step(self, pop_timeout: float = 0.0) -> bool:
        self.log.append("step")
        if self.fail is not None:
            raise self.fail
        return False

    def close(self) -> None:
        self.log.append("close")


def test_serve_until_rebuilds_the_coordinator_after_an_outage(redis_client: redis.Redis) -> None:
    guard = StoreGuard(redis_client, prefix=PREFIX, run_id=ensure_run_id(redis_client, PREFIX))
    log: list[str] = []
    failures = [StoreError("redis unreachable during pop"), None]
    failures[0].__cause__ = redis.ConnectionError("reset")

    def start() -> _Coordinator:
        log.append("start")
        return _Coordinator(log, failures.pop(0) if failures else None)

    started = serve_until(start, guard, stopped=lambda: log.count("step") >= 3)
    assert started == 2
    assert log == ["start", "step", "close", "start", "step", "step", "close"]
    assert guard.outages == 1


def test_serve_until_lets_other_errors_through(redis_client: redis.Redis) -> None:
    guard = StoreGuard(redis_client, prefix=PREFIX, run_id=ensure_run_id(redis_client, PREFIX))
    log: list[str] = []
    with pytest.raises(ValueError, match="bug"):
        serve_until(lambda: _Coordinator(log, ValueError("bug")), guard, stopped=lambda: False)
    assert log == ["step", "close"]
