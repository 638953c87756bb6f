"""Taints and tolerations, as upstream's ``v1.Toleration.ToleratesTaint`` and the
TaintToleration plugin read them.

Only the pure, per-pod logic lives here; the vectorised filter over a shard's taint
columns is the plugin's job and must agree with these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cluster_sched.api.objects import PREFER_NO_SCHEDULE, Taint, Toleration

__all__ = [
    "count_intolerable_prefer_no_schedule",
    "find_matching_untolerated_taint",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
]


def toleration_tolerates_taint(tol: Toleration, taint: Taint) -> bool:
    """Upstream ToleratesTaint.

    An empty effect matches every effect; an empty key (only valid with ``Exists``)
    matches every key; ``Equal`` (or an empty operator) compares values, ``Exists``
    ignores them; any other operator tolerates nothing.
    """
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator in ("Equal", ""):
        return tol.value == taint.value
    return tol.operator == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """True when any toleration tolerates ``taint``."""
    return any(toleration_tolerates_taint(tol, taint) for tol in tolerations)


def find_matching_untolerated_taint(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    """The first taint, in node order, with an effect in ``effects`` that no toleration
    tolerates; the Filter reports this one (upstream FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def count_intolerable_prefer_no_schedule(
    taints: Sequence[Taint], tolerations: Sequence[Toleration]
) -> int:
    """TaintToleration Score's raw count: PreferNoSchedule taints not tolerated by the
    pod's tolerations whose effect is empty or PreferNoSchedule."""
    relevant = [tol for tol in tolerations if tol.effect in ("", PREFER_NO_SCHEDULE)]
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(relevant, taint)
    )
