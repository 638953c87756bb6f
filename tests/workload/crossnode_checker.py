"""Independent checks for the cross-node shapes: pod (anti-)affinity, topology spread and
preemption ordering. Like ``checker.py`` it shares only manifest parsing with the
scheduler; the rules are re-derived here from the final placements or the event stream.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from cluster_sched.api.objects import LabelSelector, Node, Pod
from cluster_sched.api.selectors import label_selector_matches
from tests.workload.checker import pod_requests


def _domain(node: Node, key: str) -> str | None:
    return node.labels.get(key)


def _term_namespaces(owner: Pod, namespaces: tuple[str, ...]) -> set[str]:
    return set(namespaces) if namespaces else {owner.namespace}


def anti_affinity_violations(
    pods: Mapping[str, Pod], placements: Mapping[str, str], nodes: Mapping[str, Node]
) -> list[str]:
    """Every bound pod's required anti-affinity terms hold against every other bound pod."""
    out = []
    bound = [(pods[k], nodes[n]) for k, n in placements.items() if k in pods and n in nodes]
    for owner, owner_node in bound:
        aff = owner.affinity
        if aff is None or aff.pod_anti_affinity is None:
            continue
        for term in aff.pod_anti_affinity.required:
            namespaces = _term_namespaces(owner, term.namespaces)
            dom = _domain(owner_node, term.topology_key)
            for other, other_node in bound:
                if other.key == owner.key or other.namespace not in namespaces:
                    continue
                if (
                    dom is not None
                    and _domain(other_node, term.topology_key) == dom
                    and label_selector_matches(term.label_selector, other.labels)
                ):
                    out.append(f"{owner.key} and {other.key} share {term.topology_key}={dom}")
    return out


def affinity_violations(
    pods: Mapping[str, Pod], placements: Mapping[str, str], nodes: Mapping[str, Node]
) -> list[str]:
    """Every bound pod with required affinity shares its domain with a matching pod
    (itself, for the first pod of a self-affine group)."""
    out = []
    bound = [(pods[k], nodes[n]) for k, n in placements.items() if k in pods and n in nodes]
    for owner, owner_node in bound:
        aff = owner.affinity
        if aff is None or aff.pod_affinity is None:
            continue
        for term in aff.pod_affinity.required:
            namespaces = _term_namespaces(owner, term.namespaces)
            dom = _domain(owner_node, term.topology_key)
            ok = dom is not None and any(
                o.namespace in namespaces
                and _domain(n, term.topology_key) == dom
                and label_selector_matches(term.label_selector, o.labels)
                for o, n in bound
            )
            if not ok:
                out.append(
                    f"{owner.key} on {owner_node.name} has no pod matching its affinity in {term.topology_key}={dom}"
                )
    return out


def spread_violations(
    pods: Mapping[str, Pod], placements: Mapping[str, str], nodes: Mapping[str, Node]
) -> list[str]:
    """Final skew of every DoNotSchedule constraint stays within maxSkew over the domains
    of all nodes carrying the key (a pure-add workload keeps this invariant)."""
    out = []
    seen: set[tuple[Any, ...]] = set()
    for pod in pods.values():
        for c in pod.topology_spread_constraints:
            if c.when_unsatisfiable != "DoNotSchedule":
                continue
            ident = (pod.namespace, c.topology_key, c.label_selector, c.max_skew)
            if ident in seen:
                continue
            seen.add(ident)
            domains = {
                n.labels[c.topology_key] for n in nodes.values() if c.topology_key in n.labels
            }
            counts: Counter[str] = Counter({d: 0 for d in domains})
            for key, node_name in placements.items():
                p = pods.get(key)
                node = nodes.get(node_name)
                if p is None or node is None or p.namespace != pod.namespace:
                    continue
                if c.topology_key in node.labels and label_selector_matches(
                    c.label_selector or LabelSelector(), p.labels
                ):
                    counts[node.labels[c.topology_key]] += 1
            if counts and max(counts.values()) - min(counts.values()) > c.max_skew:
                out.append(
                    f"skew {max(counts.values()) - min(counts.values())} > {c.max_skew} on {c.topology_key}: {dict(counts)}"
                )
    return out


def replay_overcommit(
    events: Iterable[Mapping[str, Any]], nodes: Mapping[str, Node], parse_pod: Any
) -> tuple[list[str], int]:
    """Replay the store's watch stream: at every binding, the pods bound to that node
    (bindings so far minus deletions so far) must fit its allocatable. This is what
    "a high-priority pod is bound only once its victims are gone" means. Returns the
    violations and how many bindings were checked."""
    bound: dict[str, dict[str, tuple[str, dict[str, int]]]] = defaultdict(dict)
    where: dict[str, str] = {}
    violations: list[str] = []
    checked = 0
    for ev in events:
        if ev["kind"] != "Pod":
            continue
        key = ev["key"]
        if ev["type"] == "DELETED":
            node = where.pop(key, None)
            if node is not None:
                bound[node].pop(key, None)
            continue
        obj = ev["obj"]
        node_name = (obj.get("spec") or {}).get("nodeName")
        if not node_name or key in where:
            continue
        where[key] = node_name
        bound[node_name][key] = (key, pod_requests(parse_pod(obj)))
        checked += 1
        node = nodes[node_name]
        total: Counter[str] = Counter()
        for _, req in bound[node_name].values():
            total.update(req)
        for res, amount in total.items():
            if amount > node.allocatable.get(res, 0):
                violations.append(
                    f"binding {key} to {node_name}: {res} {amount} > {node.allocatable.get(res, 0)}"
                )
        pods_limit = node.allocatable.get("pods")
        if pods_limit is not None and len(bound[node_name]) > pods_limit:
            violations.append(
                f"binding {key} to {node_name}: {len(bound[node_name])} pods > {pods_limit}"
            )
    return violations, checked


def read_stream(store: Any) -> list[dict[str, Any]]:
    """Every watch event still in the store's stream, oldest first."""
    out: list[dict[str, Any]] = []
    last = "0-0"
    while True:
        batch = store.read_events(last, count=10_000)
        if not batch:
            return out
        for ev in batch:
            out.append({"type": str(ev.type), "kind": ev.kind, "key": ev.key, "obj": ev.obj})
        last = batch[-1].id
