"""An independent check over a store after chaos: what must hold whatever happened.

- every pod is bound exactly once or still pending: in the watch stream its
  ``spec.nodeName`` goes from unset to one node at most once and never changes after,
  and the stored object shows that node;
- one Scheduled event per bound pod, none for a pending one;
- no node over-committed (``tests.workload.checker`` re-adds the requests itself).

The reliability helper writes ``cluster_sched/testing/store_check.py`` with the same
purpose; the two are to be unified.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.store.store import Store
from tests.workload.checker import Cluster

__all__ = ["EVENT_VIOLATION", "bound_pods", "store_violations"]

#: The words that mark a Scheduled-event violation among :func:`store_violations` lines.
EVENT_VIOLATION = "Scheduled events, expected"


def _key(doc: dict[str, Any]) -> str:
    meta = doc["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def bound_pods(store: Store) -> dict[str, str]:
    """pod key -> node for every pod the store shows bound."""
    return {
        _key(d): d["spec"]["nodeName"]
        for d in store.list("Pod")
        if (d.get("spec") or {}).get("nodeName")
    }


def _transitions(store: Store) -> dict[str, list[str]]:
    """pod key -> the successive non-empty nodeName values the watch stream showed."""
    out: dict[str, list[str]] = {}
    last_node: dict[str, str] = {}
    last = "0-0"
    while True:
        batch = store.read_events(last, count=5000)
        if not batch:
            return out
        last = batch[-1].id
        for ev in batch:
            if ev.kind != "Pod" or ev.type == "DELETED":
                continue
            node = (ev.obj.get("spec") or {}).get("nodeName") or ""
            if node != last_node.get(ev.key, ""):
                out.setdefault(ev.key, []).append(node)
                last_node[ev.key] = node


def store_violations(store: Store) -> list[str]:
    """Every broken invariant, one line each (empty: the store is consistent)."""
    docs = store.list("Pod")
    pods = {p.key: p for p in (parse_pod(d) for d in docs)}
    nodes = {n.name: n for n in (parse_node(d) for d in store.list("Node"))}
    bound = bound_pods(store)
    out: list[str] = []
    for key, seen in sorted(_transitions(store).items()):
        if len(seen) > 1 or "" in seen:
            out.append(f"{key}: nodeName changed in the watch stream: {seen}")
        elif key in bound and seen != [bound[key]]:
            out.append(f"{key}: stored on {bound[key]} but the stream said {seen}")
    scheduled = Counter(e["key"] for e in store.events(reason="Scheduled"))
    for key in sorted(pods):
        want = 1 if key in bound else 0
        if scheduled.get(key, 0) != want:
            out.append(f"{key}: {scheduled.get(key, 0)} {EVENT_VIOLATION} {want}")
    out += Cluster(nodes, pods).check(bound)
    return out
