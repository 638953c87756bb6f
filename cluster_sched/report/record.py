"""What one finished run recorded, gathered once for the report and the summary.

The run itself keeps recording cheap (per-pod dict entries in
:class:`~cluster_sched.scheduler.stats.RunStats`); everything heavier (parsing the final
store objects, per-node arithmetic) happens here, after the scheduling loop has stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

from cluster_sched.api.evolve import evolve
from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.api.objects import Node, Pod
from cluster_sched.errors import InvalidObjectError
from cluster_sched.scheduler.stats import RunStats

__all__ = ["ZONE_LABELS", "RunRecord", "build_record", "record_of", "zone_of"]

#: Node labels naming a node's zone, newest spelling first (the heatmap's grouping).
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
#: The zone of a node that has none of ZONE_LABELS.
NO_ZONE = "(no zone)"


def zone_of(node: Node) -> str:
    for label in ZONE_LABELS:
        value = node.labels.get(label)
        if value is not None:
            return value
    return NO_ZONE


@dataclass(frozen=True, slots=True)
class RunRecord:
    """The inputs of every report figure: the store's final nodes and pods, the run's
    stats, and which pod group each pod belongs to."""

    #: every node in the store at the end of the run, sorted by name
    nodes: tuple[Node, ...]
    #: every pod in the store at the end of the run, sorted by key
    pods: tuple[Pod, ...]
    stats: RunStats
    #: pod group name -> keys of its pods, in the workload's group order
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def bound(self) -> list[Pod]:
        """Pods bound to a node at the end of the run."""
        return [p for p in self.pods if p.node_name]

    @property
    def pending(self) -> list[Pod]:
        """Pods still without a node at the end of the run (not being deleted)."""
        return [p for p in self.pods if not p.node_name and p.meta.deletion_timestamp is None]


def _parsed(docs: Iterable[Mapping[str, Any]], parse: Any) -> list[Any]:
    """Objects that parse; one the coordinator already reported as invalid is skipped.
    The objects keep no manifest (``raw``): no figure reads it, and a million manifests
    would more than double what the record holds."""
    out = []
    for doc in docs:
        try:
            out.append(evolve(parse(doc), raw=None))
        except InvalidObjectError:
            continue
    return out


def build_record(
    node_docs: Iterable[Mapping[str, Any]],
    pod_docs: Iterable[Mapping[str, Any]],
    stats: RunStats,
    groups: Mapping[str, Iterable[str]] | None = None,
) -> RunRecord:
    """A RunRecord from the store's final Node and Pod manifests (``Store.list``)."""
    return _record(_parsed(node_docs, parse_node), _parsed(pod_docs, parse_pod), stats, groups)


_Parsed = TypeVar("_Parsed", Node, Pod)


def record_of(
    nodes: Iterable[Node],
    pods: Iterable[Pod],
    stats: RunStats,
    groups: Mapping[str, Iterable[str]] | None = None,
    *,
    handed_over: bool = False,
) -> RunRecord:
    """A RunRecord from the final nodes and pods already parsed (an informer's): the
    same record ``build_record`` makes of their manifests, without parsing them again.

    ``handed_over``: the caller lets go of the objects (an informer whose loop ended),
    so each one's manifest is dropped in place instead of the object being copied
    without it: copying a million nodes and a million pods took about 20 s of a run's
    end (issue 22), dropping a reference takes none. Otherwise they are copied: the
    caller's objects keep their manifests."""
    if handed_over:
        return _record([_drop_raw(n) for n in nodes], [_drop_raw(p) for p in pods], stats, groups)
    return _record(
        [evolve(n, raw=None) for n in nodes], [evolve(p, raw=None) for p in pods], stats, groups
    )


def _drop_raw(obj: _Parsed) -> _Parsed:
    """``obj`` without its manifest, in place: only for objects nobody else reads any
    more (``record_of``'s ``handed_over``), the one place a parsed object is changed."""
    if obj.raw is not None:
        object.__setattr__(obj, "raw", None)
    return obj


def _record(
    nodes: list[Node],
    pods: list[Pod],
    stats: RunStats,
    groups: Mapping[str, Iterable[str]] | None,
) -> RunRecord:
    nodes.sort(key=attrgetter("meta.name"))
    pods.sort(key=attrgetter("key"))
    return RunRecord(
        nodes=tuple(nodes),
        pods=tuple(pods),
        stats=stats,
        groups={name: tuple(keys) for name, keys in (groups or {}).items()},
    )
