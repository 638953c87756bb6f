"""A new pod built from its template's first pod equals the full parse of its manifest.

Random runs of pod manifests, most from a few templates (differing in name, uid,
resourceVersion, creationTimestamp), some with another field changed or of another type
(``1`` / ``1.0`` / ``True``), some invalid (a bad name or timestamp, a uid that is not a
string): each is handed to ``PodTemplates`` as the informer does. Whenever it answers,
the Pod and its manifest equal the full parse's; it never answers for a manifest the
parser rejects; and the informer holds the same pods either way.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.errors import InvalidObjectError
from cluster_sched.scheduler.pod_templates import PodTemplates
from cluster_sched.store.sharing import ManifestSharing

# mostly valid own fields (a template is remembered only from a valid pod), a few not
names = st.sampled_from(
    ["web-0", "web-1", "db-7", "a.b", "web-2", "web-3", "Bad_Name", "", "x" * 300]
)
stamps = st.sampled_from(
    ["2026-12-07T12:00:00Z", "2026-12-07T12:00:01Z", "2026-12-07T12:00:02Z", None, "yesterday", 17]
)
priorities = st.sampled_from([None, 0, 1, 1.0, True, "1"])


#: What pods of one template share: everything but the own metadata fields.
REST = {
    "order": st.sampled_from(["store", "name-first"]),
    "namespace": st.sampled_from(["default", "team-a"]),
    "labels": st.sampled_from([None, {"app": "web"}, {"app": "db"}, {"app": "db", "x": "y"}]),
    "cpu": st.sampled_from(["100m", "1", 2]),
    "priority": priorities,
    "node": st.sampled_from([None, None, None, "node-1"]),
    "phase": st.sampled_from([None, None, "Pending", "Running"]),
}


@st.composite
def shapes(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A template and up to three near misses, each differing from it in one field."""
    base = {name: draw(values) for name, values in REST.items()}
    out = [base]
    for name in draw(st.lists(st.sampled_from(sorted(REST)), max_size=3)):
        out.append({**base, name: draw(REST[name])})
    return out


@st.composite
def pod_docs(draw: st.DrawFn, templates: list[dict[str, Any]]) -> dict[str, Any]:
    rest = draw(st.sampled_from(templates))
    meta: dict[str, Any] = {}
    # the store's order first (uid, resourceVersion), or the name first
    if rest["order"] == "name-first":
        meta["name"] = draw(names)
    uid = draw(st.sampled_from(["u-1", "u-2", "u-3", "u-4", "u-5", None, 5]))
    if uid is not None or draw(st.booleans()):
        meta["uid"] = uid
    meta["resourceVersion"] = draw(st.sampled_from(["1", "2", "30"]))
    meta.setdefault("name", draw(names))
    meta["namespace"] = rest["namespace"]
    stamp = draw(stamps)
    if stamp is not None:
        meta["creationTimestamp"] = stamp
    if rest["labels"] is not None:
        meta["labels"] = dict(rest["labels"])
    requests = {"cpu": rest["cpu"]}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]
    }
    if rest["priority"] is not None:
        spec["priority"] = rest["priority"]
    if rest["node"] is not None:
        spec["nodeName"] = rest["node"]
    doc: dict[str, Any] = {"metadata": meta, "apiVersion": "v1", "kind": "Pod", "spec": spec}
    if rest["phase"] is not None:
        doc["status"] = {"phase": rest["phase"]}
    return doc


def full_parse(doc: dict[str, Any], sharing: ManifestSharing) -> Any:
    manifest = sharing.manifest(doc)
    try:
        return parse_object(manifest), manifest
    except InvalidObjectError:
        return None, manifest


@settings(max_examples=300, deadline=None)
@given(data=st.data(), kinds=shapes())
def test_a_templated_pod_equals_the_full_parse(
    data: st.DataObject, kinds: list[dict[str, Any]]
) -> None:
    docs = data.draw(st.lists(pod_docs(kinds), min_size=1, max_size=30))
    templates, sharing = PodTemplates(size=3), ManifestSharing()
    for doc in docs:
        expected, manifest = full_parse(doc, sharing)
        key = templates.key(doc)
        built = templates.pod(key, doc) if key is not None else None
        if built is None:
            if key is not None and expected is not None:
                templates.remember(key, expected, manifest)
            continue
        assert expected is not None, f"the parser rejects {doc}"
        assert built == expected
        assert built.key == expected.key
        assert built.raw == doc == expected.raw


def test_a_burst_of_one_template_is_parsed_once() -> None:
    templates, sharing = PodTemplates(), ManifestSharing()
    made = []
    for i in range(5):
        doc = {
            "metadata": {"uid": f"u{i}", "name": f"p{i}", "namespace": "default"},
            "kind": "Pod",
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
        }
        key = templates.key(doc)
        assert key is not None
        pod = templates.pod(key, doc)
        if pod is None:
            pod = parse_object(sharing.manifest(doc))
            templates.remember(key, pod, sharing.manifest(doc))
        made.append(pod)
    assert templates.hits == 4
    assert [p.key for p in made] == [f"default/p{i}" for i in range(5)]
    assert [p.uid for p in made] == [f"u{i}" for i in range(5)]
