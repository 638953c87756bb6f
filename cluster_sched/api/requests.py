"""A pod's effective resource requests, as upstream computes them.

``compute_requests`` is ``k8s.io/component-helpers/resource.PodRequests`` without
pod-level resources or in-place resize:

1. sum the regular containers;
2. walk the init containers in order: a restartable one (a sidecar,
   ``restartPolicy: Always``) is added to the running sum *and* to the sidecar total,
   and its own need is that total; a plain init container needs its request plus every
   sidecar started before it;
3. take the per-resource max of the sum and every init container's need;
4. add the pod overhead.

``compute_nonzero_requests`` is the scheduler's ``Non0CPU``/``Non0Mem``
(``PodInfo.CalculateResource``): the same aggregation, with every container (init and
sidecar included) that has no cpu / memory request counted as requesting
DEFAULT_MILLI_CPU_REQUEST / DEFAULT_MEMORY_REQUEST. A request present but zero stays zero.

The aggregation is generic over exact amounts (``int`` or ``Fraction``) so the manifest
parser can sum unrounded quantities and round once, as upstream does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction

from cluster_sched.api.objects import CPU, MEMORY, Container, ResourceList

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "NON_ZERO_DEFAULTS",
    "aggregate_requests",
    "compute_nonzero_requests",
    "compute_requests",
    "round_up",
]

#: cpu (milli-cores) a container without a cpu request counts as, for scoring only.
DEFAULT_MILLI_CPU_REQUEST = 100
#: memory (bytes) a container without a memory request counts as, for scoring only.
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
#: Both defaults as a resource list, for aggregate_requests(non_missing=...).
NON_ZERO_DEFAULTS: Mapping[str, int] = {
    CPU: DEFAULT_MILLI_CPU_REQUEST,
    MEMORY: DEFAULT_MEMORY_REQUEST,
}

Amount = int | Fraction
Amounts = Mapping[str, Amount]

_RESTARTABLE = "Always"


def _add(total: dict[str, Amount], amounts: Amounts) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _raise_to(total: dict[str, Amount], amounts: Amounts) -> None:
    for name, amount in amounts.items():
        if name not in total or amount > total[name]:
            total[name] = amount


def _fill_missing(amounts: Amounts, defaults: Amounts) -> Amounts:
    missing = [name for name in defaults if name not in amounts]
    if not missing:
        return amounts
    filled = dict(amounts)
    for name in missing:
        filled[name] = defaults[name]
    return filled


def aggregate_requests(
    containers: Iterable[Amounts],
    init_containers: Iterable[tuple[Amounts, bool]],
    overhead: Amounts,
    *,
    non_missing: Amounts | None = None,
) -> dict[str, Amount]:
    """PodRequests over raw amounts.

    ``init_containers`` yields ``(requests, restartable)`` in spec order. With
    ``non_missing``, a container lacking one of its resources counts as requesting it.
    """
    total: dict[str, Amount] = {}
    for requests in containers:
        _add(total, _fill_missing(requests, non_missing) if non_missing else requests)
    sidecars: dict[str, Amount] = {}
    init_need: dict[str, Amount] = {}
    for requests, restartable in init_containers:
        if non_missing:
            requests = _fill_missing(requests, non_missing)
        if restartable:
            _add(total, requests)
            _add(sidecars, requests)
            _raise_to(init_need, sidecars)
        else:
            need = dict(requests)
            _add(need, sidecars)
            _raise_to(init_need, need)
    _raise_to(total, init_need)
    _add(total, overhead)
    return total


def round_up(amount: Amount) -> int:
    """Upstream Value()/MilliValue() on an aggregated amount: ceil for positives."""
    if isinstance(amount, int):
        return amount
    return math.ceil(amount) if amount > 0 else math.floor(amount)


def _init_entries(init_containers: Iterable[Container]) -> Iterable[tuple[Amounts, bool]]:
    return ((c.requests, c.restart_policy == _RESTARTABLE) for c in init_containers)


def compute_requests(
    containers: Iterable[Container], init_containers: Iterable[Container], overhead: ResourceList
) -> dict[str, int]:
    """Effective requests in canonical units (cpu milli-cores, the rest whole units).

    Works on already-rounded per-container integers; Pod.requests from the manifest
    parser is exact and can differ only for sub-unit fractions (``memory: 0.5``).
    """
    total = aggregate_requests(
        (c.requests for c in containers), _init_entries(init_containers), overhead
    )
    return {name: round_up(amount) for name, amount in total.items()}


def compute_nonzero_requests(
    containers: Iterable[Container], init_containers: Iterable[Container], overhead: ResourceList
) -> tuple[int, int]:
    """(cpu milli-cores, memory bytes) with the 100m / 200Mi per-container defaults."""
    total = aggregate_requests(
        (c.requests for c in containers),
        _init_entries(init_containers),
        overhead,
        non_missing=NON_ZERO_DEFAULTS,
    )
    return round_up(total.get(CPU, 0)), round_up(total.get(MEMORY, 0))
