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

Under ``--dist loadfile`` (``scripts/dev.py test``), a file's tests run in one worker
process, and the files in :data:`ONE_WORKER` share one worker, one after the other.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import settings

from cluster_sched.redis_server import RedisServer, connect

REPO_ROOT = str(Path(__file__).resolve().parent.parent)

# No hypothesis example is judged by its run time: on a shared 2-core machine a slow
# example is load, not a defect (speed lives in benchmarks/).
settings.register_profile("cluster-sched", deadline=None)
settings.load_profile("cluster-sched")


#: Files that must not run at the same time as each other (each group in one xdist
#: worker): they start Ray with ``ray start`` (infra.launcher), whose workers all take
#: ports from the same fixed range (``--min-worker-port`` 10002 up), so two such clusters
#: at once would hand out the same ports.
ONE_WORKER = {
    "tests/e2e/test_topology.py": "ray-start",
    "tests/infra/test_infra_launcher.py": "ray-start",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with the files of :data:`ONE_WORKER` grouped."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class _Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return ONE_WORKER.get(path, path)

    return _Scheduling(config, log)


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
