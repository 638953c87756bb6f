"""NodeTable built incrementally equals NodeTable built fresh from the final state.

Random sequences of upsert_node / add_pod / remove_pod / remove_node are replayed on a
table and on a plain-Python model. At the end every alive row, matched by node name,
must decode to the same values as a table built from scratch from the model (resources
by name, labels by value, taints, host ports, images, pod counts), ``free`` must equal
``allocatable - requested`` everywhere, and ``order()`` must equal upstream's nodeTree
list for the same history.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Node, Pod
from cluster_sched.nodetable.order import zone_key
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.testing.builders import make_node, make_pod

GPU = "example.com/gpu"
FPGA = "vendor.io/fpga"


def _node_variants(name: str, i: int) -> list[Node]:
    zone = f"zone-{i % 2}"
    return [
        make_node(name)
        .capacity(cpu="4", memory="8Gi", pods=10)
        .zone(zone)
        .label("disk", "ssd")
        .obj(),
        make_node(name)
        .capacity({GPU: 2}, cpu="8", memory="16Gi", pods=20, ephemeral_storage="100Gi")
        .zone("zone-late")
        .label("disk", "hdd")
        .label(f"only-{name}", "x")
        .taint("dedicated", "gpu")
        .image("registry.k8s.io/nginx:1.25", 150_000_000, "nginx:1.25")
        .obj(),
        make_node(name)
        .capacity({FPGA: 1, "hugepages-2Mi": "1Gi"}, cpu="2", pods=5)
        .taint("soft", effect="PreferNoSchedule")
        .taint("evict", "now", effect="NoExecute")
        .image("registry.k8s.io/pause:3.9", 700_000)
        .unschedulable()
        .obj(),
    ]


def _sidecar_pod(name: str) -> Pod:
    doc = make_pod(name).req(cpu="100m").manifest()
    doc["spec"]["initContainers"] = [
        {
            "name": "proxy",
            "image": "envoy",
            "restartPolicy": "Always",
            "ports": [{"containerPort": 9000, "hostPort": 9000}],
            "resources": {"requests": {"memory": "64Mi"}},
        }
    ]
    return parse_pod(doc, source="<test>")


N_NODES = 4
NODE_NAMES = [f"n{i}" for i in range(N_NODES)]
NODES = [_node_variants(name, i) for i, name in enumerate(NODE_NAMES)]
PODS: list[Pod] = [
    make_pod("p-cpu").req(cpu="1", memory="1Gi").label("app", "web").obj(),
    make_pod("p-gpu").req({GPU: 1}, cpu="500m").obj(),
    make_pod("p-fpga").req({FPGA: 1}).obj(),
    make_pod("p-port").host_port(8080).obj(),
    make_pod("p-udp").host_port(53, protocol="UDP", host_ip="10.0.0.1").req(cpu="10m").obj(),
    _sidecar_pod("p-sidecar"),
    make_pod("p-empty").obj(),
    make_pod("p-init").init_req(cpu="3").req(cpu="1", ephemeral_storage="1Gi").obj(),
    make_pod("p-port2").host_port(8080).host_port(8081, protocol="SCTP").obj(),
]


class NodeTreeModel:
    """upstream pkg/scheduler/backend/cache/node_tree.go, transcribed."""

    def __init__(self) -> None:
        self.zones: list[str] = []
        self.tree: dict[str, list[str]] = {}

    def add(self, name: str, zone: str) -> None:
        if zone in self.tree:
            self.tree[zone].append(name)
        else:
            self.zones.append(zone)
            self.tree[zone] = [name]

    def remove(self, name: str, zone: str) -> None:
        self.tree[zone].remove(name)
        if not self.tree[zone]:
            del self.tree[zone]
            self.zones.remove(zone)

    def update(self, name: str, old_zone: str, new_zone: str) -> None:
        if old_zone != new_zone:
            self.remove(name, old_zone)
            self.add(name, new_zone)

    def list(self) -> list[str]:
        out: list[str] = []
        depth = 0
        total = sum(len(v) for v in self.tree.values())
        while len(out) < total:
            for zone in self.zones:
                members = self.tree[zone]
                if depth < len(members):
                    out.append(members[depth])
            depth += 1
        return out


def node_view(table: NodeTable, name: str) -> dict[str, Any]:
    """Everything a row holds, decoded to names so two tables' interners don't matter."""
    row = table.index[name]
    assert table.alive[row] and table.names[row] == name
    resources = table.resources.values
    images = table.image_index()
    return {
        "allocatable": {
            r: int(table.allocatable[i, row])
            for i, r in enumerate(resources)
            if table.allocatable[i, row]
        },
        "requested": {
            r: int(table.requested[i, row])
            for i, r in enumerate(resources)
            if table.requested[i, row]
        },
        "free": {r: int(table.free[i, row]) for i, r in enumerate(resources) if table.free[i, row]},
        "nonzero": (int(table.nonzero[0, row]), int(table.nonzero[1, row])),
        "pod_count": int(table.pod_count[row]),
        "allowed_pods": int(table.allowed_pods[row]),
        "unschedulable": bool(table.unschedulable[row]),
        "zone": table.zones.values[int(table.zone_code[row])],
        "labels": {
            key: table.label_values[key].values[int(col[row])]
            for key, col in table.labels.items()
            if col[row] >= 0
        },
        "taints": {
            t: int(table.taint_pos[i, row])
            for i, t in enumerate(table.taints.values)
            if table.taint_pos[i, row]
        },
        "ports": {
            p: int(table.port_count[i, row])
            for i, p in enumerate(table.ports.values)
            if table.port_count[i, row]
        },
        "images": {
            table.images.values[img]: int(sizes[rows == row][0])
            for img, rows in images.rows.items()
            for sizes in (images.sizes[img],)
            if (rows == row).any()
        },
        "pods": sorted(table.row_pods[row]),
        "node": table.nodes[row],
    }


def assert_free_is_allocatable_minus_requested(table: NodeTable) -> None:
    alive = table.alive.copy()
    np.testing.assert_array_equal(
        table.free[:, alive], table.allocatable[:, alive] - table.requested[:, alive]
    )
    # freed rows carry nothing
    dead = ~alive
    assert not table.requested[:, dead].any() and not table.free[:, dead].any()
    assert not table.pod_count[dead].any() and not table.port_count[:, dead].any()


op = st.one_of(
    st.tuples(st.just("upsert"), st.integers(0, N_NODES - 1), st.integers(0, 2)),
    st.tuples(st.just("remove_node"), st.integers(0, N_NODES - 1), st.just(0)),
    st.tuples(st.just("add_pod"), st.integers(0, len(PODS) - 1), st.integers(0, N_NODES - 1)),
    st.tuples(st.just("remove_pod"), st.integers(0, len(PODS) - 1), st.just(0)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40))
def test_incremental_table_equals_fresh_table(ops: list[tuple[str, int, int]]) -> None:
    table = NodeTable(capacity=2)  # small, so rows grow while ops run
    nodes: dict[str, Node] = {}
    placed: dict[str, tuple[Pod, str]] = {}
    tree = NodeTreeModel()

    for kind, a, b in ops:
        if kind == "upsert":
            node = NODES[a][b]
            old = nodes.get(node.name)
            table.upsert_node(node)
            if old is None:
                tree.add(node.name, zone_key(node.labels))
            else:
                tree.update(node.name, zone_key(old.labels), zone_key(node.labels))
            nodes[node.name] = node
        elif kind == "remove_node":
            name = NODE_NAMES[a]
            if name in nodes:
                table.remove_node(name)
                tree.remove(name, zone_key(nodes.pop(name).labels))
                placed = {k: v for k, v in placed.items() if v[1] != name}
        elif kind == "add_pod":
            pod, name = PODS[a], NODE_NAMES[b]
            if name in nodes and pod.key not in placed:
                table.add_pod(table.index[name], pod)
                placed[pod.key] = (pod, name)
        else:
            pod = PODS[a]
            if pod.key in placed:
                table.remove_pod(table.index[placed.pop(pod.key)[1]], pod)
        assert_free_is_allocatable_minus_requested(table)

    fresh = NodeTable()
    for name in sorted(nodes, reverse=True):  # a different insertion order on purpose
        fresh.upsert_node(nodes[name])
    for key in sorted(placed):
        pod, name = placed[key]
        fresh.add_pod(fresh.index[name], pod)

    assert set(table.index) == set(nodes) == set(fresh.index)
    assert table.n_nodes == len(nodes)
    for name in nodes:
        assert node_view(table, name) == node_view(fresh, name), name
    assert_free_is_allocatable_minus_requested(fresh)
    assert [table.names[r] for r in table.order()] == tree.list()


def test_extended_resource_appearing_late_widens_every_matrix() -> None:
    """A resource first seen on the third node gets a column that is zero elsewhere."""
    table = NodeTable(capacity=1)
    for i in range(2):
        table.upsert_node(make_node(f"a{i}").capacity(cpu="1", pods=5).obj())
    table.add_pod(0, PODS[0])
    late = make_node("late").capacity({GPU: 4}, cpu="1", pods=5).obj()
    row = table.upsert_node(late)
    col = table.resources.get(GPU)
    assert col >= 0
    assert (
        table.allocatable.shape[0]
        == table.requested.shape[0]
        == table.free.shape[0]
        == len(table.resources)
    )
    assert table.allocatable[col, row] == 4 and table.free[col, row] == 4
    assert table.allocatable[col, :row].sum() == 0
    table.add_pod(row, PODS[1])
    assert table.requested[col, row] == 1 and table.free[col, row] == 3
    assert_free_is_allocatable_minus_requested(table)


def test_node_update_keeps_pod_accounting_and_drops_stale_labels_taints_images() -> None:
    table = NodeTable()
    v1, v2 = NODES[0][1], NODES[0][0]
    row = table.upsert_node(v1)
    table.add_pod(row, PODS[1])
    assert table.upsert_node(v2) == row
    view = node_view(table, v2.name)
    assert view["requested"] == {"cpu": 500, GPU: 1}
    assert view["free"] == {"cpu": 3500, "memory": 8 * 2**30, GPU: -1}
    assert "only-n0" not in view["labels"] and view["labels"]["disk"] == "ssd"
    assert view["taints"] == {} and view["images"] == {}
    assert view["pod_count"] == 1
