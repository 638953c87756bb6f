"""What the allocator refuses in claims before looking at any node (upstream
Allocate's sanity checks and validateDeviceRequest), with upstream's messages: each
raises ``AllocationError``, which aborts the scheduling attempt.

Per claim, request by request (each firstAvailable alternative in turn): subrequests
without DRAPrioritizedList, an empty selector (a future selector type), an empty
class name (a future request type), an unknown class, a selector that does not
compile, admin access (the gate, the namespace label), an unknown allocation mode;
then the 32-device limit on the fewest devices the claim can take; then an empty
constraint (a future constraint type).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from cluster_sched.dra.cel import CelError, compile_selector
from cluster_sched.dra.objects import (
    ADMIN_ACCESS_LABEL,
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    DeviceClass,
    ResourceClaim,
)

__all__ = ["AllocationError", "check_claims"]


class AllocationError(Exception):
    """Something wrong with a claim or class: the scheduling attempt is aborted."""


def check_claims(
    claims: Sequence[ResourceClaim],
    classes: Mapping[str, DeviceClass],
    namespace_labels: Callable[[str], Mapping[str, str]],
    *,
    admin_access: bool,
    prioritized_list: bool,
) -> None:
    for claim in claims:
        total = 0
        for req in claim.spec.requests:
            alts = (req.exactly,) if req.exactly is not None else req.first_available
            if req.exactly is None and not prioritized_list:
                raise AllocationError(
                    f"claim {claim.key}, request {req.name}: has subrequests, but the "
                    "DRAPrioritizedList feature is disabled"
                )
            for alt in alts:
                assert alt is not None
                name = f"{req.name}/{alt.name}" if alt.name else req.name
                where = f"claim {claim.key}, request {name}"
                for i, expr in enumerate(alt.selectors):
                    if not expr:
                        raise AllocationError(
                            f"{where}, selector #{i}: CEL expression empty "
                            "(unsupported selector type?)"
                        )
                if not alt.device_class_name:
                    raise AllocationError(
                        f"{where}: missing device class name (unsupported request type?)"
                    )
                cls = classes.get(alt.device_class_name)
                if cls is None:
                    raise AllocationError(
                        f"{where}: could not retrieve device class {alt.device_class_name}"
                    )
                for owner, selectors in (
                    (f"class {cls.name}", cls.selectors),
                    (f"claim {claim.key}", alt.selectors),
                ):
                    for i, expr in enumerate(selectors):
                        try:
                            compile_selector(expr)
                        except CelError as err:
                            raise AllocationError(
                                f"{owner}: selector #{i}: CEL compile error: {err}"
                            ) from None
                if alt.admin_access:
                    _check_admin(claim, where, namespace_labels, admin_access)
                if alt.allocation_mode not in (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL):
                    raise AllocationError(f"{where}: unsupported count mode {alt.allocation_mode}")
            # the fewest devices any alternative needs (All: counted per node)
            total += min(
                0 if a is None or a.allocation_mode == ALLOCATION_MODE_ALL else a.count
                for a in alts
            )
        if total > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {claim.key}: number of requested devices {total} exceeds the "
                f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        for i, constraint in enumerate(claim.spec.constraints):
            if not constraint.match_attribute:
                raise AllocationError(
                    f"claim {claim.key}, constraint #{i}: empty constraint "
                    "(unsupported constraint type?)"
                )


def _check_admin(
    claim: ResourceClaim,
    where: str,
    namespace_labels: Callable[[str], Mapping[str, str]],
    enabled: bool,
) -> None:
    if not enabled:
        raise AllocationError(f"{where}: admin access is requested, but the feature is disabled")
    if namespace_labels(claim.meta.namespace).get(ADMIN_ACCESS_LABEL) != "true":
        raise AllocationError(
            f"{where}: admin access to devices requires the "
            f"`{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
        )
