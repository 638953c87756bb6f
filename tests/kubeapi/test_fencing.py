"""API writes carry the fencing token of the store they are served over, like every
coordinator write: an API server whose store lost the lease (a real election, a real
takeover: ``cluster_sched.testing.fencing``) gets each write refused by ``_fence.lua``,
answers one clear Status (503, reason ServiceUnavailable, cause Fenced), counts the
refusal in ``Fence.refused`` and writes nothing. The API process of ``serve``/``run``
writes as a client (token 0), as kubectl against kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from cluster_sched.kubeapi import ApiServer, ApiServerOptions
from cluster_sched.store import Store
from cluster_sched.testing.fencing import depose, lead, redis_state
from tests.kubeapi.kube_helpers import NODE, Http, pod

PODS = "/api/v1/namespaces/default/pods"

#: name -> the request a deposed leader's API server receives
WRITES: dict[str, Callable[[Http], tuple[int, Any]]] = {
    "create": lambda h: h.json("POST", PODS, pod("new")),
    "update": lambda h: h.json("PUT", f"{PODS}/p", pod("p", cpu="200m")),
    "merge patch": lambda h: h.json(
        "PATCH",
        f"{PODS}/p",
        {"metadata": {"labels": {"x": "y"}}},
        content_type="application/merge-patch+json",
    ),
    "status patch": lambda h: h.json(
        "PATCH",
        f"{PODS}/p/status",
        {"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
    ),
    "delete": lambda h: h.json("DELETE", f"{PODS}/p"),
    "binding": lambda h: h.json(
        "POST",
        f"{PODS}/p/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p"},
            "target": {"kind": "Node", "name": "n1"},
        },
    ),
    "event": lambda h: h.json(
        "POST",
        "/api/v1/namespaces/default/events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e"},
            "reason": "R",
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        },
    ),
}


@pytest.fixture
def deposed_api(redis_client: redis.Redis) -> Iterator[tuple[ApiServer, Store]]:
    admin = Store(redis_client)
    admin.apply_many([NODE, pod("p")])
    old_store = Store(redis_client)
    old = lead(redis_client, old_store)
    server = ApiServer(old_store, ApiServerOptions()).start()
    try:
        code, _ = Http(server).json(
            "PATCH",
            f"{PODS}/p",
            {"metadata": {"annotations": {"while": "leading"}}},
            content_type="application/merge-patch+json",
        )
        assert code == 200  # the leader's API writes with its token
        takeover = depose(old, redis_client)
        try:
            yield server, old_store
        finally:
            takeover.close()
    finally:
        server.close()


@pytest.mark.parametrize("name", list(WRITES))
def test_a_deposed_leaders_api_write_is_refused_with_a_status(
    name: str, deposed_api: tuple[ApiServer, Store], redis_client: redis.Redis
) -> None:
    server, store = deposed_api
    before = redis_state(redis_client)
    refused = store.fence.refused_total()
    code, status = WRITES[name](Http(server))
    assert code == 503, status
    assert status["kind"] == "Status" and status["reason"] == "ServiceUnavailable"
    assert status["message"].startswith("write refused by fencing, nothing was written: FENCED")
    assert status["details"]["causes"][0]["reason"] == "Fenced"
    assert redis_state(redis_client) == before
    assert store.fence.refused_total() == refused + 1
    # the server is alive and reads still work
    code, got = Http(server).json("GET", f"{PODS}/p")
    assert code == 200 and got["metadata"]["annotations"] == {"while": "leading"}


def test_an_unfenced_api_server_writes_during_a_takeover(
    deposed_api: tuple[ApiServer, Store], redis_client: redis.Redis
) -> None:
    # serve/run's API process: its own Store, token 0, a client of the store
    client_api = ApiServer(Store(redis_client), ApiServerOptions()).start()
    try:
        code, _ = Http(client_api).json("POST", PODS, pod("new"))
        assert code == 201
    finally:
        client_api.close()
