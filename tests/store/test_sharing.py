"""ManifestSharing: equal parts of kept manifests are one object, and nothing else changes."""

from __future__ import annotations

import copy
from typing import Any

from cluster_sched.store.sharing import ManifestSharing


def pod_doc(name: str, node: str = "", image: str = "pause") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": "1"}}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": spec,
    }


def test_replicas_share_their_equal_parts_and_keep_their_own_fields() -> None:
    sharing = ManifestSharing()
    a, b = sharing.manifest(pod_doc("a", "n1")), sharing.manifest(pod_doc("b", "n2"))
    assert a == pod_doc("a", "n1") and b == pod_doc("b", "n2")
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    # level one is each manifest's own: a per-object field lives there
    assert a["spec"] is not b["spec"] and a["metadata"] is not b["metadata"]
    assert sharing.hits == 2


def test_the_input_is_left_as_it_was() -> None:
    doc = pod_doc("a")
    before = copy.deepcopy(doc)
    out = ManifestSharing().manifest(doc)
    assert doc == before and out is not doc and out["spec"] is not doc["spec"]


def test_values_equal_in_python_but_not_in_type_are_not_shared() -> None:
    sharing = ManifestSharing()
    docs = [{"kind": "X", "spec": {"v": [value]}} for value in (1, 1.0, True)]
    outs = [sharing.manifest(d) for d in docs]
    assert [type(o["spec"]["v"][0]) for o in outs] == [int, float, bool]
    assert sharing.hits == 0


def test_different_values_are_not_shared() -> None:
    sharing = ManifestSharing()
    a = sharing.manifest(pod_doc("a", image="one"))
    b = sharing.manifest(pod_doc("b", image="two"))
    assert a["spec"]["containers"][0]["image"] == "one"
    assert b["spec"]["containers"][0]["image"] == "two"


def test_the_cache_starts_over_when_full_and_still_shares_afterwards() -> None:
    sharing = ManifestSharing(size=2)
    first = sharing.manifest(pod_doc("a"))
    for i in range(5):  # unique values fill the cache
        sharing.manifest({"kind": "X", "spec": {"v": [i]}})
    later = [sharing.manifest(pod_doc(n)) for n in ("b", "c")]
    assert later[0]["spec"] == first["spec"]
    assert later[0]["spec"]["containers"] is later[1]["spec"]["containers"]
