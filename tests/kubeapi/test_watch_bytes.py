"""The bytes a watch sends: each event's line is exactly ``dumps({"type", "object"})`` of
the stored object at its version, every watch of the same events gets the same bytes
(encoded once, whatever path sent it), a namespace scopes by the object's key, an
unreadable stored object is one ERROR line that does not end the watch, and a watch
resumed from the last version it saw continues with no gap and no repeat."""

from __future__ import annotations

import json
from typing import Any

from cluster_sched.kubeapi.request import dumps
from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import NODE, Http, pod


def _lines(resp: Any, n: int) -> list[bytes]:
    out = []
    while len(out) < n:
        line = resp.readline()
        assert line, f"watch ended after {out}"
        out.append(line)
    return out


def _start(http: Http, store: Store) -> int:
    store.apply(NODE)  # a version after 0 ("0" means: start from the current state)
    return store.resource_version()


def test_each_line_is_the_stored_object_at_its_version(http: Http, store: Store) -> None:
    rv = _start(http, store)
    store.apply(pod("p1"))
    added = store.get("Pod", "default/p1")
    store.bind("default/p1", "n1")
    bound = store.get("Pod", "default/p1")
    with http.stream(f"/api/v1/pods?watch=1&resourceVersion={rv}") as resp:
        got = _lines(resp, 2)
    assert got == [
        dumps({"type": "ADDED", "object": added}) + b"\n",
        dumps({"type": "MODIFIED", "object": bound}) + b"\n",
    ]
    assert added["metadata"]["resourceVersion"] != bound["metadata"]["resourceVersion"]


def test_every_watch_of_the_same_events_gets_the_same_bytes(http: Http, store: Store) -> None:
    rv = _start(http, store)
    store.apply_many([pod(f"p{i}") for i in range(20)])
    store.bind_many([(f"default/p{i}", "n1", None) for i in range(0, 20, 2)])
    paths = [
        f"/api/v1/pods?watch=1&resourceVersion={rv}",  # no selector: the stored JSON
        f"/api/v1/pods?watch=1&resourceVersion={rv}",  # again: the JSON kept from the first
        f"/api/v1/pods?watch=1&resourceVersion={rv}&labelSelector=app%3Dweb",  # decoded
        f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}",
    ]
    seen = []
    for path in paths:
        with http.stream(path) as resp:
            seen.append(_lines(resp, 30))
    assert seen[1] == seen[0] and seen[2] == seen[0] and seen[3] == seen[0]
    assert [json.loads(line)["type"] for line in seen[0]].count("MODIFIED") == 10


def test_a_namespace_sees_only_its_objects(http: Http, store: Store) -> None:
    rv = _start(http, store)
    other = pod("x1")
    other["metadata"]["namespace"] = "other"
    store.apply(other)
    store.apply(pod("p1"))
    near_miss = pod("x2")
    near_miss["metadata"]["namespace"] = "default2"  # "default" is a prefix of its name
    store.apply(near_miss)
    store.apply(pod("p2"))
    with http.stream(f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}") as resp:
        got = [json.loads(line) for line in _lines(resp, 2)]
    assert [
        (e["object"]["metadata"]["namespace"], e["object"]["metadata"]["name"]) for e in got
    ] == [
        ("default", "p1"),
        ("default", "p2"),
    ]
    with http.stream(f"/api/v1/namespaces/other/pods?watch=1&resourceVersion={rv}") as resp:
        (only,) = [json.loads(line) for line in _lines(resp, 1)]
    assert only["object"]["metadata"]["name"] == "x1"


def test_an_unreadable_object_is_one_error_line(http: Http, store: Store) -> None:
    rv = _start(http, store)
    store.apply(pod("p1"))
    # an entry the store's scripts would never write: the next version, bytes that are
    # not msgpack (0xc1 is never used), as a damaged or foreign writer could leave
    bad_rv = store.client.incr(store.keys.rv)
    store.client.xadd(
        store.keys.events,
        {"type": "ADDED", "kind": "Pod", "key": "default/bad", "rv": str(bad_rv), "obj": b"\xc1"},
    )
    store.apply(pod("p2"))
    with http.stream(f"/api/v1/pods?watch=1&resourceVersion={rv}") as resp:
        got = [json.loads(line) for line in _lines(resp, 3)]
    assert [e["type"] for e in got] == ["ADDED", "ERROR", "ADDED"]
    assert "unreadable" in got[1]["object"]["message"]
    assert got[2]["object"]["metadata"]["name"] == "p2"


def test_a_resumed_watch_continues_without_gap_or_repeat(http: Http, store: Store) -> None:
    rv = _start(http, store)
    store.apply_many([pod(f"p{i:02d}") for i in range(30)])
    with http.stream(f"/api/v1/pods?watch=1&resourceVersion={rv}") as resp:
        first = [json.loads(line) for line in _lines(resp, 12)]
    last = first[-1]["object"]["metadata"]["resourceVersion"]
    store.bind_many([(f"default/p{i:02d}", "n1", None) for i in range(5)])
    with http.stream(f"/api/v1/pods?watch=1&resourceVersion={last}") as resp:
        rest = [json.loads(line) for line in _lines(resp, 23)]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in first + rest]
    assert versions == list(range(rv + 1, rv + 36))
    assert [e["type"] for e in rest[-5:]] == ["MODIFIED"] * 5
