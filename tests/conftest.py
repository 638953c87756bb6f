"""Shared fixtures: one real, private redis-server per test session.

- ``redis_server``: the session's :class:`RedisServer` (started once, stopped at the end).
- ``redis_url``: the server's URL, with the database flushed before the test, so every
  test starts from an empty Redis.
- ``redis_client``: a connected client (bytes replies) for ``redis_url``.

The server is always private, even if ``CLUSTER_SCHED_REDIS_URL`` is set: tests flush
the database and must never touch a Redis someone else uses. Under pytest-xdist every
worker process gets its own server.

- ``ray_session``: one real local Ray per test module that asks for it (starting one costs
  seconds), its workers able to import the out-of-tree test plugins.

The out-of-tree test plugins (``tests/testing_plugins``) are importable as
``cs_sample_plugins`` here, as a user's plugins on ``sys.path`` would be.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cluster_sched.redis_server import RedisServer, connect

SAMPLE_PLUGINS_DIR = str(Path(__file__).resolve().parent / "testing_plugins")
if SAMPLE_PLUGINS_DIR not in sys.path:
    sys.path.insert(0, SAMPLE_PLUGINS_DIR)


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
    """A private local Ray; its workers inherit ``PYTHONPATH`` (plus the sample plugins)
    from this process, as a deployment's workers get the plugins installed."""
    import ray

    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE", "disabled"))
        paths = [SAMPLE_PLUGINS_DIR, os.environ.get("PYTHONPATH", "")]
        env.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
