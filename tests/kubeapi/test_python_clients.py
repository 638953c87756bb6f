"""The official ``kubernetes`` client and lightkube against the API: list, watch with
resourceVersion resume, an external scheduler's binding, 410 Expired then relist."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from cluster_sched.kubeapi import ApiServer, ApiServerOptions
from cluster_sched.store import Store
from tests.kubeapi.kube_helpers import NODE, pod


@pytest.fixture
def core(api: ApiServer, tmp_path: Path) -> Iterator[k8s.CoreV1Api]:
    path = api.write_kubeconfig(str(tmp_path / "kubeconfig"))
    api_client = k8s_config.new_client_from_config(config_file=path)
    try:
        yield k8s.CoreV1Api(api_client)
    finally:
        api_client.close()


def test_list_and_watch_resume_from_resource_version(core: k8s.CoreV1Api, store: Store) -> None:
    store.apply(NODE)
    store.apply(pod("p1"))
    listed = core.list_namespaced_pod("default")
    assert [p.metadata.name for p in listed.items] == ["p1"]
    rv = listed.metadata.resource_version
    store.apply(pod("p2"))
    store.bind("default/p1", "n1")
    seen = []
    w = k8s_watch.Watch()
    for event in w.stream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5
    ):
        seen.append((event["type"], event["object"].metadata.name, event["object"].spec.node_name))
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "p2", None), ("MODIFIED", "p1", "n1")]


def test_external_scheduler_binds_through_bindings(core: k8s.CoreV1Api, store: Store) -> None:
    store.apply(NODE)
    store.apply(pod("p1", schedulerName="my-scheduler"))
    body = k8s.V1Binding(
        metadata=k8s.V1ObjectMeta(name="p1"),
        target=k8s.V1ObjectReference(kind="Node", name="n1"),
    )
    resp = core.create_namespaced_binding("default", body, _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data)["status"] == "Success"
    stored = store.get("Pod", "default/p1")
    assert stored["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= stored["status"]["conditions"][
        0
    ].items()
    with pytest.raises(ApiException) as again:
        core.create_namespaced_binding("default", body, _preload_content=False)
    assert again.value.status == 409
    assert "already assigned" in json.loads(again.value.body)["message"]


def test_binding_to_missing_node_stores_nothing(core: k8s.CoreV1Api, store: Store) -> None:
    store.apply(pod("p1"))
    before = store.resource_version()
    body = k8s.V1Binding(
        metadata=k8s.V1ObjectMeta(name="p1"), target=k8s.V1ObjectReference(kind="Node", name="gone")
    )
    with pytest.raises(ApiException) as err:
        core.create_namespaced_binding("default", body, _preload_content=False)
    assert err.value.status == 404
    assert store.resource_version() == before


def test_expired_resource_version_then_relist(store: Store, tmp_path: Path) -> None:
    store.apply(NODE)
    first_rv = store.resource_version()
    with ApiServer(store, ApiServerOptions(watch_window=5)) as api:
        api_client = k8s_config.new_client_from_config(
            config_file=api.write_kubeconfig(str(tmp_path / "kc"))
        )
        core = k8s.CoreV1Api(api_client)
        for i in range(30):
            store.apply(pod(f"p{i}"))
        w = k8s_watch.Watch()
        with pytest.raises(ApiException) as gone:
            for _ in w.stream(
                core.list_namespaced_pod,
                "default",
                resource_version=str(first_rv),
                timeout_seconds=5,
            ):
                pass
        assert gone.value.status == 410
        relisted = core.list_namespaced_pod("default")
        assert len(relisted.items) == 30
        store.apply(pod("late"))
        names = []
        for event in w.stream(
            core.list_namespaced_pod,
            "default",
            resource_version=relisted.metadata.resource_version,
            timeout_seconds=5,
        ):
            names.append(event["object"].metadata.name)
            w.stop()
        assert names == ["late"]
        api_client.close()


def test_lightkube_lists_and_watches(api: ApiServer, store: Store, tmp_path: Path) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.resources.core_v1 import Node, Pod

    config = KubeConfig.from_file(api.write_kubeconfig(str(tmp_path / "kc")))
    lk = Client(config=config)
    store.apply(NODE)
    store.apply(pod("p1"))
    assert [n.metadata.name for n in lk.list(Node)] == ["n1"]
    assert [p.metadata.name for p in lk.list(Pod, namespace="default")] == ["p1"]
    lk.patch(Pod, "p1", {"metadata": {"labels": {"lk": "yes"}}}, namespace="default")
    assert store.get("Pod", "default/p1")["metadata"]["labels"]["lk"] == "yes"
    for op, obj in lk.watch(Pod, namespace="default", resource_version="0"):
        assert (op, obj.metadata.name) == ("ADDED", "p1")
        break
