"""The structured-parameters allocator (upstream dynamic-resource-allocation/structured,
the "incubating" variant that v1.35's default gates select: AdminAccess and
PrioritizedList on; partitionable devices and device taints off).

``Allocator.allocate(node, claims)`` answers, for one node, one AllocationResult per
claim, or None when the claims cannot all be satisfied there (upstream: a nil result
or ErrFailedAllocationOnNode, the pod is Unschedulable on that node). Problems with
the claims themselves (an unknown class, a selector that does not compile or fails at
run time, more than 32 devices, admin access where the namespace does not allow it)
raise ``AllocationError``: upstream's Filter returns them as errors, which abort the
scheduling attempt.

The search is upstream's: requests in claim order, each device of a request in turn,
candidates in pool order (driver, pool name) and slice order, backtracking on failure
(to another device, another firstAvailable subrequest, or an earlier request), with
matchAttribute constraints checked as devices are added. A device allocated to any
other claim (in the store, or in flight from this scheduler) is never a candidate,
except for requests with admin access, which may share devices.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cluster_sched.api.objects import Node
from cluster_sched.dra.cel import CelError, CelRuntimeError, compile_selector, device_matches
from cluster_sched.dra.objects import (
    ADMIN_ACCESS_LABEL,
    ALLOCATION_MODE_ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    AttributeValue,
    DeviceClass,
    DeviceConfig,
    DeviceResult,
    ExactRequest,
    ResourceClaim,
    ResourceSlice,
)
from cluster_sched.dra.pools import Pool, PoolDevice, gather_pools

__all__ = ["AllocationError", "AllocationTimeout", "Allocator", "DeviceID"]

DeviceID = tuple[str, str, str]


class AllocationError(Exception):
    """Something wrong with a claim or class: the scheduling attempt is aborted."""


class AllocationTimeout(Exception):
    """The search on one node passed its deadline (upstream: the Filter context's
    DeadlineExceeded, DRASchedulerFilterTimeout): the pod is unschedulable there."""


@dataclass(slots=True)
class _Need:
    """One request of one claim, with the alternatives it may be satisfied by."""

    claim: int
    request: str
    alternatives: tuple[ExactRequest, ...]
    prioritized: bool


@dataclass(slots=True)
class _Search:
    pools: list[Pool]
    needs: list[_Need]
    claims: Sequence[ResourceClaim]
    #: (claim, request) -> [(device, admin access, subrequest name)]
    picked: dict[int, list[tuple[PoolDevice, bool, str]]] = field(default_factory=dict)
    used: set[DeviceID] = field(default_factory=set)
    #: time.monotonic() past which the search gives up; None: no limit
    deadline: float | None = None

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise AllocationTimeout


class Allocator:
    """One per scheduling cycle of a pod (upstream: built in PreFilter)."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        slices: Iterable[ResourceSlice],
        allocated: Callable[[DeviceID], bool],
        namespace_labels: Callable[[str], Mapping[str, str]],
        *,
        admin_access: bool = True,
        prioritized_list: bool = True,
        slices_for: Callable[[Node], Iterable[ResourceSlice]] | None = None,
    ) -> None:
        self._classes = classes
        self._slices = list(slices)
        self._allocated = allocated
        self._namespace_labels = namespace_labels
        self._admin_access = admin_access
        self._prioritized_list = prioritized_list
        #: the slices a node may see (an index), instead of scanning ``slices``
        self._slices_for = slices_for

    # -- checks that do not depend on the node

    def validate(self, claims: Sequence[ResourceClaim]) -> None:
        """Raise AllocationError for what is wrong whatever the node."""
        for claim in claims:
            total = 0
            for req in claim.spec.requests:
                alts = (req.exactly,) if req.exactly is not None else req.first_available
                if req.exactly is None and not self._prioritized_list:
                    raise AllocationError(
                        f"claim {claim.key}, request {req.name}: has subrequests, but the "
                        "DRAPrioritizedList feature is disabled"
                    )
                for alt in alts:
                    assert alt is not None
                    name = f"{req.name}/{alt.name}" if alt.name else req.name
                    cls = self._classes.get(alt.device_class_name)
                    if cls is None:
                        raise AllocationError(
                            f"claim {claim.key}, request {name}: could not retrieve device "
                            f"class {alt.device_class_name}"
                        )
                    for i, expr in enumerate((*cls.selectors, *alt.selectors)):
                        try:
                            compile_selector(expr)
                        except CelError as err:
                            raise AllocationError(
                                f"claim {claim.key}, request {name}: selector #{i}: "
                                f"CEL compile error: {err}"
                            ) from None
                    if alt.admin_access:
                        self._check_admin(claim, name)
                first = alts[0]
                assert first is not None
                if first.allocation_mode != ALLOCATION_MODE_ALL:
                    total += first.count
            if total > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {total} exceeds the "
                    f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )

    def _check_admin(self, claim: ResourceClaim, request: str) -> None:
        if not self._admin_access:
            raise AllocationError(
                f"claim {claim.key}, request {request}: admin access is requested, but the "
                "feature is disabled"
            )
        labels = self._namespace_labels(claim.meta.namespace)
        if labels.get(ADMIN_ACCESS_LABEL) != "true":
            raise AllocationError(
                f"claim {claim.key}, request {request}: admin access to devices requires the "
                f"`{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
            )

    # -- per node

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], deadline: float | None = None
    ) -> list[AllocationResult] | None:
        """``deadline``: a ``time.monotonic()`` value; past it the search raises
        AllocationTimeout (checked at every step of the backtracking search)."""
        source = self._slices_for(node) if self._slices_for is not None else self._slices
        pools = gather_pools(source, node)
        invalid = [f"{p.driver}/{p.name}" for p in pools if p.invalid]
        if invalid:
            raise AllocationError(f"invalid resource pools were encountered: {', '.join(invalid)}")
        needs = [
            _Need(
                ci,
                req.name,
                (req.exactly,) if req.exactly is not None else req.first_available,
                req.exactly is None,
            )
            for ci, claim in enumerate(claims)
            for req in claim.spec.requests
        ]
        search = _Search(pools, needs, claims, deadline=deadline)
        if not self._solve(search, 0):
            return None
        return [self._result(search, ci, claim, node) for ci, claim in enumerate(claims)]

    def _solve(self, s: _Search, index: int) -> bool:
        if index == len(s.needs):
            return True
        s.check_deadline()
        need = s.needs[index]
        claim = s.claims[need.claim]
        for alt in need.alternatives:
            name = f"{need.request}/{alt.name}" if need.prioritized else need.request
            candidates = self._candidates(s, claim, alt, name)
            if alt.allocation_mode == ALLOCATION_MODE_ALL:
                if candidates is None:
                    continue
                if self._take_all(s, index, claim, candidates, alt, name):
                    return True
                continue
            assert candidates is not None
            if self._take(s, index, claim, candidates, alt, name, alt.count):
                return True
        return False

    def _candidates(
        self, s: _Search, claim: ResourceClaim, alt: ExactRequest, name: str
    ) -> list[PoolDevice] | None:
        """Matching devices in order (None: mode All cannot be satisfied, e.g. a pool
        is incomplete or a matching device is allocated elsewhere)."""
        cls = self._classes[alt.device_class_name]
        exprs = [compile_selector(e) for e in (*cls.selectors, *alt.selectors)]
        out: list[PoolDevice] = []
        for pool in s.pools:
            matched = []
            for dev in pool.devices:
                ok = True
                for i, sel in enumerate(exprs):
                    try:
                        hit = device_matches(sel, dev.driver, dev.device)
                    except CelRuntimeError as err:
                        raise AllocationError(
                            f"claim {claim.key}, request {name}: selector #{i}: CEL runtime "
                            f"error: {err}"
                        ) from None
                    if not hit:
                        ok = False
                        break
                if ok:
                    matched.append(dev)
            if not matched:
                continue
            if pool.incomplete:
                if alt.allocation_mode == ALLOCATION_MODE_ALL:
                    return None
                continue
            out.extend(matched)
        if alt.allocation_mode == ALLOCATION_MODE_ALL:
            if not out:
                return None
            if not alt.admin_access and any(self._allocated(d.id) for d in out):
                return None
        return out

    def _free(self, s: _Search, dev: PoolDevice, admin: bool) -> bool:
        if dev.id in s.used:
            return False
        return admin or not self._allocated(dev.id)

    def _take(
        self,
        s: _Search,
        index: int,
        claim: ResourceClaim,
        candidates: list[PoolDevice],
        alt: ExactRequest,
        name: str,
        remaining: int,
        start: int = 0,
    ) -> bool:
        if remaining == 0:
            return self._solve(s, index + 1)
        picked = s.picked.setdefault(index, [])
        for pos in range(start, len(candidates)):
            s.check_deadline()
            dev = candidates[pos]
            if not self._free(s, dev, alt.admin_access):
                continue
            if not self._constraints_ok(s, index, claim, dev):
                continue
            picked.append((dev, alt.admin_access, name))
            s.used.add(dev.id)
            if self._take(s, index, claim, candidates, alt, name, remaining - 1, pos + 1):
                return True
            picked.pop()
            s.used.discard(dev.id)
        return False

    def _take_all(
        self,
        s: _Search,
        index: int,
        claim: ResourceClaim,
        candidates: list[PoolDevice],
        alt: ExactRequest,
        name: str,
    ) -> bool:
        picked = s.picked.setdefault(index, [])
        added = []
        ok = True
        for dev in candidates:
            if dev.id in s.used or not self._constraints_ok(s, index, claim, dev):
                ok = False
                break
            picked.append((dev, alt.admin_access, name))
            s.used.add(dev.id)
            added.append(dev.id)
        if ok and self._solve(s, index + 1):
            return True
        del picked[len(picked) - len(added) :]
        s.used.difference_update(added)
        return False

    def _constraints_ok(
        self, s: _Search, index: int, claim: ResourceClaim, dev: PoolDevice
    ) -> bool:
        """matchAttribute: every device of the constraint's requests has the attribute,
        with one value."""
        need = s.needs[index]
        for con in claim.spec.constraints:
            if con.requests and need.request not in con.requests:
                continue
            value = _attribute(dev, con.match_attribute)
            if value is None:
                return False
            for other_index, picks in s.picked.items():
                other = s.needs[other_index]
                if other.claim != need.claim:
                    continue
                if con.requests and other.request not in con.requests:
                    continue
                for other_dev, _, _ in picks:
                    if _attribute(other_dev, con.match_attribute) != value:
                        return False
        return True

    def _result(self, s: _Search, ci: int, claim: ResourceClaim, node: Node) -> AllocationResult:
        devices: list[DeviceResult] = []
        slices: list[ResourceSlice] = []
        configs: list[DeviceConfig] = []
        for index, need in enumerate(s.needs):
            if need.claim != ci:
                continue
            picks = s.picked.get(index, [])
            for dev, admin, name in picks:
                devices.append(DeviceResult(name, dev.driver, dev.pool, dev.device.name, admin))
                slices.append(dev.slice)
            if picks:
                alt_name = picks[0][2]
                alt = next(
                    a
                    for a in need.alternatives
                    if (f"{need.request}/{a.name}" if need.prioritized else need.request)
                    == alt_name
                )
                for cfg in self._classes[alt.device_class_name].config:
                    configs.append(
                        DeviceConfig(cfg.driver, cfg.parameters, (alt_name,), "FromClass")
                    )
        for cfg in claim.spec.config:
            configs.append(DeviceConfig(cfg.driver, cfg.parameters, cfg.requests, "FromClaim"))
        return AllocationResult(tuple(devices), tuple(configs), _node_selector(slices, node))


def _attribute(dev: PoolDevice, name: str) -> AttributeValue | None:
    return dev.device.attributes.get(name)


def _node_selector(slices: list[ResourceSlice], node: Node) -> Mapping[str, object] | None:
    """upstream createNodeSelector: a node-local device pins the claim to the node; a
    network-attached one to its slice's selector (the terms' requirements combined);
    devices for all nodes add nothing."""
    if any(s.node_name for s in slices):
        return {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.name]}]}
            ]
        }
    selectors = []
    for s in slices:
        if s.node_selector_raw is not None and s.node_selector_raw not in selectors:
            selectors.append(s.node_selector_raw)
    if not selectors:
        return None
    if len(selectors) == 1:
        return selectors[0]
    exprs: list[object] = []
    fields: list[object] = []
    for sel in selectors:
        for term in sel.get("nodeSelectorTerms") or []:  # type: ignore[attr-defined]
            exprs.extend(term.get("matchExpressions") or [])
            fields.extend(term.get("matchFields") or [])
    merged: dict[str, object] = {}
    if exprs:
        merged["matchExpressions"] = exprs
    if fields:
        merged["matchFields"] = fields
    return {"nodeSelectorTerms": [merged]}
