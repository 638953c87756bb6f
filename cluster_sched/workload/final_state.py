"""The cluster as a run left it: the report's record and the placements.

The end of a run used to list every node and pod back from the store and parse each
again (about 120 s at a million pods, issue 22), though the coordinator's informer
already holds each one parsed. ``informer_view`` keeps the informer's objects (and how
far into the store's writes it had read) when the loop ends; ``final_record`` builds the
record from them when they are provably the store's final objects: the informer applied
the store's last write (its resourceVersion is the store's counter, after the
coordinator closed) and holds as many pods and nodes as the store (so none it dropped:
a terminal or unparseable one, which the store keeps and the record, reading the store,
would count or skip by its own rules). Otherwise (bindings written on close, another
client's writes, a relist after a gap) the store is listed and parsed as before; both
give the same record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_sched.api.objects import Node, Pod
from cluster_sched.report.record import RunRecord, build_record, record_of
from cluster_sched.scheduler.informer import Informer
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.store import Store

__all__ = [
    "InformerView",
    "final_record",
    "informer_view",
    "listing",
    "placements_from_docs",
    "placements_from_store",
]


def placements_from_store(store: Store) -> dict[str, str]:
    return placements_from_docs(store.list("Pod"))


def placements_from_docs(pod_docs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``namespace/name`` -> node of every bound pod, sorted by key."""
    out: dict[str, str] = {}
    for _ in _noting_placements(pod_docs, out):
        pass
    return dict(sorted(out.items()))


def _noting_placements(
    pod_docs: Iterable[Mapping[str, Any]], out: dict[str, str]
) -> Iterator[Mapping[str, Any]]:
    """Pass the docs on, noting each bound pod's node in ``out`` as it goes by: one pass
    over the store's pods serves both the placements and the report's record."""
    for doc in pod_docs:
        node = (doc.get("spec") or {}).get("nodeName")
        if node:
            meta = doc.get("metadata") or {}
            out[f"{meta.get('namespace', 'default')}/{meta.get('name')}"] = node
        yield doc


def listing(store: Store) -> tuple[Iterator[dict[str, Any]], Iterator[dict[str, Any]]]:
    """The store's nodes and pods, read now, decoded one at a time when iterated."""
    return store.iter_list("Node"), store.iter_list("Pod")


@dataclass(slots=True)
class InformerView:
    """What the informer held when the loop ended: its parsed nodes and pods by key and
    the resourceVersion of the last write it applied (0: none since its listing)."""

    nodes: dict[str, Node]
    pods: dict[str, Pod]
    rv: int
    #: unreadable stream entries or stored objects it met (any: not trusted)
    unreadable: int


def informer_view(informer: Informer) -> InformerView:
    return InformerView(informer.nodes, informer.pods, informer.last_rv, informer.unreadable)


def _current(view: InformerView, store: Store) -> bool:
    """The informer's objects are the store's: it applied the store's last write and
    dropped none of the store's pods or nodes."""
    return (
        view.rv > 0
        and view.unreadable == 0
        and store.resource_version() == view.rv
        and store.count("Pod") == len(view.pods)
        and store.count("Node") == len(view.nodes)
    )


def _drain(objects: dict[str, Any]) -> Iterator[Any]:
    """The values, each let go by the dict as it is handed on (the record keeps a copy
    without its manifest: the originals are freed one by one, not all at the end)."""
    while objects:
        yield objects.popitem()[1]


def final_record(
    view: InformerView | None,
    store: Store,
    taken: tuple[Iterator[dict[str, Any]], Iterator[dict[str, Any]]] | None,
    stats: RunStats,
    groups: Mapping[str, Iterable[str]],
    release: Callable[[], object] = lambda: None,
) -> tuple[RunRecord, dict[str, str]]:
    """The record of the run's end and its placements (bound pod key -> node, sorted).

    ``taken``: a listing read before the coordinator closed (bindings were still in
    flight); it is used as it is. ``view``: the informer's objects (``informer_view``),
    used when current (``_current``). Otherwise the store is listed now.

    ``release`` (the runner's full collection, which frees the dropped coordinator) is
    called before a listing's objects are decoded, so they do not add to it at the peak,
    but after a record made of the informer's objects: that allocates next to nothing
    and drops every manifest (``record_of``), so the collection walks a heap without
    them (a million nodes and pods' manifests: tens of millions of containers)."""
    if taken is None and view is not None and _current(view, store):
        record = record_of(_drain(view.nodes), _drain(view.pods), stats, groups, handed_over=True)
        placements = {p.key: p.node_name for p in record.pods if p.node_name}
        release()
        return record, dict(sorted(placements.items()))
    release()
    node_docs, pod_docs = taken or listing(store)
    placed: dict[str, str] = {}
    record = build_record(node_docs, _noting_placements(pod_docs, placed), stats, groups)
    return record, dict(sorted(placed.items()))
