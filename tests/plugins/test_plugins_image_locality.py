"""ImageLocality: normalized image names, spread scaling, thresholds.

Expected scores are worked out by hand from upstream's formula (comments show the
arithmetic); the first three are upstream image_locality_test.go cases.
"""

from __future__ import annotations

import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Node, Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.nodetable.images import normalized_image_name
from cluster_sched.plugins.imagelocality import new
from cluster_sched.testing.builders import make_node, make_pod

MB = 1024 * 1024


@pytest.mark.parametrize(
    ("image", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("gcr.io/40", "gcr.io/40:latest"),
        ("localhost:5000/img", "localhost:5000/img:latest"),  # a registry port is not a tag
        ("localhost:5000/img:v2", "localhost:5000/img:v2"),
        ("registry.example.com:443/team/app", "registry.example.com:443/team/app:latest"),
        ("img@sha256:0123abcd", "img@sha256:0123abcd"),
    ],
    ids=lambda v: v,
)
def test_normalized_image_name(image: str, normalized: str) -> None:
    assert normalized_image_name(image) == normalized


def _node(name: str, *images: tuple[int, str]) -> Node:
    b = make_node(name).capacity(pods=10)
    for size_mb, names in images:
        first, *aliases = names.split()
        b = b.image(first, size_mb * MB, *aliases)
    return b.obj()


def _pod(*images: str, init: tuple[str, ...] = ()) -> Pod:
    doc = make_pod("p").manifest()
    doc["spec"]["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    if init:
        doc["spec"]["initContainers"] = [
            {"name": f"i{i}", "image": im} for i, im in enumerate(init)
        ]
    return parse_pod(doc, source="<test>")


def _scores(nodes: list[Node], pod: Pod) -> dict[str, int]:
    cache = Cache()
    cache.load(nodes)
    handle = Handle()
    handle.snapshot = cache.snapshot
    table = cache.sink.table  # type: ignore[attr-defined]
    raw = new(None, handle).score(CycleState(), pod, NodeSlice(table, table.order()))
    return {
        table.names[r]: int(s) for r, s in zip(table.order().tolist(), raw.tolist(), strict=True)
    }


N403002000 = (
    (40, "gcr.io/40:latest gcr.io/40:v1"),
    (300, "gcr.io/300:latest gcr.io/300:v1"),
    (2000, "gcr.io/2000:latest"),
)
N25010 = ((250, "gcr.io/250:latest"), (10, "gcr.io/10:latest gcr.io/10:v1"))
N203040 = ((20, "gcr.io/20:latest"), (30, "gcr.io/30:latest"), (40, "gcr.io/40:latest"))


@pytest.mark.parametrize(
    ("nodes", "pod", "want"),
    [
        pytest.param(
            # node1: 40M*1/2 = 20M < 23M -> 0; node2: 100*(250M/2-23M)/(2*1000M-23M) = 5
            [_node("node1", *N403002000), _node("node2", *N25010)],
            _pod("gcr.io/40", "gcr.io/250"),
            {"node1": 0, "node2": 5},
            id="upstream-two-images-spread-prefer-larger",
        ),
        pytest.param(
            # node1: 100*((40M+300M)/2-23M)/(2*1000M-23M) = 7
            [_node("node1", *N403002000), _node("node2", *N25010)],
            _pod("gcr.io/40", "gcr.io/300"),
            {"node1": 7, "node2": 0},
            id="upstream-two-images-on-one-node",
        ),
        pytest.param(
            # init containers count, and in maxThreshold: 100*(300M/3-23M)/(2*1000M-23M) = 3
            [_node("node1", *N403002000), _node("node2", *N25010), _node("node3", *N203040)],
            _pod("gcr.io/30", init=("gcr.io/300",)),
            {"node1": 3, "node2": 0, "node3": 0},
            id="upstream-init-container",
        ),
        pytest.param(
            # the same image twice counts twice: 100*(600M-23M)/(2*1000M-23M) = 29
            [_node("node1", (300, "gcr.io/300:latest"))],
            _pod("gcr.io/300", "gcr.io/300"),
            {"node1": 29},
            id="duplicate-image-counts-twice",
        ),
        pytest.param(
            # the node reports the name untagged: "gcr.io/300" never equals "gcr.io/300:latest"
            [_node("node1", (300, "gcr.io/300"))],
            _pod("gcr.io/300"),
            {"node1": 0},
            id="node-names-are-not-normalized",
        ),
        pytest.param(
            # tagged pod image matches the node's alias
            [_node("node1", (300, "gcr.io/300:latest gcr.io/300:v1"))],
            _pod("gcr.io/300:v1"),
            {"node1": 28},  # 100*(300M-23M)/(1000M-23M) = 28.35
            id="alias-match",
        ),
        pytest.param(
            # the size is the first reporting node's (1000M), spread 2/2: both clip to 100
            [_node("n1", (1000, "gcr.io/big:latest")), _node("n2", (500, "gcr.io/big:latest"))],
            _pod("gcr.io/big"),
            {"n1": 100, "n2": 100},
            id="cluster-wide-size-and-spread",
        ),
        pytest.param(
            # spread is over all nodes of the cluster: 900M*1/3 = 300M -> 100*(300M-23M)/(1000M-23M) = 28
            [_node("n1", (900, "a:latest")), _node("n2"), _node("n3")],
            _pod("a"),
            {"n1": 28, "n2": 0, "n3": 0},
            id="spread-over-cluster",
        ),
    ],
)  # fmt: skip
def test_scores(nodes: list[Node], pod: Pod, want: dict[str, int]) -> None:
    assert _scores(nodes, pod) == want
