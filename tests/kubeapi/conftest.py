"""Fixtures for the API tests: a real ApiServer over a Store on the session's redis-server,
raw HTTP to it, and a real kubectl pointed at it by a written kubeconfig."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cluster_sched.kubeapi import ApiServer, ApiServerOptions
from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import Http, Kubectl


@pytest.fixture
def store(redis_client: redis.Redis) -> Store:
    return Store(redis_client)


@pytest.fixture
def api(store: Store) -> Iterator[ApiServer]:
    server = ApiServer(store, ApiServerOptions()).start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def http(api: ApiServer) -> Http:
    return Http(api)


@pytest.fixture
def kubectl(api: ApiServer, tmp_path: Path) -> Kubectl:
    path = api.write_kubeconfig(str(tmp_path / "kubeconfig"))
    return Kubectl(path, str(tmp_path / "cache"))
