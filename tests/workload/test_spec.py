"""Workload files: the compact Workload format and plain Kubernetes YAML."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest
import redis

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.errors import InvalidObjectError
from cluster_sched.store.store import Store
from cluster_sched.workload.spec import load_workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

WORKLOAD = """\
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {name: demo}
spec:
  objects:
  - {apiVersion: v1, kind: Namespace, metadata: {name: team}}
  nodeGroups:
  - count: 5
    template:
      apiVersion: v1
      kind: Node
      metadata: {name: node, labels: {pool: general}}
      status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    labels:
      topology.kubernetes.io/zone: [zone-a, zone-b, zone-c]
  podGroups:
  - name: web
    count: 4
    rate: 50
    wait: false
    labels: {color: [red, blue]}
    template:
      apiVersion: v1
      kind: Pod
      metadata: {generateName: web-, namespace: team, labels: {app: web}}
      spec:
        containers:
        - {name: c, image: nginx, resources: {requests: {cpu: 250m}}}
  - count: 2
    template:
      apiVersion: v1
      kind: Pod
      metadata: {name: batch}
      spec: {containers: [{name: c, image: busybox}]}
"""


def write(tmp_path: Path, text: str, name: str = "w.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_workload_format(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, WORKLOAD))
    assert w.name == "demo"
    assert [o["kind"] for o in w.objects] == ["Namespace"]

    nodes = [parse_node(d) for d in w.node_docs]
    assert [n.name for n in nodes] == [f"node-{i}" for i in range(5)]
    zones = [n.labels["topology.kubernetes.io/zone"] for n in nodes]
    assert zones == ["zone-a", "zone-b", "zone-c", "zone-a", "zone-b"]
    assert all(n.labels["pool"] == "general" for n in nodes)
    assert [n.labels["kubernetes.io/hostname"] for n in nodes] == [n.name for n in nodes]
    assert nodes[0].allocatable["cpu"] == 4000

    web, batch = w.pod_groups
    assert (web.name, web.count, web.rate, web.wait) == ("web", 4, 50.0, False)
    assert (batch.name, batch.count, batch.rate, batch.wait) == ("group-1", 2, 0.0, True)
    pods = [parse_pod(d) for d in web.manifests()]
    assert [p.key for p in pods] == [f"team/web-{i}" for i in range(4)]
    assert [p.labels["color"] for p in pods] == ["red", "blue", "red", "blue"]
    assert all(p.labels["app"] == "web" and p.requests["cpu"] == 250 for p in pods)
    assert [parse_pod(d).key for d in batch.manifests()] == ["default/batch-0", "default/batch-1"]
    assert w.total_pods == 6
    assert w.invalid == []
    # Manifests are fresh copies: mutating one does not leak into the next.
    first = next(web.manifests())
    first["metadata"]["labels"]["app"] = "changed"
    assert next(web.manifests())["metadata"]["labels"]["app"] == "web"


def test_shared_manifests_equal_the_copies_and_the_store_leaves_them_as_they_are(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """The feeder's manifests share the template's parts below metadata: equal to the
    fresh copies, and writing them changes neither them nor the template."""
    w = load_workload(write(tmp_path, WORKLOAD))
    web = w.pod_groups[0]
    template = copy.deepcopy(web.template)
    shared = list(web.manifests(shared=True))
    assert shared == list(web.manifests())
    assert shared[0]["spec"] is shared[1]["spec"]
    assert shared[0]["metadata"] is not shared[1]["metadata"]
    before = copy.deepcopy(shared)
    redis_client.flushall()
    store = Store(redis_client)
    store.apply_many(w.objects)
    store.apply_many(shared)
    assert shared == before and web.template == template
    stored = store.list("Pod")
    assert [parse_pod(d).key for d in stored] == [f"team/web-{i}" for i in range(4)]


def test_examples_load() -> None:
    w = load_workload(EXAMPLES / "scheduling-basic.yaml")
    assert len(w.node_docs) == 5000
    assert [(g.name, g.count) for g in w.pod_groups] == [("initial", 1000), ("measured", 10000)]
    measured = parse_pod(next(w.pod_groups[1].manifests()))
    assert measured.key == "default/measured-pod-0"
    assert measured.requests == {"cpu": 100, "memory": 500 * 1024 * 1024}


PLAIN = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", pods: "10"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: Pod
metadata: {name: first, namespace: team}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: broken, namespace: team}
spec:
  containers:
  - name: c
    image: x
    resources: {requests: {memory: 12 bananas}}
---
apiVersion: v1
kind: Pod
metadata: {name: second, namespace: team}
spec: {containers: [{name: c, image: x}]}
"""


