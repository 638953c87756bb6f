"""The informer keeps pods' and nodes' manifests with equal parts shared (memory at a
million objects). Sharing must be invisible: each object's manifest and parsed fields
stay its own under updates, and a relist still tells changed objects from unchanged."""

from __future__ import annotations

import copy
from typing import Any

from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.store.store import Store
from cluster_sched.testing import make_node, make_pod


def _informer(store: Store, seen: list[tuple[Any, Any]]) -> Informer:
    return Informer(
        store,
        InformerHandlers(
            on_pod=lambda old, new: seen.append((old, new)),
            on_node=lambda old, new: None,
        ),
    )


def test_replicas_share_manifest_parts_and_parsed_containers_even_when_bound(
    store: Store,
) -> None:
    store.apply_many([make_node(f"n{i}").capacity(cpu="4", pods=10).manifest() for i in (1, 2)])
    store.apply_many([make_pod(name).req(cpu="100m").manifest() for name in ("a", "b")])
    informer = _informer(store, [])
    informer.list_and_watch()
    for name, node in (("a", "n1"), ("b", "n2")):
        uid = informer.pods[f"default/{name}"].uid
        assert store.bind(f"default/{name}", node, uid).ok
    informer.poll()
    a, b = informer.pods["default/a"], informer.pods["default/b"]
    assert (a.node_name, b.node_name) == ("n1", "n2")
    assert a.raw is not None and b.raw is not None
    assert a.raw["spec"]["containers"] is b.raw["spec"]["containers"]
    assert a.containers is b.containers and a.requests is b.requests
    assert (a.raw["spec"]["nodeName"], b.raw["spec"]["nodeName"]) == ("n1", "n2")
    n1, n2 = informer.nodes["n1"], informer.nodes["n2"]
    assert n1.raw is not None and n2.raw is not None
    assert n1.raw["status"]["capacity"] is n2.raw["status"]["capacity"]


def test_updating_one_replica_leaves_the_others_manifest_and_fields_alone(
    store: Store,
) -> None:
    store.apply_many([make_pod(n).req(cpu="100m").label("app", "web").manifest() for n in "ab"])
    informer = _informer(store, [])
    informer.list_and_watch()
    b_before = copy.deepcopy(dict(informer.pods["default/b"].raw or {}))
    store.apply(make_pod("a").req(cpu="2").label("app", "db").manifest())
    informer.poll()
    a, b = informer.pods["default/a"], informer.pods["default/b"]
    assert a.requests["cpu"] == 2000 and a.labels == {"app": "db"}
    assert b.requests["cpu"] == 100 and b.labels == {"app": "web"}
    assert b.raw == b_before


def test_a_relist_reports_changed_objects_only(redis_client: Any) -> None:
    store = Store(redis_client, events_maxlen=1)
    seen: list[tuple[Any, Any]] = []
    informer = _informer(store, seen)
    store.apply_many([make_pod(n).req(cpu="100m").manifest() for n in ("same", "changed")])
    informer.list_and_watch()
    seen.clear()
    store.apply(make_pod("changed").req(cpu="1").manifest())
    informer.relists += 1
    informer.list_and_watch()  # what a trimmed stream's watcher does
    assert [(o.key, n.key) for o, n in seen] == [("default/changed", "default/changed")]
    assert informer.pods["default/changed"].requests["cpu"] == 1000
