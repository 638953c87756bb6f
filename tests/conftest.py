"""Shared fixtures: one real, private redis-server per test session.

- ``redis_server``: the session's :class:`RedisServer` (started once, stopped at the end).
- ``redis_url``: the server's URL, with the database flushed before the test, so every
  test starts from an empty Redis.
- ``redis_client``: a connected client (bytes replies) for ``redis_url``.
- ``ray_session``: one real local Ray (2 CPUs) per test module that asks for it
  (starting one costs seconds). Its workers get the repository root on ``PYTHONPATH``,
  so they import the out-of-tree test plugins (``tests.testing_plugins...``) as a
  deployment's workers import installed plugins.

The server is always private, even if ``CLUSTER_SCHED_REDIS_URL`` is set: tests flush
the database and must never touch a Redis someone else uses. Under pytest-xdist every
worker process gets its own server.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import settings

from cluster_sched.redis_server import RedisServer, connect

REPO_ROOT = str(Path(__file__).resolve().parent.parent)

# No hypothesis example is judged by its run time: on a shared 2-core machine a slow
# example is load, not a defect (speed lives in benchmarks/).
settings.register_profile("cluster-sched", deadline=None)
settings.load_profile("cluster-sched")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    client = connect(redis_server.url)
    try:
        client.flushall()
    finally:
        client.close()
    return redis_server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = connect(redis_url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    import ray

    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE", "disabled"))
        paths = [REPO_ROOT, os.environ.get("PYTHONPATH", "")]
        env.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield
        finally:
            ray.shutdown()
