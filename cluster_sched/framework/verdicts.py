"""Vectorised Filter results: one code per evaluated node, reasons interned."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster_sched.framework.status import Code


@dataclass(slots=True)
class NodeVerdicts:
    """A Filter plugin's answer for ``k`` nodes.

    - ``codes``: int8[k], ``Code`` values; 0 (SUCCESS) where the node passes
    - ``reason_ids``: int32[k], index into ``reasons`` where the node fails
    - ``reasons``: the distinct reason tuples (a node may fail for several reasons at once,
      e.g. ``("Insufficient cpu", "Insufficient memory")``)
    """

    codes: np.ndarray
    reason_ids: np.ndarray
    reasons: list[tuple[str, ...]]

    @classmethod
    def passing(cls, k: int) -> NodeVerdicts:
        return cls(np.zeros(k, dtype=np.int8), np.zeros(k, dtype=np.int32), [])

    @classmethod
    def from_mask(cls, fails: np.ndarray, code: Code, *reasons: str) -> NodeVerdicts:
        """Nodes where ``fails`` is True get ``code`` and the single reason tuple."""
        codes = np.where(fails, np.int8(code), np.int8(0)).astype(np.int8)
        return cls(codes, np.zeros(len(fails), dtype=np.int32), [tuple(reasons)])

    @classmethod
    def missing_state(cls, k: int, key: str) -> NodeVerdicts:
        """Every node errors: a Filter ran without the state its PreFilter writes."""
        return cls.from_mask(
            np.ones(k, dtype=bool), Code.ERROR, f'reading "{key}" from cycleState: not found'
        )

    def merge_first_failure(self, other: NodeVerdicts) -> None:
        """Where this passes and ``other`` fails, take ``other``'s verdict (first failing
        plugin wins, as upstream stops a node's filters at the first failure)."""
        take = (self.codes == 0) & (other.codes != 0)
        if not take.any():
            return
        offset = len(self.reasons)
        self.reasons.extend(other.reasons)
        self.codes[take] = other.codes[take]
        self.reason_ids[take] = other.reason_ids[take] + offset

    @property
    def passed(self) -> np.ndarray:
        return self.codes == 0

    def reasons_of(self, i: int) -> tuple[str, ...]:
        return self.reasons[int(self.reason_ids[i])] if self.codes[i] else ()
