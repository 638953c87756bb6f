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

from collections.abc import Callable, Sequence
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


def pick_one(candidates: Sequence[Candidate]) -> Candidate | None:
    """upstream SelectCandidate + pickOneNodeForPreemption."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    score_funcs: list[Callable[[Candidate], float]] = [
        lambda c: -c.victims.num_pdb_violations,
        # victims[0] is the node's most important victim (see Victims)
        lambda c: -c.victims.pods[0].priority,
        lambda c: -sum(p.priority + _INT32_SHIFT for p in c.victims.pods),
        lambda c: -len(c.victims.pods),
        lambda c: _earliest_start_of_top_priority(c.victims),
    ]
    remaining = list(candidates)
    for f in score_funcs:
        scores = [f(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            return remaining[0]
    return remaining[0]
