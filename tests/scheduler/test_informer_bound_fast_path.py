"""A binding seen on the watch reuses the parsed pod (informer.bound_fast_path): what it
gives must be exactly what parsing the bound manifest gives, and anything a binding does
not change makes it step aside."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.scheduler.informer import bound_fast_path
from cluster_sched.store.sharing import ManifestSharing
from cluster_sched.store.store import Store
from cluster_sched.testing import make_pod
from tests.scheduler.informer_helpers import (
    CONDITION,
    PROPERTY,
    pod_statuses,
    recording_informer,
)

_names = itertools.count()

conditions = st.lists(CONDITION, max_size=3, unique_by=lambda c: c["type"])
statuses = pod_statuses(conditions)


@PROPERTY
@given(
    status=statuses,
    cpu=st.sampled_from(["100m", "1", "2500m"]),
    labels=st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"])),
    priority=st.one_of(st.none(), st.integers(-5, 5)),
)
def test_a_binding_seen_on_the_watch_is_the_parse_of_the_bound_manifest(
    store: Store,
    redis_client: redis.Redis,
    status: dict[str, Any] | None,
    cpu: str,
    labels: dict[str, str],
    priority: int | None,
) -> None:
    redis_client.flushall()
    name = f"p{next(_names)}"
    pod = make_pod(name).req(cpu=cpu)
    for k, v in labels.items():
        pod = pod.label(k, v)
    doc = pod.manifest()
    if priority is not None:
        doc["spec"]["priority"] = priority
    if status is not None:
        doc["status"] = status
    store.apply(doc)
    seen: list[tuple[Any, Any]] = []
    informer = recording_informer(store, seen)
    informer.list_and_watch()
    before = informer.pods[f"default/{name}"]
    assert store.bind(f"default/{name}", "n1", before.uid).ok

    (event,) = store.read_events(informer.last_id)
    fast = bound_fast_path(before, event.obj, ManifestSharing())
    assert fast is not None  # a binding is all that changed
    assert fast == parse_object(event.obj)
    assert fast.raw == event.obj

    informer.poll()
    after = informer.pods[f"default/{name}"]
    assert after == parse_object(store.get("Pod", f"default/{name}"))
    assert seen[-1] == (before, after)
    assert after.containers is before.containers  # the parsed spec, reused


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["metadata"]["labels"].update(app="other"),
        lambda d: d["spec"].update(priority=7),
        lambda d: d["status"].update(phase="Running"),
        lambda d: d["status"].update(nominatedNodeName=5),
        lambda d: d.update(apiVersion="v2"),
        lambda d: d["metadata"].update(resourceVersion=12),
    ],
    ids=["label", "spec field", "phase", "bad nominated type", "apiVersion", "rv not a string"],
)
def test_anything_a_binding_does_not_change_means_a_full_parse(change: Any) -> None:
    doc = make_pod("p").req(cpu="1").label("app", "web").manifest()
    doc["metadata"]["resourceVersion"] = "3"
    doc["status"] = {"phase": "Pending"}
    old = parse_object(doc)
    bound = {
        **doc,
        "metadata": {**doc["metadata"], "labels": dict(doc["metadata"]["labels"]),
                     "resourceVersion": "4"},
        "spec": {**doc["spec"], "nodeName": "n1"},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }  # fmt: skip
    sharing = ManifestSharing()
    assert bound_fast_path(old, bound, sharing) == parse_object(bound)
    change(bound)
    assert bound_fast_path(old, bound, sharing) is None


def test_an_already_bound_pod_is_parsed_again() -> None:
    doc = make_pod("p").req(cpu="1").manifest()
    doc["spec"]["nodeName"] = "n1"
    old = parse_object(doc)
    moved = {**doc, "spec": {**doc["spec"], "nodeName": "n2"}}
    assert bound_fast_path(old, moved, ManifestSharing()) is None
