"""One small interface per extension point, as upstream's framework/interface.go.

Filter and Score are vectorised: they receive a ``NodeSlice`` (a shard's NodeTable plus
the rows to evaluate) and answer for all of them at once. A plugin implements an
extension point by defining the method; the registry detects which ones it has.

Contracts:
- ``pre_filter`` may narrow the nodes (``PreFilterResult.node_names``) or return Skip,
  which skips the plugin's Filter for this pod. It must be deterministic from the pod and
  the snapshot: shards re-run it to rebuild their CycleState.
- ``filter`` must not mutate the table; it answers one verdict per row.
- ``score`` returns int64[k]; ``normalize_score`` maps all feasible nodes' scores (the
  whole cluster's, gathered by the coordinator) into [0, 100].
- ``unreserve`` must be idempotent: it runs on every failure after Reserve, even for
  plugins whose Reserve never ran.
- ``permit`` returns (Status, timeout seconds); WAIT parks the pod in the waiting-pods map.
- Wherever a Status is due, a plugin may return None: upstream's nil Status, Success
  (``status.as_status``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.status import Status
from cluster_sched.framework.verdicts import NodeVerdicts

if TYPE_CHECKING:
    from cluster_sched.framework.events import ClusterEvent, ClusterEventWithHint
    from cluster_sched.nodetable.table import NodeTable

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


@dataclass(frozen=True, slots=True)
class NodeSlice:
    """Rows of one shard's table: ``rows`` int64[k] index into ``table``'s columns.

    ``prefix`` says ``rows`` is exactly ``0..k-1``: then ``take`` returns views instead
    of gathering, which is most of the cost of a full scan.
    """

    table: NodeTable
    rows: np.ndarray
    prefix: bool = False

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, column: np.ndarray) -> np.ndarray:
        """``column[rows]``: a view for a prefix slice, a gather otherwise."""
        if self.prefix:
            return column[: len(self.rows)]
        return column[self.rows]

    def names(self) -> list[str]:
        names = self.table.names
        return [names[r] for r in self.rows.tolist()]  # type: ignore[misc]


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """``node_names`` None means all nodes; otherwise only these may be evaluated."""

    node_names: frozenset[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    nominated_node_name: str = ""
    victims: tuple[str, ...] = ()


@dataclass(slots=True)
class NodeToStatus:
    """Diagnosis: each evaluated node's failing status, plus the status of nodes never
    evaluated because PreFilter narrowed them out (``absent_status``)."""

    statuses: dict[str, Status] = field(default_factory=dict)
    absent_status: Status | None = None


class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: Pod) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Protocol):
    name: str

    def less(self, a: Any, b: Any) -> bool: ...

    def sort_key(self, priority: int, timestamp: float) -> tuple[float, str]:
        """Encodes the order for the Redis activeQ: (score, lexicographic tiebreak)."""
        ...


class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_name: str) -> Status: ...

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_name: str
    ) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: Pod, snapshot: Any, feasible: NodeSlice) -> Status:
        """``feasible``: the feasible nodes (rows of the shard table); names via ``.names()``."""
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray: ...


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    """A Score plugin with ScoreExtensions."""

    name: str

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    """Plugins that can reject pods say which cluster events may make them schedulable,
    each optionally with a QueueingHintFn that filters it per waiting pod."""

    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]: ...


#: Extension point → the method a plugin needs to implement it.
EXTENSION_METHODS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


def capabilities_of(plugin_cls: type) -> frozenset[str]:
    """The extension points a plugin class implements, by the methods it defines."""
    return frozenset(
        ep for ep, meth in EXTENSION_METHODS.items() if callable(getattr(plugin_cls, meth, None))
    )
