"""The informer: the store's event stream as typed (old, new) handler calls.

A malformed object (one the store accepted but the manifest parser rejects) is reported
once, naming the object and field, treated as gone, and never stops the stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from cluster_sched.api.manifest import parse_pod
from cluster_sched.errors import InvalidObjectError
from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_namespace, make_node, make_pod
from tests.scheduler.coordinator_harness import Harness, node, pod


@dataclass
class Recorder:
    calls: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    invalid: list[tuple[str, str, str]] = field(default_factory=list)
    pods: list[tuple[Any, Any]] = field(default_factory=list)

    @staticmethod
    def _name(obj: Any) -> str | None:
        return None if obj is None else obj.meta.name

    def handlers(self) -> InformerHandlers:
        def on_pod(old: Any, new: Any) -> None:
            self.calls.append(("Pod", self._name(old), self._name(new)))
            self.pods.append((old, new))

        def on_node(old: Any, new: Any) -> None:
            self.calls.append(("Node", self._name(old), self._name(new)))

        def on_other(kind: str, old: Any, new: Any) -> None:
            self.calls.append((kind, self._name(old), self._name(new)))

        def on_invalid(kind: str, key: str, err: InvalidObjectError) -> None:
            self.invalid.append((kind, key, str(err)))

        return InformerHandlers(on_pod, on_node, on_other, on_invalid)


BAD_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "bad", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]},
}


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def informer(store: Store, rec: Recorder) -> Informer:
    return Informer(store, rec.handlers())


def test_listing_delivers_nodes_before_pods(
    store: Store, informer: Informer, rec: Recorder
) -> None:
    store.apply_many(
        [
            make_pod("p").manifest(),
            make_namespace("team").raw,
            make_node("n1").manifest(),
        ]
    )
    informer.list_and_watch()
    kinds = [c[0] for c in rec.calls]
    assert kinds.index("Node") < kinds.index("Pod")
    assert ("Namespace", None, "team") in rec.calls
    # The watch continues after the listing: nothing is delivered twice.
    assert informer.poll() == 0
    store.apply(make_node("n2").manifest())
    assert informer.poll() == 1
    assert rec.calls[-1] == ("Node", None, "n2")


def test_updates_and_deletes_carry_the_old_object(
    store: Store, informer: Informer, rec: Recorder
) -> None:
    informer.list_and_watch()
    store.apply(make_pod("p").label("v", "1").manifest())
    store.apply(make_pod("p").label("v", "2").manifest())
    store.delete("Pod", "default/p")
    informer.poll()
    labels = [
        (None if old is None else old.labels["v"], None if new is None else new.labels["v"])
        for old, new in rec.pods
    ]
    assert labels == [(None, "1"), ("1", "2"), ("2", None)]
    assert "default/p" not in informer.pods


def test_binding_fast_path_equals_a_full_parse(
    store: Store, informer: Informer, rec: Recorder
) -> None:
    store.apply_many(
        [make_node("n1").manifest(), make_pod("p").req(cpu="1").label("a", "b").manifest()]
    )
    informer.list_and_watch()
    assert store.bind("default/p", "n1").ok
    informer.poll()
    old, new = rec.pods[-1]
    assert old.node_name == "" and new.node_name == "n1"
    assert new == parse_pod(store.get("Pod", "default/p"))


def test_malformed_object_is_reported_skipped_and_the_stream_goes_on(
    store: Store,
    informer: Informer,
    rec: Recorder,
) -> None:
    informer.list_and_watch()
    store.apply(make_pod("good-1").manifest())
    store.apply(BAD_POD)
    store.apply(make_pod("good-2").manifest())
    assert informer.poll() == 3
    assert [c for c in rec.calls if c[0] == "Pod"] == [
        ("Pod", None, "good-1"),
        ("Pod", None, "good-2"),
    ]
    ((kind, key, line),) = rec.invalid
    assert (kind, key) == ("Pod", "default/bad")
    assert "Pod default/bad" in line and "spec.containers[0].resources.requests.cpu" in line
    assert "\n" not in line

    # The same bad object again is not reported again.
    bad = dict(BAD_POD, metadata={**BAD_POD["metadata"], "labels": {"again": "yes"}})
    store.apply(bad)
    informer.poll()
    assert len(rec.invalid) == 1


def test_a_pod_turning_malformed_is_treated_as_deleted(
    store: Store, informer: Informer, rec: Recorder
) -> None:
    informer.list_and_watch()
    store.apply(make_pod("bad").manifest())
    store.apply(BAD_POD)
    informer.poll()
    assert rec.calls == [("Pod", None, "bad"), ("Pod", "bad", None)]
    assert "default/bad" not in informer.pods
    # Fixed again: it comes back.
    store.apply(make_pod("bad").manifest())
    informer.poll()
    assert rec.calls[-1] == ("Pod", None, "bad")


def test_coordinator_reports_malformed_pod_and_schedules_the_rest(
    make_harness: Any,
    redis_client: redis.Redis,
) -> None:
    h: Harness = make_harness()
    h.apply(node("n1"), pod("a"))
    h.store.apply(BAD_POD)
    h.apply(pod("b"))
    h.start()
    h.cycle()
    h.cycle()
    h.settle()
    assert h.node_of("default/a") == "n1"
    assert h.node_of("default/b") == "n1"
    assert h.node_of("default/bad") is None
    (line,) = h.coord.invalid_objects
    assert "Pod default/bad" in line and "requests.cpu" in line
    (event,) = h.store.events(key="default/bad", reason="FailedParsing")
    assert event["type"] == "Warning" and event["message"] == line


def test_finished_pods_are_not_seen(store: Store, informer: Informer, rec: Recorder) -> None:
    """upstream lists pods with status.phase!=Succeeded,status.phase!=Failed: a pod that
    finishes leaves the informer as a delete, one listed finished never arrives."""
    store.apply_many(
        [
            make_node("n1").manifest(),
            make_pod("done").node("n1").phase("Succeeded").manifest(),
            make_pod("running").node("n1").phase("Running").manifest(),
        ]
    )
    informer.list_and_watch()
    assert ("Pod", None, "done") not in rec.calls
    assert ("Pod", None, "running") in rec.calls
    store.apply(make_pod("running").node("n1").phase("Failed").manifest())
    informer.poll()
    assert rec.calls[-1] == ("Pod", "running", None)
    assert set(informer.pods) == set()