def test_plain_yaml_skips_and_reports_a_malformed_pod(tmp_path: Path) -> None:
    path = write(tmp_path, PLAIN, "plain.yaml")
    w = load_workload(path)
    assert w.name == "plain"
    assert [d["metadata"]["name"] for d in w.node_docs] == ["n1"]
    assert [o["kind"] for o in w.objects] == ["Namespace"]
    (group,) = w.pod_groups
    assert [d["metadata"]["name"] for d in group.manifests()] == ["first", "second"]
    assert group.count == 2
    (line,) = w.invalid
    assert "Pod team/broken" in line
    assert "field spec.containers[0].resources.requests.memory" in line
    assert str(path) in line
    assert "\n" not in line


def test_plain_yaml_with_a_malformed_node_fails(tmp_path: Path) -> None:
    text = (
        'apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: "four"}}\n'
    )
    with pytest.raises(InvalidObjectError) as err:
        load_workload(write(tmp_path, text))
    assert "Node n1" in str(err.value) and "status.allocatable.cpu" in str(err.value)


def _workload_with(group: str) -> str:
    head = "apiVersion: cluster-sched.io/v1alpha1\nkind: Workload\nmetadata: {name: bad}\nspec:\n"
    return head + textwrap.indent(textwrap.dedent(group), "  ")


INVALID: dict[str, tuple[str, str]] = {
    "pod-template-quantity": (
        """\
        podGroups:
        - count: 3
          template:
            apiVersion: v1
            kind: Pod
            metadata: {name: p}
            spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}
        """,
        "spec.podGroups[0].template.spec.containers[0].resources.requests.cpu",
    ),
    "node-template-taint": (
        """\
        nodeGroups:
        - count: 2
          template:
            apiVersion: v1
            kind: Node
            metadata: {name: n}
            spec: {taints: [{key: k, effect: Sometimes}]}
        """,
        "spec.nodeGroups[0].template.spec.taints[0].effect",
    ),
    "negative-count": (
        """\
        podGroups:
        - count: -1
          template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}
        """,
        "spec.podGroups[0].count",
    ),
    "bad-rate": (
        """\
        podGroups:
        - count: 1
          rate: fast
          template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}
        """,
        "spec.podGroups[0].rate",
    ),
    "bad-object": (
        """\
        objects:
        - {apiVersion: v1, kind: Namespace, metadata: {name: "Not_A_DNS_Label"}}
        """,
        "spec.objects[0]",
    ),
}


@pytest.mark.parametrize("case", list(INVALID.values()), ids=list(INVALID))
def test_invalid_workload_is_one_line_naming_object_and_field(
    tmp_path: Path, case: tuple[str, str]
) -> None:
    body, field = case
    path = write(tmp_path, _workload_with(body))
    with pytest.raises(InvalidObjectError) as err:
        load_workload(path)
    line = str(err.value)
    assert "\n" not in line
    assert f"field {field}" in line, line
    assert str(path) in line
    assert err.value.obj, "names the object"


def test_unsupported_api_version(tmp_path: Path) -> None:
    text = WORKLOAD.replace("cluster-sched.io/v1alpha1", "cluster-sched.io/v9")
    with pytest.raises(
        InvalidObjectError, match=r'field apiVersion: unsupported apiVersion "cluster-sched.io/v9"'
    ):
        load_workload(write(tmp_path, text))


@pytest.mark.parametrize("text", ["", "\n# no objects\n---\n---\n"], ids=["empty", "comments"])
def test_an_empty_workload_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """Issue 26 finding 9: ``run`` of an empty file used to report an empty evaluation
    as a success (rc 0)."""
    from cluster_sched.cli import main

    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(InvalidObjectError, match="the file holds no objects"):
        load_workload(path)
    assert main(["run", str(path), "--quiet"]) == 2
    assert capsys.readouterr().err == f"error: {path}: the file holds no objects (empty workload)\n"
