"""A node shard: one partition of the node columns, running Filter and Score for it.

``ShardCore`` is a plain class: the in-process executor calls it directly and the Ray
executor wraps it in an actor (``workers.ray_shard``). It never decides anything
cluster-wide: the coordinator tells it which rows to evaluate, in which order, and
sends node/pod deltas with each request, so an assume is visible to the very next cycle.

Deltas are plain lists (msgpack-able), applied in order:

- ``["node", manifest, row, replica_row]``   add or update a node at the
  coordinator-chosen row (``replica_row``: the row it mirrors in the coordinator's
  replica, which the reduced protocol's windows are in; ``reduce``)
- ``["nodes", manifests, rows, replica_rows]``  many ``"node"`` deltas in one (rows as
  int64 arrays; what the coordinator sends for new nodes, ``router``)
- ``["node-", name]``           remove a node
- ``["pod+", node, manifest]``  account a pod on a node
- ``["pod-", node, pod_key]``   un-account it
- ``["pod=", node, manifest]``  swap the stored object of a pod that counts the same
- ``["reset"]``                 forget every node and pod (a rebuild follows)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cluster_sched.api.evolve import evolve
from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Node, Pod
from cluster_sched.config.load import parse_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import FilterOutcome
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.node_templates import NodeTemplates
from cluster_sched.scheduler.profile import new_frameworks
from cluster_sched.scheduler.shards.compiled import ShardKernels
from cluster_sched.scheduler.shards.ordered import OrderedColumns
from cluster_sched.scheduler.shards.reduce import ShardWindows, reduce_payload
from cluster_sched.scheduler.shards.replies import ChunkReduction
from cluster_sched.store.codec import gc_paused

Delta = list[Any]


class ShardCore:
    def __init__(
        self,
        shard_id: int,
        config: SchedulerConfiguration | Mapping[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        self.shard_id = shard_id
        if config is None or isinstance(config, Mapping):
            config = parse_config(
                config
                or {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                }
            )
        self.table = NodeTable()
        # Plugins here read only the coordinator's cluster-wide facts (node count, image
        # spread, set per request): no tables, because cluster-wide PreFilter/PreScore
        # counts are the coordinator's reductions, shipped in the CycleState.
        self.snapshot = Snapshot()
        self.frameworks = new_frameworks(
            config,
            lambda p: Handle(
                profile_name=p.scheduler_name, rng=random.Random(seed), snapshot=self.snapshot
            ),
        )
        self._pods: dict[str, Pod] = {}
        #: where this shard's rows sit in the replica's node order (``reduce``)
        self.windows = ShardWindows()
        #: node manifests of a pool parsed once (the preload's million nodes)
        self.node_templates = NodeTemplates()
        #: the compiled kernels' per-shape columns over this shard's rows
        self.kernels = ShardKernels()
        #: the kernel's columns in the replica's order (``reduce``)
        self.ordered = OrderedColumns()

    # ------------------------------------------------------------------ deltas

    def apply(self, deltas: Sequence[Delta]) -> int:
        """Apply ``deltas`` in order. Nodes and pods that arrive as manifests (from
        another process) are kept without them (``raw``): nothing on a shard reads a
        stored node's or pod's manifest, and at 1,000,000 nodes they were ~60 % of a
        shard's memory for its nodes. The collector waits for the end (``gc_paused``)."""
        with gc_paused():
            return self._apply(deltas)

    def _apply(self, deltas: Sequence[Delta]) -> int:
        t = self.table
        for d in deltas:
            op = d[0]
            if op == "nodes":
                self._put_nodes(d[1], np.asarray(d[2]).tolist(), np.asarray(d[3]).tolist())
            elif op == "node":
                self._put_node(d[1], d[2], int(d[3]) if len(d) > 3 else None)
            elif op == "node-":
                at = t.index.get(d[1])
                t.remove_node(d[1])
                if at is not None:
                    self.windows.forget(at)
            elif op == "pod+":
                pod = self._stored_pod(d[2], d[1])
                self._pods[pod.key] = pod
                t.add_pod(t.index[d[1]], pod)
                self.ordered.mark(t.index[d[1]])
            elif op == "pod-":
                gone = self._pods.pop(d[2], None)
                if gone is not None and d[1] in t.index:
                    t.remove_pod(t.index[d[1]], gone)
                    self.ordered.mark(t.index[d[1]])
            elif op == "reset":
                t = self.table = NodeTable()
                self._pods = {}
                self.windows.reset()
            elif op == "pod=":
                pod = self._stored_pod(d[2], d[1])
                self._pods[pod.key] = pod
                t.row_pods[t.index[d[1]]][pod.key] = pod
            else:
                raise ValueError(f"unknown shard delta {op!r}")
        return len(deltas)

    def _put_nodes(
        self, objs: Sequence[Node | Mapping[str, Any]], rows: list[int], replica: list[int]
    ) -> None:
        """``_put_node`` of each, in order, the new ones into the table in bulk."""
        nodes = [self._node_of(obj) for obj in objs]
        at = self.table.upsert_nodes(nodes, rows)  # a known node keeps its row, as one by one
        for row, replica_row in zip(at, replica, strict=True):
            self.windows.place(row, replica_row)

    def _node_of(self, obj: Node | Mapping[str, Any]) -> Node:
        """A node delta's node, kept without its manifest (see ``apply``); a new node
        of a pool from the pool's first (node_templates.py: the same Node)."""
        if isinstance(obj, Node):
            return obj
        templates = self.node_templates
        key = templates.key(obj)
        node = templates.node(key, obj) if key is not None else None
        if node is None:
            parsed = parse_object(obj)
            assert isinstance(parsed, Node)
            node = parsed
            if key is not None:
                templates.remember(key, node, obj)
        return evolve(node, raw=None)

    def _put_node(self, obj: Node | Mapping[str, Any], row: int, replica_row: int | None) -> None:
        """A node delta: the node at the coordinator-chosen ``row`` (if new here),
        mirroring ``replica_row`` of the replica (when given)."""
        node = self._node_of(obj)
        t = self.table
        at = t.upsert_node(node, row=row if node.name not in t.index else None)
        if replica_row is not None:
            self.windows.place(at, replica_row)

    @classmethod
    def _stored_pod(cls, obj: Pod | Mapping[str, Any], node: str) -> Pod:
        """A pod delta's pod as this shard keeps it (without its manifest: ``apply``)."""
        pod = cls._pod_on(obj, node)
        return pod if isinstance(obj, Pod) else evolve(pod, raw=None)

    @staticmethod
    def _pod_on(obj: Pod | Mapping[str, Any], node: str) -> Pod:
        """The pod of a delta on ``node``. A manifest from another process may predate its
        binding (an assumed pod is the informer's object with ``node_name`` set), so the
        delta's node is what counts."""
        if isinstance(obj, Pod):
            return obj
        pod = parse_object(obj)
        if not isinstance(pod, Pod):
            raise ValueError(f"pod delta holds a {type(pod).__name__}, not a Pod")
        return pod if pod.node_name == node else evolve(pod, node_name=node)

    def pod_of(self, doc: Pod | Mapping[str, Any]) -> Pod:
        """The pod of a request (a manifest from another process, or the object)."""
        if isinstance(doc, Pod):
            return doc
        return self._pod_on(doc, (doc.get("spec") or {}).get("nodeName") or "")

    def reduce(self, payload: bytes) -> tuple[float, ChunkReduction]:
        """A shared batch payload answered by reductions (``reduce``), packed as columns
        (``replies``), and the seconds it took."""
        busy, pods = reduce_payload(self, self.windows, payload)
        return busy, ChunkReduction.pack(pods)

    def set_snapshot(self, num_nodes: int, images: Mapping[str, tuple[int, int]] | None) -> None:
        """The coordinator's cluster-wide facts for the next call."""
        self.snapshot.num_nodes = num_nodes
        self.snapshot.images = dict(images or {})

    # ------------------------------------------------------------------ one cycle

    def filter(self, profile: str, pod: Pod, state: CycleState, rows: np.ndarray) -> FilterOutcome:
        fwk = self.frameworks[profile]
        return fwk.run_filter(state, pod, NodeSlice(self.table, rows))

    def score(
        self, profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> dict[str, np.ndarray]:
        fwk = self.frameworks[profile]
        return fwk.run_score(state, pod, NodeSlice(self.table, rows))

    def filter_score(
        self, profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> tuple[FilterOutcome, np.ndarray, dict[str, np.ndarray] | None, frozenset[str]]:
        """Filter ``rows``, then PreScore and Score the positions that passed (on
        ``state``, which this call may change): the outcome, those positions, their
        scores (None when PreScore failed) and the plugins PreScore skipped. The
        coordinator uses the scores only when they are exact (``speculation``)."""
        fwk = self.frameworks[profile]
        outcome = fwk.run_filter(state, pod, NodeSlice(self.table, rows))
        passing = np.flatnonzero(outcome.passed)
        if not len(passing):
            return outcome, passing, None, frozenset()
        nodes = NodeSlice(self.table, rows[passing])
        if not fwk.run_pre_score(state, pod, self.snapshot, nodes).is_success:
            return outcome, passing, None, frozenset()
        scores = fwk.run_score(state, pod, nodes)
        return outcome, passing, scores, frozenset(state.skip_score_plugins)

    def prepare_state(
        self, profile: str, pod: Pod, *, scoring: bool, rows: np.ndarray | None = None
    ) -> CycleState:
        """Rebuild the cycle's CycleState here (plugins' PreFilter/PreScore are
        deterministic from the pod and the snapshot): used when the coordinator's state
        object cannot travel, i.e. across processes."""
        fwk = self.frameworks[profile]
        state = CycleState()
        fwk.run_pre_filter(state, pod, self.snapshot)
        if scoring:
            feasible = NodeSlice(
                self.table, rows if rows is not None else np.zeros(0, dtype=np.int64)
            )
            fwk.run_pre_score(state, pod, self.snapshot, feasible)
        return state
