"""Preemption candidates: which nodes to dry-run, and which candidate wins.

- Only nodes whose Filter status is Unschedulable may be helped by removing pods
  (UnschedulableAndUnresolvable ones may not).
- Upstream dry-runs nodes in parallel from a random offset and stops once it has
  ``num_candidates`` candidates of which at least one violates no PDB; this reads the
  answers in that same order (computed node by node, or window by window when the
  nodes are independent, see ``batch``), so the outcome is deterministic for a seed.
- The winner: fewest PDB violations; lowest highest-priority victim; smallest sum of
  priorities (each shifted by 2^31 so negative priorities cannot win by count); fewest
  victims; latest start among the highest-priority victims; then the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cluster_sched.plugins.defaultpreemption.victims import Victims, start_time

_INT32_SHIFT = 2**31


@dataclass(frozen=True, slots=True)
class Candidate:
    node_name: str
    victims: Victims


def num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """upstream calculateNumCandidates (int32 arithmetic, never above ``num_nodes``)."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


def _earliest_start_of_top_priority(v: Victims) -> float:
    """upstream GetEarliestPodStartTime: earliest start among the highest-priority victims."""
    top = max(p.priority for p in v.pods)
    return min(start_time(p) for p in v.pods if p.priority == top)


#: Victims id -> (the Victims, its scores): the dry run hands the same Victims object
#: back for a node that did not change (``fitonly``), so its scores are read once
_SCORES: dict[int, tuple[Victims, tuple[float, ...]]] = {}
_SCORES_MAX = 8192


def _score(c: Candidate) -> tuple[float, ...]:
    """``_scores`` of the candidate's victims, remembered per Victims object."""
    v = c.victims
    hit = _SCORES.get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1]
    if len(_SCORES) >= _SCORES_MAX:
        _SCORES.clear()
    score = _scores(c)
    _SCORES[id(v)] = (v, score)
    return score


def _scores(c: Candidate) -> tuple[float, ...]:
    """pickOneNodeForPreemption's scores, higher is better, in the order they apply."""
    pods = c.victims.pods
    # victims[0] is the node's most important victim (see Victims)
    top = pods[0].priority
    return (
        -c.victims.num_pdb_violations,
        -top,
        -sum(p.priority for p in pods) - _INT32_SHIFT * len(pods),
        -len(pods),
        _earliest_start_of_top_priority(c.victims),
    )


def pick_one(candidates: Sequence[Candidate]) -> Candidate | None:
    """upstream SelectCandidate + pickOneNodeForPreemption: each score in turn keeps the
    candidates that have its best value, and the first one left wins; that is the first
    candidate whose tuple of scores is the largest."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    return max(candidates, key=_score)
