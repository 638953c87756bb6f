"""What the kernels read and answer: the profile's two resource plugins, one pod's
requests (their PreFilter/PreScore state), the other plugins' columns, the result.

Values only; ``kernels.evaluate`` packs them into the arrays ``kernels.fused`` takes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from cluster_sched.api.objects import CPU, MEMORY, Pod
from cluster_sched.config.plugin_args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
)
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import MAX_NODE_SCORE
from cluster_sched.kernels import fused, scalar
from cluster_sched.plugins import names
from cluster_sched.plugins.noderesources import balanced_allocation, fit
from cluster_sched.plugins.noderesources.balanced_allocation import BalancedAllocation
from cluster_sched.plugins.noderesources.fit import Fit
from cluster_sched.plugins.noderesources.scorers import Scorer

if TYPE_CHECKING:
    from cluster_sched.framework.runtime import Framework

_MODES = {
    LEAST_ALLOCATED: scalar.LEAST_ALLOCATED,
    MOST_ALLOCATED: scalar.MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO: scalar.REQUESTED_TO_CAPACITY_RATIO,
}
#: The kernel's domain: every allocatable, requested and request value below it, so no
#: product the scorers form (``x * 100``, weights) can leave int64. The numpy scorers are
#: exact beyond it (past int64 where upstream would wrap); the compiled path declines
#: there (``fast_path``), so the two never have to agree on wrap-around.
VALUE_LIMIT = 2**56
#: Score plugins the kernel computes itself; the others come in as columns (see package doc).
FUSED_SCORE_PLUGINS = frozenset(
    {names.NODE_RESOURCES_FIT, names.NODE_RESOURCES_BALANCED_ALLOCATION}
)
#: Score plugins whose NormalizeScore is DefaultNormalizeScore: pass their raw column as
#: a NormalizedScore (reverse for TaintToleration) and the kernel normalises over the
#: feasible nodes it finds.
DEFAULT_NORMALIZED_SCORE_PLUGINS = {names.TAINT_TOLERATION: True, names.NODE_AFFINITY: False}
#: Score plugins without NormalizeScore whose score does not depend on the feasible set:
#: their weighted column can be the ``extra`` column.
FEASIBLE_INDEPENDENT_SCORE_PLUGINS = frozenset({names.IMAGE_LOCALITY})


@dataclass(frozen=True, slots=True)
class KernelProfile:
    """The profile's NodeResourcesFit (its Filter is always applied) and, unless None,
    BalancedAllocation, with their Score weights (0: not a score plugin of the profile)."""

    fit: Fit
    balanced: BalancedAllocation | None = None
    fit_weight: int = 1
    balanced_weight: int = 1
    #: the strategy's scorer, as the plugin builds it (the reference path uses it)
    scorer: Scorer = field(init=False, repr=False, compare=False)
    mode: int = field(init=False)
    #: int64[m]: fused.SRC_* of each configured Fit score resource
    s_srcs: np.ndarray = field(init=False, repr=False, compare=False)
    s_weights: np.ndarray = field(init=False, repr=False, compare=False)
    #: int64[S] RequestedToCapacityRatio shape (utilisation, score scaled to 0..100)
    shape_u: np.ndarray = field(init=False, repr=False, compare=False)
    shape_s: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        strategy = self.fit.args.scoring_strategy
        shape = (
            strategy.requested_to_capacity_ratio.shape
            if strategy.requested_to_capacity_ratio is not None
            else ()
        )
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        srcs = [
            fused.SRC_NONZERO_CPU
            if r.name == CPU
            else fused.SRC_NONZERO_MEMORY
            if r.name == MEMORY
            else fused.SRC_REQUESTED
            for r in self.fit.resources
        ]
        values: dict[str, Any] = {
            "scorer": fit.strategy_scorer(strategy),
            "mode": _MODES[strategy.type],
            "s_srcs": _i64(srcs),
            "s_weights": _i64([r.weight for r in self.fit.resources]),
            "shape_u": _i64([p.utilization for p in shape]),
            "shape_s": _i64([p.score * scale for p in shape]),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_framework(cls, fwk: Framework) -> KernelProfile | None:
        """The profile's resource plugins, or None when NodeResourcesFit is not one of its
        Filter plugins (the kernel always applies that filter: use the numpy path)."""
        pl = fwk.plugins.get(names.NODE_RESOURCES_FIT)
        if pl is None or pl not in fwk.filter:
            return None
        ba = fwk.plugins.get(names.NODE_RESOURCES_BALANCED_ALLOCATION)
        return cls(
            pl,
            ba if ba in fwk.score else None,
            fwk.score_weights.get(names.NODE_RESOURCES_FIT, 0),
            fwk.score_weights.get(names.NODE_RESOURCES_BALANCED_ALLOCATION, 0),
        )


class KernelProfiles:
    """``KernelProfile.from_framework`` once per framework: the compiled path and the
    shards' kernels ask for it on every pod, and a framework's plugins never change."""

    def __init__(self) -> None:
        self._by_framework: dict[int, KernelProfile | None] = {}

    def of(self, fwk: Framework) -> KernelProfile | None:
        key = id(fwk)
        if key not in self._by_framework:
            self._by_framework[key] = KernelProfile.from_framework(fwk)
        return self._by_framework[key]


@dataclass(frozen=True, slots=True)
class PodRequests:
    """One pod's inputs to the two resource plugins: exactly their CycleState."""

    #: NodeResourcesFit PreFilter state: (resource, amount) in check order
    checked: tuple[tuple[str, int], ...]
    #: NodeResourcesFit PreScore state: int64[m], non-zero cpu/memory defaults applied
    fit_score: np.ndarray
    #: BalancedAllocation PreScore state int64[m2]; None when its PreScore said Skip
    balanced: np.ndarray | None
    #: the kernels' packed vectors per (table resources, profile): a pod evaluated again
    #: (speculation, then commit) or shared by a Deployment's pods is packed once
    packed: dict[tuple[int, int, int], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def from_cycle_state(cls, state: CycleState) -> PodRequests:
        """Read the plugins' state once PreFilter and PreScore have run (KeyError if not).

        Both PreScores depend on the pod only, so the cycle may run them before Filter.
        """
        skipped = names.NODE_RESOURCES_BALANCED_ALLOCATION in state.skip_score_plugins
        return cls(
            state.read(fit.STATE_KEY).requests,
            state.read(fit.SCORE_STATE_KEY).pod_requests,
            None if skipped else state.read(balanced_allocation.SCORE_STATE_KEY).pod_requests,
        )

    @classmethod
    def of_pod(cls, pod: Pod, profile: KernelProfile) -> PodRequests:
        """Run the plugins' own PreFilter/PreScore on a scratch CycleState.

        The class's methods, not the instance's: with metrics on, the instance's are
        the instrumentation's wrappers, and a scratch state is no scheduling cycle (it
        would draw a plugin-timing sample and count evaluations of its own)."""
        state = CycleState()
        fit_plugin = type(profile.fit)
        fit_plugin.pre_filter(profile.fit, state, pod, None)
        fit_plugin.pre_score(profile.fit, state, pod, None, None)
        ba = profile.balanced
        if ba is None or not type(ba).pre_score(ba, state, pod, None, None).is_success:
            state.skip_score_plugins.add(names.NODE_RESOURCES_BALANCED_ALLOCATION)
        return cls.from_cycle_state(state)


@dataclass(frozen=True, slots=True)
class NormalizedScore:
    """A DefaultNormalizeScore plugin's raw Score of every row (int64[cap]), normalised
    by the kernel over the feasible nodes it finds, then weighted."""

    raw: np.ndarray
    reverse: bool
    weight: int


@dataclass(frozen=True, slots=True)
class PodQuery:
    """One pod's evaluation: its requests, where the window starts, the other plugins."""

    requests: PodRequests
    #: the scheduler's next_start_node_index (taken modulo the window length)
    start: int = 0
    #: bool/uint8 by row (at least up to the last row of the window), non-zero = passes:
    #: the other Filter plugins' verdicts
    masks: tuple[np.ndarray, ...] = ()
    normalized: tuple[NormalizedScore, ...] = ()
    #: int64[cap] by row, added to the totals as is (already weighted, in range)
    extra: np.ndarray | None = None
    #: the columns are never written again (a pod shape's): their packed stacks are
    #: kept and reused by later queries with the same columns
    stable: bool = False


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One pod's answer; identical from the kernel and from the numpy reference."""

    #: int64[k]: feasible rows in evaluation order (rotation from ``start``)
    feasible_rows: np.ndarray
    #: int64[k]: weighted total per feasible row (zeros when k < 2: nothing is scored)
    totals: np.ndarray
    #: nodes evaluated: advance next_start_node_index by this
    evaluated: int
    best: int
    #: int64[t]: positions in ``feasible_rows`` holding ``best``, in order
    ties: np.ndarray
    #: fused.STATUS_*: INVALID_SCORE means re-run the numpy path (it raises the error)
    status: int = fused.STATUS_OK

    def add_scores(self, scores: np.ndarray) -> Evaluation:
        """Totals plus weighted normalised scores the kernel does not compute
        (int64[k], e.g. PodTopologySpread, InterPodAffinity), best and ties redone."""
        if len(self.feasible_rows) < 2:
            return self
        totals = self.totals + scores
        best = int(totals.max())
        ties = np.flatnonzero(totals == best).astype(np.int64)
        return Evaluation(self.feasible_rows, totals, self.evaluated, best, ties, self.status)

    def select_row(self, rng: random.Random) -> int:
        """The chosen row, drawing from ``rng`` exactly as algorithm.select_host does."""
        t = self.ties
        return int(self.feasible_rows[t[rng.randrange(len(t))] if len(t) > 1 else t[0]])


class BatchEvaluation(Sequence[Evaluation]):
    """``evaluate_batch``'s answers: one Evaluation per query, built when read (a batch's
    later pods are often re-evaluated at commit and never read)."""

    __slots__ = ("meta", "out")

    def __init__(self, out: np.ndarray, meta: np.ndarray) -> None:
        #: int64[B, 3, K]: per query, feasible rows, their totals, tie positions
        self.out = out
        #: int64[B, 5]: per query (found, evaluated, best, n_ties, status)
        self.meta = meta

    def __len__(self) -> int:
        return len(self.meta)

    @overload
    def __getitem__(self, i: int) -> Evaluation: ...

    @overload
    def __getitem__(self, i: slice) -> list[Evaluation]: ...

    def __getitem__(self, i: int | slice) -> Evaluation | list[Evaluation]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        found, evaluated, best, n_ties, status = self.meta[i].tolist()
        o = self.out[i]
        return Evaluation(o[0, :found], o[1, :found], evaluated, best, o[2, :n_ties], status)


def _i64(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)
