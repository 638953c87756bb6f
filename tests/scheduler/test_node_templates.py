"""A new node built from its pool's first node equals the full parse of its manifest.

Random runs of node manifests, most from a few pools (differing in name, uid,
resourceVersion, creationTimestamp and the hostname label), some with another field
changed or of another type, some invalid (a bad name, hostname value or timestamp, a uid
that is not a string, labels that are not a map): each is handed to ``NodeTemplates`` as
the informer does. Whenever it answers, the Node (labels in order: the node table
interns them in that order) and its manifest equal the full parse's; it never answers
for a manifest the parser rejects.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.errors import InvalidObjectError
from cluster_sched.scheduler.node_templates import HOSTNAME_LABEL, NodeTemplates
from cluster_sched.store.sharing import ManifestSharing

names = st.sampled_from(["node-0", "node-1", "n.2", "node-3", "Bad_Name", "", "x" * 300])
hosts = st.sampled_from(["node-0", "h1", "h-2", "", "bad host!", 7, None, "absent"])
stamps = st.sampled_from(["2026-12-07T12:00:00Z", "2026-12-07T12:00:01Z", None, "soon", 17])

#: What nodes of one pool share: everything but the own metadata fields.
REST = {
    "labels": st.sampled_from(
        [None, {}, {"zone": "a"}, {"zone": "b", "disk": "ssd"}, {"bad key!": "x"}, ["x"]]
    ),
    "host_first": st.booleans(),
    "cpu": st.sampled_from(["4", "8", 4, "1.5"]),
    "unschedulable": st.sampled_from([None, True, False, 1]),
    "taint": st.sampled_from([None, "gpu", "Bad Key"]),
    "annotations": st.sampled_from([None, {"a": "b"}]),
}


@st.composite
def shapes(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A pool and up to three near misses, each differing from it in one field."""
    base = {name: draw(values) for name, values in REST.items()}
    out = [base]
    for name in draw(st.lists(st.sampled_from(sorted(REST)), max_size=3)):
        out.append({**base, name: draw(REST[name])})
    return out


@st.composite
def node_docs(draw: st.DrawFn, pools: list[dict[str, Any]]) -> dict[str, Any]:
    rest = draw(st.sampled_from(pools))
    meta: dict[str, Any] = {"name": draw(names)}
    uid = draw(st.sampled_from(["u-1", "u-2", None, 5]))
    if uid is not None or draw(st.booleans()):
        meta["uid"] = uid
    meta["resourceVersion"] = draw(st.sampled_from(["1", "2", "30"]))
    stamp = draw(stamps)
    if stamp is not None:
        meta["creationTimestamp"] = stamp
    labels = rest["labels"]
    host = draw(hosts)
    if isinstance(labels, dict):
        labels = dict(labels)
        if host != "absent":
            labels = (
                {HOSTNAME_LABEL: host, **labels}
                if rest["host_first"]
                else {**labels, HOSTNAME_LABEL: host}
            )
    if labels is not None:
        meta["labels"] = labels
    if rest["annotations"] is not None:
        meta["annotations"] = dict(rest["annotations"])
    spec: dict[str, Any] = {}
    if rest["unschedulable"] is not None:
        spec["unschedulable"] = rest["unschedulable"]
    if rest["taint"] is not None:
        spec["taints"] = [{"key": rest["taint"], "effect": "NoSchedule"}]
    allocatable = {"cpu": rest["cpu"], "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def full_parse(doc: dict[str, Any], sharing: ManifestSharing) -> Any:
    manifest = sharing.manifest(doc)
    try:
        return parse_object(manifest), manifest
    except InvalidObjectError:
        return None, manifest


@settings(max_examples=400, deadline=None)
@given(data=st.data(), pools=shapes())
def test_a_pooled_node_equals_the_full_parse(
    data: st.DataObject, pools: list[dict[str, Any]]
) -> None:
    docs = data.draw(st.lists(node_docs(pools), min_size=1, max_size=30))
    templates, sharing = NodeTemplates(size=3), ManifestSharing()
    for doc in docs:
        expected, manifest = full_parse(doc, sharing)
        key = templates.key(doc)
        built = templates.node(key, doc) if key is not None else None
        if built is None:
            if key is not None and expected is not None:
                templates.remember(key, expected, manifest)
            continue
        assert expected is not None, f"the parser rejects {doc}"
        assert built == expected
        assert list(built.labels.items()) == list(expected.labels.items())
        assert built.raw == doc == expected.raw


def test_a_pool_is_parsed_once_and_shares_its_allocatable() -> None:
    templates, sharing = NodeTemplates(), ManifestSharing()
    made = []
    for i in range(5):
        doc = {
            "kind": "Node",
            "metadata": {"name": f"n{i}", "uid": f"u{i}", "labels": {HOSTNAME_LABEL: f"n{i}"}},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}},
        }
        key = templates.key(doc)
        assert key is not None
        node = templates.node(key, doc)
        if node is None:
            node = parse_object(sharing.manifest(doc))
            templates.remember(key, node, sharing.manifest(doc))
        made.append(node)
    assert templates.hits == 4
    assert [n.labels[HOSTNAME_LABEL] for n in made] == [f"n{i}" for i in range(5)]
    assert all(n.allocatable is made[0].allocatable for n in made)
