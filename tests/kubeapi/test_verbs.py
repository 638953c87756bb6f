"""Verbs over raw HTTP: list paging, update and status semantics, deletecollection,
events in both groups, discovery and OpenAPI documents."""

from __future__ import annotations

from urllib.parse import quote

from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import NODE, Http, pod


def test_limit_and_continue_page_through_everything(http: Http, store: Store) -> None:
    store.apply_many([pod(f"p{i}") for i in range(5)])
    names, token, pages = [], "", 0
    while True:
        path = "/api/v1/namespaces/default/pods?limit=2" + (
            f"&continue={quote(token)}" if token else ""
        )
        code, page = http.json("GET", path)
        assert code == 200
        names += [p["metadata"]["name"] for p in page["items"]]
        pages += 1
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"p{i}" for i in range(5)] and pages == 3


def test_create_fills_server_fields_and_generate_name(http: Http, store: Store) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "web-", "namespace": "default"}
    code, created = http.json("POST", "/api/v1/namespaces/default/pods", body)
    assert code == 201
    meta = created["metadata"]
    assert meta["name"].startswith("web-") and len(meta["name"]) == len("web-") + 5
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    assert meta["resourceVersion"] == str(store.resource_version())


def test_update_bumps_generation_and_keeps_status(http: Http, store: Store) -> None:
    store.apply(NODE)
    store.apply(pod("p1"))
    store.bind("default/p1", "n1")
    code, current = http.json("GET", "/api/v1/namespaces/default/pods/p1")
    current["spec"]["containers"][0]["image"] = "nginx:2"
    current["status"] = {"phase": "Failed"}  # the main resource ignores status
    code, updated = http.json("PUT", "/api/v1/namespaces/default/pods/p1", current)
    assert code == 200
    assert updated["metadata"]["generation"] == 2
    assert updated["status"]["conditions"][0]["type"] == "PodScheduled"
    assert updated["spec"]["nodeName"] == "n1"
    code, status = http.json(
        "PATCH", "/api/v1/namespaces/default/pods/p1/status", {"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200 and status["status"]["phase"] == "Running"
    assert store.get("Pod", "default/p1")["spec"]["containers"][0]["image"] == "nginx:2"


def test_delete_collection_by_label(http: Http, store: Store) -> None:
    store.apply_many([pod("a"), pod("b")])
    other = pod("c")
    other["metadata"]["labels"] = {"app": "db"}
    store.apply(other)
    code, gone = http.json("DELETE", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")
    assert code == 200 and sorted(p["metadata"]["name"] for p in gone["items"]) == ["a", "b"]
    assert [p["metadata"]["name"] for p in store.list("Pod")] == ["c"]


def test_events_in_both_groups(http: Http, store: Store) -> None:
    store.apply(pod("p1"))
    store.record_event("Pod", "default/p1", "Scheduled", "Successfully assigned default/p1 to n1")
    code, core = http.json(
        "GET", "/api/v1/namespaces/default/events?fieldSelector=reason%3DScheduled"
    )
    (event,) = core["items"]
    assert event["involvedObject"]["name"] == "p1" and event["involvedObject"]["uid"]
    code, new = http.json("GET", "/apis/events.k8s.io/v1/namespaces/default/events")
    (event_v1,) = new["items"]
    assert event_v1["regarding"] == event["involvedObject"]
    assert event_v1["note"] == event["message"]
    posted = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "x"},
              "regarding": {"kind": "Pod", "name": "p1", "namespace": "default"},
              "reason": "Preempted", "note": "by p2", "type": "Normal"}  # fmt: skip
    code, _ = http.json("POST", "/apis/events.k8s.io/v1/namespaces/default/events", posted)
    assert code == 201
    assert [e["reason"] for e in store.events(key="default/p1")] == ["Scheduled", "Preempted"]


def test_discovery_and_openapi(http: Http) -> None:
    code, groups = http.json("GET", "/apis")
    assert "events.k8s.io" in {g["name"] for g in groups["groups"]}
    code, core = http.json("GET", "/api/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"]["shortNames"] == ["po"] and "pods/binding" in by_name
    code, index = http.json("GET", "/openapi/v3")
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    code, doc = http.json("GET", url)
    assert code == 200
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert {"name": "fieldValidation", "in": "query"}.items() <= patch["parameters"][2].items()
    _, version = http.json("GET", "/version")
    assert version["gitVersion"].startswith("v1.")


def test_field_validation_warn_and_ignore_drop_unknown_fields(http: Http, store: Store) -> None:
    body = pod("p1")
    body["spec"]["nodeSelecter"] = {"a": "b"}
    code, headers, _ = http.request("POST", "/api/v1/namespaces/default/pods", body)
    assert code == 201
    assert headers.get("Warning") == '299 - "unknown field \\"spec.nodeSelecter\\""'
    assert "nodeSelecter" not in store.get("Pod", "default/p1")["spec"]
    body["metadata"]["name"] = "p2"
    code, headers, _ = http.request(
        "POST", "/api/v1/namespaces/default/pods?fieldValidation=Ignore", body
    )
    assert code == 201 and "Warning" not in headers
    assert "nodeSelecter" not in store.get("Pod", "default/p2")["spec"]
