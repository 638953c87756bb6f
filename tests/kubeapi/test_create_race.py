"""Simultaneous creates of one name: exactly one 201, every other 409 AlreadyExists.

Real ``kubernetes`` clients in threads, released together by a barrier, POST the same
pod name round after round. Create is one compare-and-set expecting no object
(``ObjectWriter.create``): with the old "exists? then apply" two could both win, which
this test catches within a few rounds. generateName collisions are retried with a fresh
name as upstream's RetryGenerateName does, never lost and never overwriting.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from cluster_sched.kubeapi import ApiServer
from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import Http, pod

THREADS = 6
ROUNDS = 25


@pytest.fixture
def clients(api: ApiServer, tmp_path: Path) -> Iterator[list[k8s.CoreV1Api]]:
    path = api.write_kubeconfig(str(tmp_path / "kubeconfig"))
    made = [k8s_config.new_client_from_config(config_file=path) for _ in range(THREADS)]
    try:
        yield [k8s.CoreV1Api(c) for c in made]
    finally:
        for c in made:
            c.close()


def _race(clients: list[k8s.CoreV1Api], body: dict[str, Any]) -> list[tuple[int, str]]:
    """Every client POSTs ``body`` at once; (HTTP code, reason or created name) each."""
    barrier = threading.Barrier(len(clients))
    out: list[tuple[int, str]] = []
    lock = threading.Lock()

    def one(core: k8s.CoreV1Api) -> None:
        barrier.wait()
        try:
            created = core.create_namespaced_pod("default", body)
            result = (201, created.metadata.name)
        except ApiException as exc:
            result = (exc.status, json.loads(exc.body).get("reason", ""))
        with lock:
            out.append(result)

    threads = [threading.Thread(target=one, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_concurrent_creates_of_one_name_give_exactly_one_success(
    clients: list[k8s.CoreV1Api], store: Store
) -> None:
    for r in range(ROUNDS):
        results = _race(clients, pod(f"race-{r}"))
        assert len(results) == THREADS
        won = [x for x in results if x[0] == 201]
        assert won == [(201, f"race-{r}")], results
        assert sorted(results)[1:] == [(409, "AlreadyExists")] * (THREADS - 1)
    stored = store.list("Pod")
    assert len(stored) == ROUNDS
    # each pod written once: its only write was the create (generation 1, one ADDED)
    added = [e for e in store.read_events("0-0", count=10_000) if e.kind == "Pod"]
    assert len(added) == ROUNDS and {e.type.value for e in added} == {"ADDED"}


def test_generate_name_collisions_are_drawn_again(
    api: ApiServer, clients: list[k8s.CoreV1Api], store: Store
) -> None:
    # Every thread's first draw is the same suffix (then unique ones): all but one
    # collide at once, and each must still get a pod of its own.
    lock = threading.Lock()
    draws: dict[int, int] = {}

    def suffix() -> str:
        me = threading.get_ident()
        with lock:
            n = draws[me] = draws.get(me, 0) + 1
        return "same0" if n == 1 else f"t{me % 100000}{n}"

    api.writes.name_suffix = suffix
    body = pod("")
    body["metadata"] = {"generateName": "gen-", "namespace": "default"}
    results = _race(clients, body)
    assert sorted(code for code, _ in results) == [201] * THREADS, results
    names = [name for _, name in results]
    assert len(set(names)) == THREADS and "gen-same0" in names
    assert sorted(p["metadata"]["name"] for p in store.list("Pod")) == sorted(names)


def test_a_generate_name_that_keeps_colliding_is_409(api: ApiServer, store: Store) -> None:
    store.apply(pod("gen-fixed"))
    api.writes.name_suffix = lambda: "fixed"
    body = pod("")
    body["metadata"] = {"generateName": "gen-", "namespace": "default"}
    code, status = Http(api).json("POST", "/api/v1/namespaces/default/pods", body)
    assert (code, status["reason"]) == (409, "AlreadyExists")
    assert [p["metadata"]["name"] for p in store.list("Pod")] == ["gen-fixed"]
