"""Watch semantics over raw HTTP: selector enter/leave as ADDED/DELETED, BOOKMARKs,
sendInitialEvents with its end bookmark, Tables, and a gapless ordered stream."""

from __future__ import annotations

import json
from typing import Any

from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import NODE, Http, pod


def _events(resp: Any, n: int) -> list[dict[str, Any]]:
    out = []
    while len(out) < n:
        line = resp.readline()
        assert line, f"watch ended after {out}"
        out.append(json.loads(line))
    return out


def test_field_selector_enter_and_leave(http: Http, store: Store) -> None:
    store.apply(NODE)
    store.apply(pod("p1"))
    code, listed = http.json("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
    assert code == 200 and listed["items"] == []
    rv = listed["metadata"]["resourceVersion"]
    with http.stream(
        f"/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&resourceVersion={rv}"
    ) as resp:
        store.bind("default/p1", "n1")  # enters the selector
        store.apply(pod("p2"))  # never matches: not sent
        store.delete("Pod", "default/p1")
        got = _events(resp, 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [
        ("ADDED", "p1"),
        ("DELETED", "p1"),
    ]


def test_label_selector_leave_is_deleted(http: Http, store: Store) -> None:
    store.apply(pod("p1"))
    with http.stream("/api/v1/namespaces/default/pods?watch=true&labelSelector=app%3Dweb") as resp:
        (added,) = _events(resp, 1)
        relabelled = pod("p1")
        relabelled["metadata"]["labels"] = {"app": "db"}
        store.apply(relabelled)
        (left,) = _events(resp, 1)
    assert added["type"] == "ADDED"
    assert left["type"] == "DELETED" and left["object"]["metadata"]["labels"] == {"app": "db"}


def test_send_initial_events_ends_with_bookmark(http: Http, store: Store) -> None:
    store.apply(pod("p1"))
    store.apply(pod("p2"))
    path = (
        "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true"
    )
    with http.stream(path) as resp:
        got = _events(resp, 3)
    assert [e["type"] for e in got] == ["ADDED", "ADDED", "BOOKMARK"]
    bookmark = got[2]["object"]["metadata"]
    assert bookmark["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark["resourceVersion"] == str(store.resource_version())


def test_send_initial_events_without_match_is_422(http: Http) -> None:
    code, status = http.json("GET", "/api/v1/pods?watch=1&sendInitialEvents=true")
    assert code == 422 and status["reason"] == "Invalid"


def test_every_write_arrives_in_order_without_gaps(http: Http, store: Store) -> None:
    store.apply(NODE)  # a version after 0 ("0" means: start from the current state)
    _, listed = http.json("GET", "/api/v1/pods")
    rv = int(listed["metadata"]["resourceVersion"])
    docs = [pod(f"p{i:03d}") for i in range(200)]
    store.apply_many(docs)
    store.bind_many([(f"default/p{i:03d}", "n1", None) for i in range(0, 200, 2)])
    with http.stream(f"/api/v1/pods?watch=1&resourceVersion={rv}") as resp:
        got = _events(resp, 300)
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
    assert versions == sorted(versions) and len(set(versions)) == 300
    assert versions[-1] == store.resource_version()
    assert [e["type"] for e in got].count("MODIFIED") == 100


def test_watch_as_table_sends_rows(http: Http, store: Store) -> None:
    store.apply(pod("p1"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    with http.stream("/api/v1/pods?watch=1", {"Accept": accept}) as resp:
        (event,) = _events(resp, 1)
    table = event["object"]
    assert table["kind"] == "Table"
    assert table["rows"][0]["cells"][0] == "p1"
    assert [c["name"] for c in table["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]


def test_unsupported_field_selector_is_400(http: Http) -> None:
    code, status = http.json("GET", "/api/v1/pods?fieldSelector=spec.priority%3D1")
    assert code == 400 and status["message"] == 'field label not supported: "spec.priority"'
    code, _ = http.json("GET", "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue")
    assert code == 200
