"""Bad input: one Status each, nothing stored, the server alive (2,000 fuzzed bodies)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import NODE, Http, pod

_TARGETS = [
    ("POST", "/api/v1/namespaces/default/pods", "application/json"),
    ("POST", "/api/v1/nodes", "application/json"),
    ("PUT", "/api/v1/namespaces/default/pods/p1", "application/json"),
    ("PATCH", "/api/v1/namespaces/default/pods/p1", "application/strategic-merge-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/pods/p1", "application/merge-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/pods/p1", "application/json-patch+json"),
    ("PATCH", "/api/v1/nodes/n1/status", "application/merge-patch+json"),
    ("POST", "/api/v1/namespaces/default/pods/p1/binding", "application/json"),
    ("POST", "/api/v1/namespaces/default/bindings", "application/json"),
    ("POST", "/apis/apps/v1/namespaces/default/deployments", "application/json"),
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(9 if depth < 4 else 5)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False, 0, -1, 2**70, 1.5, "", "x" * rng.randrange(50)])
    if choice == 2:
        return rng.choice(["4x", "-1", "1Gi", "ünï", "\n", "a/b", "$patch", "Pod", "v1", "n1"])
    if choice in (3, 4):
        return rng.randrange(-5, 5)
    if choice in (5, 6):
        keys = ["kind", "apiVersion", "metadata", "spec", "status", "name", "labels", "containers",
                "target", "op", "path", "value", "$patch", "nodeName", "resources", "requests",
                "cpu", "resourceVersion", "uid", "generateName", "namespace", "unknownField"]  # fmt: skip
        return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(5))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _body(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if kind == 1:
        return json.dumps(_value(rng)).encode()[: rng.randrange(1, 60)]  # truncated JSON
    if kind == 2:  # a pod-shaped object with one field broken
        doc = pod("p1")
        doc[rng.choice(["kind", "apiVersion", "metadata", "spec"])] = _value(rng)
        return json.dumps(doc).encode()
    return json.dumps(_value(rng)).encode()


def test_fuzzed_bodies_get_one_status_each_and_store_nothing(http: Http, store: Store) -> None:
    store.apply(NODE)
    store.apply(pod("p1"))
    store.bind("default/p1", "n1")
    rng = random.Random(24)
    refused = 0
    for i in range(2000):
        method, path, content_type = rng.choice(_TARGETS)
        body = _body(rng)
        rv = store.resource_version()
        code, data = http.fast(method, path, body, content_type)
        reply = json.loads(data)
        if code >= 400:
            refused += 1
            assert reply["kind"] == "Status" and reply["code"] == code, (i, body, reply)
            assert reply["status"] == "Failure" and reply["reason"], (i, body, reply)
            assert code < 500, (i, method, path, body, reply)
            assert store.resource_version() == rv, (i, method, path, body, reply)
    assert refused > 1900  # random bodies are almost never valid writes
    code, _, data = http.request("GET", "/api/v1/namespaces/default/pods/p1")
    assert code == 200 and json.loads(data)["spec"]["nodeName"] == "n1"


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type", "code", "reason"),
    [
        ("POST", "/api/v1/namespaces/default/pods", b"{not json", "application/json", 400, "BadRequest"),
        ("POST", "/api/v1/namespaces/default/pods", b"kind: [", "application/yaml", 400, "BadRequest"),
        ("POST", "/api/v1/namespaces/default/pods", json.dumps(NODE).encode(), "application/json", 400, "BadRequest"),
        ("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict",
         json.dumps({**pod("p9"), "spec": {**pod("p9")["spec"], "nodeSelecter": {}}}).encode(),
         "application/json", 400, "BadRequest"),
        ("POST", "/api/v1/namespaces/default/pods",
         json.dumps({**pod("p9"), "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "4x"}}}]}}).encode(),
         "application/json", 422, "Invalid"),
        ("POST", "/api/v1/namespaces/default/pods", json.dumps(pod("p1")).encode(), "application/json", 409, "AlreadyExists"),
        ("PATCH", "/api/v1/namespaces/default/pods/p1", b'[{"op":"remove","path":"/nope"}]',
         "application/json-patch+json", 422, "Invalid"),
        ("PATCH", "/api/v1/namespaces/default/pods/p1", b"{}", "application/apply-patch+yaml", 415, "UnsupportedMediaType"),
        ("PUT", "/api/v1/namespaces/default/pods/p1",
         json.dumps({**pod("p1"), "metadata": {**pod("p1")["metadata"], "resourceVersion": "1"}}).encode(),
         "application/json", 409, "Conflict"),
        ("POST", "/api/v1/namespaces/default/pods/p1/binding",
         b'{"metadata":{"name":"p1"},"target":{"kind":"Node","name":"n1"}}', "application/json", 409, "Conflict"),
        ("GET", "/api/v1/namespaces/default/pods/nope", None, "application/json", 404, "NotFound"),
        ("POST", "/apis/apps/v1/namespaces/default/deployments", json.dumps({"kind": "Deployment", "metadata": {"name": "d"}}).encode(),
         "application/json", 405, "MethodNotAllowed"),
    ],
    ids=["json", "yaml", "wrong-kind", "strict-unknown", "bad-quantity", "exists", "json-patch-fails",
         "server-side-apply", "stale-update", "already-bound", "not-found", "not-stored-kind"],
)  # fmt: skip
def test_bad_request_gets_the_api_servers_status(
    http: Http,
    store: Store,
    method: str,
    path: str,
    body: bytes | None,
    content_type: str,
    code: int,
    reason: str,
) -> None:
    store.apply(NODE)
    store.apply(pod("p1"))
    store.bind("default/p1", "n1")
    store.apply(pod("p1"))  # rv of p1 is now past "1"
    rv = store.resource_version()
    got, _, data = http.request(method, path, body, content_type=content_type)
    status = json.loads(data)
    assert (got, status["kind"], status["reason"], status["code"]) == (code, "Status", reason, code)
    assert store.resource_version() == rv


def test_missing_or_wrong_token_is_401(http: Http) -> None:
    code, _, data = http.request("GET", "/api/v1/pods", token="wrong")
    assert code == 401 and json.loads(data)["reason"] == "Unauthorized"
