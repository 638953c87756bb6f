"""An independent check of what a store holds after a run, whatever happened during it.

Chaos tests kill coordinators, binding workers and shard actors mid-run and then ask
only the store (its public API: objects, the watch stream, the Event stream), never the
scheduler's own bookkeeping, whether the invariants held:

- every expected pod still exists and is bound exactly once or still pending (the watch
  stream shows spec.nodeName going from unset to a node at most once, never changing);
- every bound pod has exactly one ``Scheduled`` Event, and no pending pod has one;
- no node is over-committed: the requests of the pods bound to it (computed from their
  manifests with the scheduler's own parser) fit its allocatable, pod count included.

The over-commit sums are recomputed from the manifests, not read from the store's own
per-node sums, so a bug in bind.lua's accounting cannot hide itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import PODS, Node, Pod
from cluster_sched.store.store import Store

__all__ = ["StoreReport", "check_store"]


@dataclass(slots=True)
class StoreReport:
    """What ``check_store`` found; ``problems()`` is empty when every invariant held."""

    #: pod key -> node, for pods bound now
    bound: dict[str, str] = field(default_factory=dict)
    #: pods that exist and are not bound
    pending: list[str] = field(default_factory=list)
    #: expected pods that are gone from the store
    lost: list[str] = field(default_factory=list)
    #: pods whose spec.nodeName was set more than once or changed (per the watch)
    double_bound: list[str] = field(default_factory=list)
    #: pod key -> number of Scheduled Events, where it is not 1 for a bound pod / 0 else
    wrong_events: dict[str, int] = field(default_factory=dict)
    #: "node: resource used > allocatable" lines
    over_committed: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        out = [f"lost: {k}" for k in self.lost]
        out += [f"bound more than once: {k}" for k in self.double_bound]
        out += [f"{n} Scheduled events for {k}" for k, n in sorted(self.wrong_events.items())]
        out += [f"over-committed {line}" for line in self.over_committed]
        return out


def _watch_bindings(store: Store) -> tuple[dict[str, list[str]], set[str]]:
    """pod key -> the successive non-empty nodeName values the watch stream showed (a
    pod deleted and re-created starts again), and the pods created already bound (no
    scheduler bound them, so they have no Scheduled Event)."""
    seen: dict[str, list[str]] = {}
    created_bound: set[str] = set()
    last: dict[str, str] = {}
    cursor = "0-0"
    while True:
        batch = store.read_events(cursor, count=5000)
        if not batch:
            return seen, created_bound
        cursor = batch[-1].id
        for ev in batch:
            if ev.kind != "Pod":
                continue
            if ev.type == "DELETED":
                last.pop(ev.key, None)
                seen.pop(ev.key, None)
                created_bound.discard(ev.key)
                continue
            node = ((ev.obj or {}).get("spec") or {}).get("nodeName") or ""
            if ev.type == "ADDED" and node:
                created_bound.add(ev.key)
            if node and node != last.get(ev.key, ""):
                seen.setdefault(ev.key, []).append(node)
            last[ev.key] = node


def _over_committed(nodes: dict[str, Node], pods: Iterable[Pod]) -> list[str]:
    used: dict[str, Counter[str]] = {}
    for pod in pods:
        if pod.node_name in nodes:
            counts = used.setdefault(pod.node_name, Counter())
            counts.update({r: q for r, q in pod.requests.items() if r != PODS})
            counts[PODS] += 1
    out = []
    for name, counts in sorted(used.items()):
        alloc = nodes[name].allocatable
        for res, amount in sorted(counts.items()):
            if res == PODS and PODS not in alloc:
                continue
            if amount > alloc.get(res, 0):
                out.append(f"{name}: {res} {amount} > {alloc.get(res, 0)}")
    return out


def check_store(store: Store, expected: Iterable[str] | None = None) -> StoreReport:
    """Check the invariants over everything ``store`` holds (see the module docstring);
    ``expected`` pod keys that are missing are reported lost."""
    report = StoreReport()
    pods: list[Pod] = []
    for doc in store.list("Pod"):
        obj: Any = parse_object(doc)
        if isinstance(obj, Pod):
            pods.append(obj)
    nodes = {
        n.name: n for n in (parse_object(d) for d in store.list("Node")) if isinstance(n, Node)
    }
    keys = {p.key for p in pods}
    report.lost = sorted(set(expected or ()) - keys)
    for pod in pods:
        if pod.node_name:
            report.bound[pod.key] = pod.node_name
        else:
            report.pending.append(pod.key)
    report.pending.sort()
    bindings, created_bound = _watch_bindings(store)
    for key, nodes_seen in bindings.items():
        if key in keys and len(nodes_seen) > 1:
            report.double_bound.append(key)
    report.double_bound.sort()
    scheduled = Counter(e["key"] for e in store.events(reason="Scheduled"))
    for key in keys | set(scheduled):
        want = 1 if key in report.bound and key not in created_bound else 0
        if key in keys and scheduled.get(key, 0) != want:
            report.wrong_events[key] = scheduled.get(key, 0)
    report.over_committed = _over_committed(nodes, pods)
    return report
