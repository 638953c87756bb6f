"""An independent placement checker for end-to-end tests.

It re-derives, from the workload's manifests alone, whether a set of placements is
legal: no node over-committed (requests summed per node here, with this module's own
arithmetic, against allocatable and the pod-count limit), and every placed pod on a node
that exists, is not cordoned (unless tolerated), whose NoSchedule/NoExecute taints the
pod tolerates, and whose labels satisfy the pod's nodeSelector and required node
affinity. Only ``cluster_sched.api.manifest`` parsing is shared with the scheduler; the
node table, the plugins and the scheduler's request arithmetic are deliberately not used.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.api.objects import (
    Container,
    Node,
    NodeSelectorRequirement,
    Pod,
    Taint,
    Toleration,
)
from cluster_sched.workload.spec import Workload

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, value in amounts.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, value in amounts.items():
        total[name] = max(total.get(name, 0), value)


def pod_requests(pod: Pod) -> dict[str, int]:
    """Effective requests: app containers plus sidecars, or the largest init step if
    larger, plus overhead (the Kubernetes rule, computed from the containers here)."""
    app: dict[str, int] = {}
    for c in pod.containers:
        _add(app, c.requests)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in pod.init_containers:
        if _is_sidecar(c):
            _add(sidecars, c.requests)
            _max(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, c.requests)
            _max(init_peak, step)
    total = dict(app)
    _add(total, sidecars)
    _max(total, init_peak)
    _add(total, pod.overhead)
    return {k: v for k, v in total.items() if v}


def _is_sidecar(c: Container) -> bool:
    return c.restart_policy == "Always"


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key and t.key != taint.key:
            continue
        if t.operator == "Exists" or t.value == taint.value:
            return True
    return False


def _requirement_holds(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    present = req.key in labels
    value = labels.get(req.key, "")
    if req.operator == "In":
        return present and value in req.values
    if req.operator == "NotIn":
        return not present or value not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    if req.operator in ("Gt", "Lt"):
        try:
            have, want = int(value), int(req.values[0])
        except (ValueError, IndexError):
            return False
        return present and (have > want if req.operator == "Gt" else have < want)
    return False


def _required_affinity_holds(pod: Pod, node: Node) -> bool:
    aff = pod.affinity.node_affinity if pod.affinity is not None else None
    if aff is None or aff.required is None:
        return True
    for term in aff.required.terms:
        exprs_ok = all(_requirement_holds(r, node.labels) for r in term.match_expressions)
        fields_ok = all(
            _requirement_holds(r, {"metadata.name": node.name}) for r in term.match_fields
        )
        if (term.match_expressions or term.match_fields) and exprs_ok and fields_ok:
            return True
    return False


def static_violations(pod: Pod, node: Node) -> list[str]:
    """Why ``pod`` may never sit on ``node`` whatever else runs there (empty: it may)."""
    out: list[str] = []
    if node.unschedulable and not tolerates(pod.tolerations, UNSCHEDULABLE_TAINT):
        out.append("node is cordoned")
    for taint in node.taints:
        if taint.effect in FILTERING_EFFECTS and not tolerates(pod.tolerations, taint):
            out.append(f"untolerated taint {taint.key}={taint.value}:{taint.effect}")
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            out.append(f"nodeSelector {key}={value} not matched")
    if not _required_affinity_holds(pod, node):
        out.append("required node affinity not matched")
    return out


def room_violations(
    requests: Mapping[str, int], node: Node, used: Mapping[str, int], pods_used: int
) -> list[str]:
    """What would be over-committed if a pod with ``requests`` joined ``used`` on ``node``."""
    out: list[str] = []
    for name, value in requests.items():
        if name == "pods":
            continue
        have = node.allocatable.get(name, 0)
        if used.get(name, 0) + value > have:
            out.append(f"{name}: {used.get(name, 0) + value} > {have}")
    if pods_used + 1 > node.allocatable.get("pods", 110):
        out.append(f"pods: {pods_used + 1} > {node.allocatable.get('pods', 110)}")
    return out


@dataclass
class Cluster:
    nodes: dict[str, Node]
    pods: dict[str, Pod]
    #: pods the manifests already bind (spec.nodeName)
    prebound: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_workload(cls, workload: Workload) -> Cluster:
        nodes = {n.name: n for n in (parse_node(d) for d in workload.node_docs)}
        for doc in workload.objects:
            if doc.get("kind") == "Node":
                n = parse_node(doc)
                nodes[n.name] = n
        pods: dict[str, Pod] = {}
        for doc in _pod_docs(workload):
            p = parse_pod(doc)
            pods[p.key] = p
        prebound = {k: p.node_name for k, p in pods.items() if p.node_name}
        return cls(nodes, pods, prebound)

    def check(self, placements: Mapping[str, str]) -> list[str]:
        """Every violation of the placements (empty: legal). ``placements`` maps pod key
        to node for every bound pod, pre-bound ones included or not."""
        bound = {**self.prebound, **placements}
        used: dict[str, dict[str, int]] = defaultdict(dict)
        count: dict[str, int] = defaultdict(int)
        out: list[str] = []
        for key, node_name in sorted(bound.items()):
            pod = self.pods.get(key)
            if pod is None:
                out.append(f"{key}: placed but not in the workload")
                continue
            node = self.nodes.get(node_name)
            if node is None:
                out.append(f"{key}: placed on unknown node {node_name}")
                continue
            if key not in self.prebound:
                out += [f"{key} on {node_name}: {v}" for v in static_violations(pod, node)]
            _add(used[node_name], pod_requests(pod))
            count[node_name] += 1
        for node_name, amounts in sorted(used.items()):
            node = self.nodes[node_name]
            for name, value in sorted(amounts.items()):
                if value > node.allocatable.get(name, 0):
                    out.append(
                        f"node {node_name} over-committed: {name} {value} > {node.allocatable.get(name, 0)}"
                    )
            limit = node.allocatable.get("pods", 110)
            if count[node_name] > limit:
                out.append(f"node {node_name} over-committed: {count[node_name]} pods > {limit}")
        return out

    def candidate_nodes(self, key: str) -> list[str]:
        """Nodes the pod could run on alone next to the pre-bound pods."""
        pod = self.pods[key]
        used: dict[str, dict[str, int]] = defaultdict(dict)
        count: dict[str, int] = defaultdict(int)
        for k, n in self.prebound.items():
            _add(used[n], pod_requests(self.pods[k]))
            count[n] += 1
        req = pod_requests(pod)
        return sorted(
            name
            for name, node in self.nodes.items()
            if not static_violations(pod, node)
            and not room_violations(req, node, used[name], count[name])
        )

    def uncontested(self, keys: Iterable[str]) -> list[str]:
        """Nodes that could be over-committed if every pod in ``keys`` that may go there
        did (empty: the pods' placements are independent of each other)."""
        demand: dict[str, dict[str, int]] = defaultdict(dict)
        count: dict[str, int] = defaultdict(int)
        for k, n in self.prebound.items():
            _add(demand[n], pod_requests(self.pods[k]))
            count[n] += 1
        for key in keys:
            for n in self.candidate_nodes(key):
                _add(demand[n], pod_requests(self.pods[key]))
                count[n] += 1
        out = []
        for n, amounts in demand.items():
            alloc = self.nodes[n].allocatable
            if any(v > alloc.get(r, 0) for r, v in amounts.items()) or count[n] > alloc.get(
                "pods", 110
            ):
                out.append(n)
        return sorted(out)


def _pod_docs(workload: Workload) -> Iterable[dict[str, Any]]:
    for doc in workload.objects:
        if doc.get("kind") == "Pod":
            yield doc
    for group in workload.pod_groups:
        yield from group.manifests()
