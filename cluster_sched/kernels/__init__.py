"""Compiled hot path: NodeResourcesFit Filter + Score + BalancedAllocation + the best-score
tie set of a pod over a window of nodes, in one numba pass (issue 9, point 3).

How the cycle calls it (``scheduler/algorithm.py``, once the lead wires it in)::

    profile = KernelProfile.from_framework(fwk)          # once per profile; None: decline
    requests = PodRequests.of_pod(pod, profile)          # or .from_cycle_state(state)
    query = PodQuery(requests, start=sched.next_start_node_index,
                     masks=(...), normalized=(...), extra=...)
    ev = evaluate_pod(table, profile, query, to_find, order=rows)
    sched.next_start_node_index = (sched.next_start_node_index + ev.evaluated) % n
    host_row = ev.select_row(sched.rng)                  # same RNG draws as select_host

Inputs from NodeTable: ``allocatable``, ``requested``, ``free``, ``nonzero``,
``pod_count``, ``allowed_pods`` (read as they are, never copied), ``resources`` (names
to columns) and ``order()`` (or the PreFilterResult-narrowed rows, in nodeTree order).
From the CycleState: NodeResourcesFit's PreFilter state (the checked requests) and
PreScore state (the non-zero request vector), BalancedAllocation's PreScore state or its
Skip. Both PreScores depend on the pod alone, so they may run before Filter.
``to_find`` is ``num_feasible_nodes_to_find(pct, len(rows))`` (or 1 without Score
plugins).

The other plugins come in as columns indexed by row (``PodQuery``):
- Filter: any plugin's verdict as a bool column, True = passes (the table's memoised
  taint / node-affinity / node-selector masks, unschedulable, node name, node ports, and
  the cross-node filters computed for this state). One combined column (``&`` of them)
  keeps the filter on its unrolled path (up to 4 checked resources, at most one mask).
- Score: TaintToleration and NodeAffinity (DefaultNormalizeScore) as ``NormalizedScore``
  raw columns, normalised here over the feasible nodes found; ImageLocality (no
  NormalizeScore, feasible-independent) pre-weighted as ``extra`` (its range is the
  caller's to check).
- PodTopologySpread and InterPodAffinity normalise with their own min/max rules: when
  they score (not Skip), add their weighted normalised scores over ``ev.feasible_rows``
  with ``ev.add_scores`` before ``select_row``.

Use the numpy path instead when: the profile has no NodeResourcesFit Filter
(``from_framework`` returns None); nodes in the window carry nominated pods of priority
>= the pod's (two-pass Filter); ``ev.status`` is STATUS_INVALID_SCORE (a score left
[0, 100] after int64 overflow: the numpy path raises the framework's error naming the
plugin). The nominated node tried first is a one-row window (``order=[row]``). The
diagnosis (a status per failing node, for FitError and PostFilter) is not computed here:
the failing rows are the window's first ``ev.evaluated`` rows minus ``ev.feasible_rows``;
run the plugins' Filter on those rows for their statuses.

``evaluate_batch`` answers B pods against one table state in one call (a
``BatchEvaluation``; pods sharing a ``PodRequests`` object are packed once), for the
batched scheduler's speculation. The numpy reference with ``evaluate_pod``'s signature
is ``reference.evaluate_pod_reference``. Call ``warm_up()`` at start-up: numba compiles
once per machine (``cache=True``) and loads from its cache in every later process.
"""

from cluster_sched.kernels.evaluate import evaluate_batch, evaluate_pod, fits_row, warm_up
from cluster_sched.kernels.fused import STATUS_INVALID_SCORE, STATUS_OK
from cluster_sched.kernels.inputs import (
    DEFAULT_NORMALIZED_SCORE_PLUGINS,
    FEASIBLE_INDEPENDENT_SCORE_PLUGINS,
    FUSED_SCORE_PLUGINS,
    VALUE_LIMIT,
    BatchEvaluation,
    Evaluation,
    KernelProfile,
    KernelProfiles,
    NormalizedScore,
    PodQuery,
    PodRequests,
)
from cluster_sched.kernels.reference import evaluate_pod_reference

__all__ = [
    "DEFAULT_NORMALIZED_SCORE_PLUGINS",
    "FEASIBLE_INDEPENDENT_SCORE_PLUGINS",
    "FUSED_SCORE_PLUGINS",
    "STATUS_INVALID_SCORE",
    "STATUS_OK",
    "VALUE_LIMIT",
    "BatchEvaluation",
    "Evaluation",
    "KernelProfile",
    "KernelProfiles",
    "NormalizedScore",
    "PodQuery",
    "PodRequests",
    "evaluate_batch",
    "evaluate_pod",
    "evaluate_pod_reference",
    "fits_row",
    "warm_up",
]
