"""What one scheduling attempt computed (``AttemptResult``: ``explain`` prints it,
``schedule_one`` takes its host) and how an attempt fails outright (``PreFilterError``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cluster_sched.framework.diagnosis import Diagnosis
from cluster_sched.framework.status import Status
from cluster_sched.nodetable.table import NodeTable

__all__ = ["AttemptResult", "PreFilterError"]


@dataclass(slots=True)
class AttemptResult:
    """Everything one attempt computed; ``explain`` prints it, ``schedule_one`` uses the host."""

    suggested_host: str | None
    evaluated_nodes: int
    #: feasible rows of ``table``, in evaluation order
    feasible_rows: np.ndarray
    table: NodeTable
    #: node -> Status for every evaluated node that failed
    diagnosis: Diagnosis
    #: plugin -> int64[len(feasible)] before NormalizeScore (empty when not scored)
    raw_scores: dict[str, np.ndarray] = field(default_factory=dict)
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    total_scores: np.ndarray | None = None
    #: top nodes (up to 3) by total score, selected first
    top_nodes: list[tuple[str, int]] = field(default_factory=list)
    num_all_nodes: int = 0

    @property
    def feasible_nodes(self) -> list[str]:
        return self.table.name_array()[self.feasible_rows].tolist()  # type: ignore[no-any-return]


class PreFilterError(Exception):
    """A plugin returned Error (not a rejection) at PreFilter/PreScore: the attempt fails."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())
