"""Request sums past int64, kept exactly beside the table's int64 columns.

Every quantity the manifest parser admits fits int64 (cpu in milli-units), and so does
every pod's total; a node's sum over its pods need not. The Fit filter keeps scheduled
pods within allocatable, but pods bound by hand (``spec.nodeName``) and assumed pods
are accounted whatever they ask for: ten pre-bound pods of ``1E`` bytes pass int64.
Upstream's NodeInfo adds int64s and silently wraps there; a wrapped sum turns a full
node into an empty one, or a score negative.

So the table's ``requested`` / ``free`` / ``nonzero`` cells *saturate*: a cell whose true
sum leaves ``[-INT64_MAX, INT64_MAX]`` holds the bound, and this ledger holds the exact
sum, so removing the pods again restores the exact value (adds and removes stay
reversible). A saturated ``requested`` is at least any allocatable, which is what every
reader needs: Fit sees no room, the scorers see a full node, as they would the exact sum.

Checking is cheap on the common path: the table keeps, per row, the sum of its pods'
largest amounts (``amount_bound``, float64), which bounds every cell of the row. Below
``BOUND_LIMIT`` (2**62, far from any float rounding) no cell can overflow and the usual
numpy updates run; only rows past it take the exact path, pod by pod, in Python ints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

from cluster_sched.api.objects import Pod


class _Columns(Protocol):
    """The NodeTable columns the exact path keeps in step (int64[R, cap], int64[2, cap])."""

    allocatable: np.ndarray
    requested: np.ndarray
    free: np.ndarray
    nonzero: np.ndarray


def pod_amount(pod: Pod) -> int:
    """The largest amount ``pod`` adds to any cell of its row."""
    return max(pod.nonzero_cpu, pod.nonzero_memory, max(pod.requests.values(), default=0))


__all__ = [
    "BOUND_LIMIT",
    "INT64_MAX",
    "NONZERO",
    "REQUESTED",
    "OverflowLedger",
    "pod_amount",
    "saturating_add",
]

INT64_MAX = 2**63 - 1
#: A row whose ``amount_bound`` stays below this cannot overflow int64 in any cell.
BOUND_LIMIT = float(2**62)

#: Which matrix a ledger key refers to.
REQUESTED, NONZERO = 0, 1


def _clamp(value: int) -> int:
    return -INT64_MAX if value < -INT64_MAX else INT64_MAX if value > INT64_MAX else value


def saturating_add(values: np.ndarray, amount: int) -> np.ndarray:
    """``values + amount`` for int64 ``values`` in [-INT64_MAX, INT64_MAX], saturating
    at the bounds instead of wrapping (a node's usage plus the incoming pod's request in
    the scorers; image sizes summed per node)."""
    amount = _clamp(int(amount))
    if amount >= 0:
        return np.minimum(values, INT64_MAX - amount) + amount
    return np.maximum(values, -INT64_MAX - amount) + amount


class OverflowLedger:
    """Exact sums of the saturated cells, by ``(matrix, column, row)``.

    ``matrix`` is REQUESTED or NONZERO. Empty in every table that never saw an int64
    overflow, which is every table in practice.
    """

    __slots__ = ("_exact", "_rows")

    def __init__(self) -> None:
        self._exact: dict[tuple[int, int, int], int] = {}
        self._rows: Counter[int] = Counter()

    def __bool__(self) -> bool:
        return bool(self._exact)

    def has_row(self, row: int) -> bool:
        return row in self._rows

    def exact(self, matrix: int, col: int, row: int) -> int | None:
        """The exact value of a saturated cell, None if the cell is not saturated."""
        return self._exact.get((matrix, col, row))

    def add(
        self,
        which: int,
        matrix: np.ndarray,
        cols: Sequence[int],
        row: int,
        deltas: Sequence[int],
    ) -> None:
        """``matrix[c, row] += d`` for each (c, d), exactly: saturated cells are clamped
        in ``matrix`` and remembered here; cells back in range leave the ledger."""
        for col, delta in zip(cols, deltas, strict=True):
            key = (which, int(col), row)
            before = self._exact.get(key)
            value = (int(matrix[col, row]) if before is None else before) + int(delta)
            clamped = _clamp(value)
            matrix[col, row] = clamped
            if clamped == value:
                if before is not None:
                    del self._exact[key]
                    self._rows[row] -= 1
                    if not self._rows[row]:
                        del self._rows[row]
            else:
                if before is None:
                    self._rows[row] += 1
                self._exact[key] = value

    def has_any(self, rows: Iterable[int]) -> bool:
        """Whether any of ``rows`` holds a saturated cell."""
        return bool(self._rows) and not self._rows.keys().isdisjoint(rows)

    def add_pod_exact(
        self,
        table: _Columns,
        row: int,
        cols: list[int],
        deltas: list[int],
        cpu: int,
        memory: int,
    ) -> None:
        """One pod's accounting on ``row`` in Python ints: ``requested[cols] += deltas``
        (``free`` follows) and ``nonzero += (cpu, memory)``, saturating into the ledger."""
        self.add(REQUESTED, table.requested, cols, row, deltas)
        for col in cols:
            free = int(table.allocatable[col, row]) - int(table.requested[col, row])
            table.free[col, row] = _clamp(free)
        self.add(NONZERO, table.nonzero, (0, 1), row, (cpu, memory))

    def add_pods_exact(
        self,
        table: _Columns,
        rows: Sequence[int],
        columns: Sequence[tuple[int, np.ndarray]],
        cpu: np.ndarray,
        memory: np.ndarray,
        sign: int,
    ) -> None:
        """NodeTable.add_pods' column updates pod by pod through add_pod_exact (the
        batch may pass int64 somewhere): the same state add_pod one by one leaves."""
        per_pod = [(col, vals.tolist()) for col, vals in columns]
        cpus, memories = cpu.tolist(), memory.tolist()
        for i, row in enumerate(rows):
            cols = [col for col, vals in per_pod if vals[i]]
            deltas = [sign * vals[i] for _, vals in per_pod if vals[i]]
            self.add_pod_exact(table, row, cols, deltas, sign * cpus[i], sign * memories[i])

    def clear_row(self, row: int) -> None:
        """Forget a row's cells (its node was removed or re-added: accounting restarts)."""
        if row not in self._rows:
            return
        for key in [k for k in self._exact if k[2] == row]:
            del self._exact[key]
        del self._rows[row]

    def subset(self, remap: Mapping[int, int]) -> OverflowLedger:
        """The ledger of a table holding rows ``remap`` keys as rows ``remap`` values."""
        out = OverflowLedger()
        for (which, col, row), value in self._exact.items():
            new_row = remap.get(row)
            if new_row is not None:
                out._exact[(which, col, new_row)] = value
                out._rows[new_row] += 1
        return out

    def items(self) -> Iterable[tuple[tuple[int, int, int], int]]:
        return self._exact.items()
