"""The scheduler cache: nodes, bound pods and assumed pods, feeding the node columns.

Pod states (upstream pkg/scheduler/backend/cache)::

        +-------------------------------------------+  +----+
        |                            Add            |  |    |
        |                                           |  |    | Update
        +      Assume                Add            v  v    |
  Initial +--------> Assumed +------------+---> Added <--+
        ^                +   +               |       +
        |                |   |               |       |
        |                |   |           Add |       | Remove
        |                |   |               |       |
        |                |   |               +       |
        +----------------+   +-----------> Expired   +----> Deleted
              Forget           Expire

Assumptions, as upstream's:
- "Assumed" means the coordinator placed the pod and accounted it; its binding may still
  be running. Only the coordinator assumes and forgets, and it forgets only pods it
  assumed (a failed binding cycle).
- A pod's binding finishing starts its expiry clock (``ttl``); if the bound pod never
  arrives through the watch by then, the pod is expired and its resources released.
- The watch's Add of an assumed pod confirms it (on the node the API server says).
- Removing a node keeps its pods; they are accounted again if the node comes back.

Node-column updates go to a ``NodeStateSink`` (the in-process table, or the shard router
that forwards them to Ray shards with the next request), so every assume is visible to
the very next cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cluster_sched.api.objects import (
    TERMINAL_POD_PHASES,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    WorkloadController,
)
from cluster_sched.api.storage import STORAGE_KINDS, StorageObject
from cluster_sched.clock import Clock, SystemClock
from cluster_sched.dra.listers import DRA_KINDS, DraListers, DraObject
from cluster_sched.errors import SchedulerError
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.framework.volume_listers import VolumeListers
from cluster_sched.nodetable.table import NodeTable

#: How long a pod whose binding finished may stay assumed before it is expired.
DEFAULT_ASSUMED_POD_TTL = 15 * 60.0


class NodeStateSink(Protocol):
    """Receives node-column deltas in the order the cache applies them."""

    def upsert_node(self, node: Node) -> None: ...

    def remove_node(self, name: str) -> None: ...

    def add_pod(self, node_name: str, pod: Pod) -> None: ...

    def remove_pod(self, node_name: str, pod: Pod) -> None: ...

    def replace_pod(self, node_name: str, pod: Pod) -> None:
        """Swap the stored object of a pod whose accounting is unchanged."""
        ...


def same_accounting(a: Pod, b: Pod) -> bool:
    """Do two versions of a pod count the same on a node (resources, ports, labels,
    affinity)? Then confirming one as the other needs no column update."""
    return (
        a.requests == b.requests
        and a.nonzero_cpu == b.nonzero_cpu
        and a.nonzero_memory == b.nonzero_memory
        and a.labels == b.labels
        and a.containers == b.containers
        and a.affinity == b.affinity
        and a.namespace == b.namespace
        and a.priority == b.priority
        and a.meta.deletion_timestamp == b.meta.deletion_timestamp
    )


class TableSink:
    """The in-process sink: one NodeTable holding every node."""

    def __init__(self, table: NodeTable | None = None) -> None:
        self.table = table or NodeTable()

    def upsert_node(self, node: Node) -> None:
        self.table.upsert_node(node)

    def upsert_nodes(self, nodes: Sequence[Node]) -> None:
        """``upsert_node`` of each in order, new nodes in bulk (``NodeTable.upsert_nodes``)."""
        self.table.upsert_nodes(nodes)

    def remove_node(self, name: str) -> None:
        self.table.remove_node(name)

    def add_pod(self, node_name: str, pod: Pod) -> None:
        self.table.add_pod(self.table.index[node_name], pod)

    def remove_pod(self, node_name: str, pod: Pod) -> None:
        self.table.remove_pod(self.table.index[node_name], pod)

    def replace_pod(self, node_name: str, pod: Pod) -> None:
        self.table.row_pods[self.table.index[node_name]][pod.key] = pod

    def add_pods(self, node_names: list[str], pods: list[Pod]) -> None:
        """``add_pod`` for each pair, the columns updated in one pass."""
        index = self.table.index
        self.table.add_pods([index[n] for n in node_names], pods)


@dataclass(slots=True)
class PodState:
    pod: Pod
    node_name: str
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


@dataclass(slots=True)
class ImageState:
    size: int
    nodes: set[str] = field(default_factory=set)


class Cache:
    """Coordinator-owned cluster state. Not thread-safe: the coordinator's loop owns it;
    binding results come back to that loop before they touch the cache."""

    def __init__(
        self,
        sink: NodeStateSink | None = None,
        *,
        clock: Clock | None = None,
        assumed_pod_ttl: float = DEFAULT_ASSUMED_POD_TTL,
    ) -> None:
        self.sink = sink if sink is not None else TableSink()
        self.clock = clock or SystemClock()
        self.ttl = assumed_pod_ttl
        self.nodes: dict[str, Node] = {}
        self.pod_states: dict[str, PodState] = {}
        #: node name -> keys of pods on it, kept for removed nodes too (upstream ghost nodes)
        self.node_pods: dict[str, set[str]] = {}
        self.assumed: set[str] = set()
        self.images: dict[str, ImageState] = {}
        self.namespaces: dict[str, Namespace] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.controllers: dict[tuple[str, str], WorkloadController] = {}
        #: PVs, PVCs, StorageClasses, CSINodes, CSIDrivers
        self.volumes = VolumeListers()
        self.dra = DraListers()
        #: bumps on every change (cheap "did anything change" check for snapshots)
        self.generation = 0
        table = getattr(self.sink, "table", None)
        #: what plugins read: live references to the containers above, kept current here
        self.snapshot = Snapshot(
            tables=(table,) if table is not None else (),
            nodes=self.nodes,
            namespaces=self.namespaces,
            pdbs=self.pdbs,
            controllers=self.controllers,
            images={},
            volumes=self.volumes,
            dra=self.dra,
        )

    # ------------------------------------------------------------------ nodes

    def add_node(self, node: Node) -> None:
        """Add or update. A re-added node gets its surviving pods accounted again."""
        known = node.name in self.nodes
        old = self.nodes.get(node.name)
        if old is not None:
            self._drop_images(old)
        self.nodes[node.name] = node
        self.snapshot.num_nodes = len(self.nodes)
        self._add_images(node)
        self.sink.upsert_node(node)
        if not known:
            for key in self.node_pods.get(node.name, ()):
                self.sink.add_pod(node.name, self.pod_states[key].pod)
        self.generation += 1

    update_node = add_node

    def add_nodes(self, nodes: Sequence[Node]) -> None:
        """``add_node`` of each in order. Runs of new nodes with no pods waiting for them
        go to the sink in one call when it takes them (``upsert_nodes``: a listing of a
        million nodes, a watch batch of node adds); any other node goes alone, in place."""
        bulk = getattr(self.sink, "upsert_nodes", None)
        known, node_pods = self.nodes, self.node_pods
        run: list[Node] = []
        for node in nodes:
            name = node.name
            if bulk is not None and name not in known and not node_pods.get(name):
                known[name] = node
                if node.images:
                    self._add_images(node)
                run.append(node)
                continue
            if run:
                self._add_run(run)
                run = []
            self.add_node(node)
        if run:
            self._add_run(run)

    def _add_run(self, run: list[Node]) -> None:
        """The sink's part of ``add_nodes`` for new nodes already in ``self.nodes``."""
        self.snapshot.num_nodes = len(self.nodes)
        self.sink.upsert_nodes(run)  # type: ignore[attr-defined]
        self.generation += len(run)

    def remove_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is None:
            return
        self.snapshot.num_nodes = len(self.nodes)
        self._drop_images(node)
        self.sink.remove_node(name)
        if not self.node_pods.get(name):
            self.node_pods.pop(name, None)
        self.generation += 1

    def _add_images(self, node: Node) -> None:
        for image in node.images:
            for name in image.names:
                st = self.images.get(name)
                if st is None:
                    st = self.images[name] = ImageState(image.size_bytes)
                st.nodes.add(node.name)
                self._image_counts[name] = (st.size, len(st.nodes))

    def _drop_images(self, node: Node) -> None:
        for image in node.images:
            for name in image.names:
                st = self.images.get(name)
                if st is not None:
                    st.nodes.discard(node.name)
                    if not st.nodes:
                        del self.images[name]
                        del self._image_counts[name]
                    else:
                        self._image_counts[name] = (st.size, len(st.nodes))

    def image_state(self, name: str) -> tuple[int, int] | None:
        return self.snapshot.image_state(name)

    @property
    def _image_counts(self) -> dict[str, tuple[int, int]]:
        return self.snapshot.images

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    # ------------------------------------------------------------------ pods

    def _account(self, key: str, pod: Pod, node_name: str) -> None:
        self.node_pods.setdefault(node_name, set()).add(key)
        if node_name in self.nodes:
            self.sink.add_pod(node_name, pod)

    def _unaccount(self, key: str, pod: Pod, node_name: str) -> None:
        keys = self.node_pods.get(node_name)
        if keys is not None:
            keys.discard(key)
            if not keys and node_name not in self.nodes:
                del self.node_pods[node_name]
        if node_name in self.nodes:
            self.sink.remove_pod(node_name, pod)

    def assume_pod(self, pod: Pod, node_name: str) -> None:
        """Account ``pod`` on ``node_name`` before its binding is written."""
        key = pod.key
        if key in self.pod_states:
            raise SchedulerError(f"pod {key} is in the cache, so can't be assumed")
        self.pod_states[key] = PodState(pod, node_name, assumed=True)
        self.assumed.add(key)
        self._account(key, pod, node_name)
        self.generation += 1

    def assume_pods(self, pods: Sequence[Pod], node_names: Sequence[str]) -> int:
        """``assume_pod(pods[i], node_names[i])`` for each ``i`` in order, the node
        columns updated in one pass (``NodeTable.add_pods``: the same table state); stops
        before the first pod ``assume_pod`` would refuse (its key in the cache) and
        returns how many were assumed."""
        states, assumed, node_pods = self.pod_states, self.assumed, self.node_pods
        to_sink: list[tuple[str, Pod]] = []
        done = 0
        for pod, node_name in zip(pods, node_names, strict=True):
            key = pod.key
            if key in states:
                break
            states[key] = PodState(pod, node_name, assumed=True)
            assumed.add(key)
            node_pods.setdefault(node_name, set()).add(key)
            if node_name in self.nodes:
                to_sink.append((node_name, pod))
            done += 1
        sink = self.sink
        add_pods = getattr(sink, "add_pods", None)  # in one pass (TableSink, ShardRouter)
        if add_pods is not None:
            add_pods([n for n, _ in to_sink], [p for _, p in to_sink])
        else:
            for node_name, pod in to_sink:
                sink.add_pod(node_name, pod)
        self.generation += done
        return done

    def finish_binding(self, pod: Pod) -> None:
        """The binding cycle wrote the binding: start the expiry clock."""
        st = self.pod_states.get(pod.key)
        if st is not None and st.assumed:
            st.binding_finished = True
            st.deadline = self.clock.now() + self.ttl

    def forget_pod(self, pod: Pod) -> None:
        """Undo ``assume_pod`` (the binding cycle failed). As upstream's ForgetPod, a pod
        that is not assumed (unknown, or already confirmed by the watch) is an error."""
        key = pod.key
        st = self.pod_states.get(key)
        if st is None or not st.assumed:
            raise SchedulerError(f"pod {key} wasn't assumed so cannot be forgotten")
        self._unaccount(key, st.pod, st.node_name)
        del self.pod_states[key]
        self.assumed.discard(key)
        self.generation += 1

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def add_pod(self, pod: Pod) -> None:
        """A bound pod arrived through the watch: confirm it if assumed, else add it."""
        key = pod.key
        st = self.pod_states.get(key)
        if st is not None and st.assumed:
            if st.node_name != pod.node_name:
                # The API server put it elsewhere than we assumed: move the accounting.
                self._unaccount(key, st.pod, st.node_name)
                self._account(key, pod, pod.node_name)
            elif st.pod is not pod and st.node_name in self.nodes:
                if same_accounting(st.pod, pod):
                    self.sink.replace_pod(st.node_name, pod)
                else:
                    # Same node, newer object that counts differently: re-account it.
                    self.sink.remove_pod(st.node_name, st.pod)
                    self.sink.add_pod(st.node_name, pod)
            self.pod_states[key] = PodState(pod, pod.node_name)
            self.assumed.discard(key)
        elif st is None:
            self.pod_states[key] = PodState(pod, pod.node_name)
            self._account(key, pod, pod.node_name)
        else:
            # Already added: treat as an update (the watch may replay).
            self.update_pod(st.pod, pod)
            return
        self.generation += 1

    def update_pod(self, old: Pod, new: Pod) -> None:
        key = new.key
        st = self.pod_states.get(key)
        if st is None or st.assumed:
            return
        self._unaccount(key, st.pod, st.node_name)
        self.pod_states[key] = PodState(new, new.node_name)
        self._account(key, new, new.node_name)
        self.generation += 1

    def remove_pod(self, pod: Pod) -> None:
        key = pod.key
        st = self.pod_states.pop(key, None)
        if st is None:
            return
        self.assumed.discard(key)
        self._unaccount(key, st.pod, st.node_name)
        self.generation += 1

    def get_pod(self, key: str) -> Pod | None:
        st = self.pod_states.get(key)
        return None if st is None else st.pod

    def pod_node(self, key: str) -> str | None:
        st = self.pod_states.get(key)
        return None if st is None else st.node_name

    def pods_on_node(self, node_name: str) -> list[Pod]:
        return [self.pod_states[k].pod for k in self.node_pods.get(node_name, ())]

    def cleanup_assumed_pods(self) -> list[Pod]:
        """Expire assumed pods whose binding finished and whose deadline passed."""
        now = self.clock.now()
        expired = [
            self.pod_states[k].pod
            for k in list(self.assumed)
            if self.pod_states[k].binding_finished
            and self.pod_states[k].deadline is not None
            and self.pod_states[k].deadline < now  # type: ignore[operator]
        ]
        for pod in expired:
            self.remove_pod(pod)
        return expired

    # ------------------------------------------------------------------ other kinds

    def set_namespace(self, ns: Namespace) -> None:
        self.namespaces[ns.name] = ns
        self.snapshot.objects_version += 1

    def remove_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)
        self.snapshot.objects_version += 1

    def set_pdb(self, pdb: PodDisruptionBudget) -> None:
        self.pdbs[f"{pdb.meta.namespace}/{pdb.meta.name}"] = pdb
        self.snapshot.objects_version += 1

    def remove_pdb(self, key: str) -> None:
        self.pdbs.pop(key, None)
        self.snapshot.objects_version += 1

    def set_controller(self, ctrl: WorkloadController) -> None:
        self.controllers[(ctrl.kind, f"{ctrl.meta.namespace}/{ctrl.meta.name}")] = ctrl
        self.snapshot.objects_version += 1

    def remove_controller(self, kind: str, key: str) -> None:
        self.controllers.pop((kind, key), None)
        self.snapshot.objects_version += 1

    def set_storage(self, obj: StorageObject) -> None:
        """Add or update a PV, PVC, StorageClass, CSINode or CSIDriver."""
        self.volumes.set(type(obj).__name__, obj)
        self.snapshot.objects_version += 1

    def remove_storage(self, kind: str, key: str) -> None:
        self.volumes.remove(kind, key)
        self.snapshot.objects_version += 1

    def set_dra(self, obj: DraObject) -> None:
        """Add or update a DeviceClass, ResourceSlice, ResourceClaim or template."""
        self.dra.set(obj)
        self.snapshot.objects_version += 1

    def remove_dra(self, kind: str, key: str) -> None:
        self.dra.remove(kind, key)
        self.snapshot.objects_version += 1

    def load(self, objects: Iterable[object]) -> list[Pod]:
        """Add manifests' objects; returns the pods that are not bound (pending).
        Succeeded and Failed pods are left out: the scheduler's informer never sees them."""
        pending: list[Pod] = []
        pods: list[Pod] = []
        for obj in objects:
            if isinstance(obj, Node):
                self.add_node(obj)
            elif isinstance(obj, Pod):
                if obj.phase not in TERMINAL_POD_PHASES:
                    pods.append(obj)
            elif isinstance(obj, Namespace):
                self.set_namespace(obj)
            elif isinstance(obj, PodDisruptionBudget):
                self.set_pdb(obj)
            elif isinstance(obj, WorkloadController):
                self.set_controller(obj)
            elif type(obj).__name__ in STORAGE_KINDS:
                self.set_storage(obj)  # type: ignore[arg-type]
            elif type(obj).__name__ in DRA_KINDS:
                self.set_dra(obj)  # type: ignore[arg-type]
        for pod in pods:
            if pod.node_name:
                self.add_pod(pod)
            else:
                pending.append(pod)
        return pending
