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

The gates v1.35 leaves off are off here for good (see ``dra.decode``): a device with
binding conditions is no candidate (no selector runs on it), a device that consumes
counters matches selectors but is never allocated (a mode-All request that matches
one fails on the node), taints are not looked at, and slices with partitionable
devices' fields are in no pool (``dra.pools``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cluster_sched.api.objects import Node
from cluster_sched.dra.cel import CelRuntimeError, Selector, compile_selector, device_matches
from cluster_sched.dra.claimcheck import AllocationError, check_claims
from cluster_sched.dra.objects import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    AttributeValue,
    DeviceClass,
    DeviceResult,
    ExactRequest,
    ResourceClaim,
    ResourceSlice,
)
from cluster_sched.dra.pools import Pool, PoolDevice, PoolSlices, gather_pools
from cluster_sched.dra.results import allocation_configs, node_selector

__all__ = [
    "AllocationError",
    "AllocationFailedOnNode",
    "AllocationTimeout",
    "Allocator",
    "DeviceID",
]

DeviceID = tuple[str, str, str]
#: (who owns it: "class X" / "claim ns/name", its index there, the compiled selector)
_Selector = tuple[str, int, Selector]


class AllocationFailedOnNode(AllocationError):
    """No allocation on this node, with a reason worth showing (upstream wraps
    ErrFailedAllocationOnNode: the pod is Unschedulable there, not an error)."""


class _Exceeded(Exception):
    """A request (or every alternative of one) would take its claim past 32 devices."""


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
    #: device -> the claims (indices) it is being allocated for in this search
    used: dict[DeviceID, set[int]] = field(default_factory=dict)
    #: devices picked so far per claim (the 32-device limit)
    counts: list[int] = field(default_factory=list)
    #: mode All: (need index, alternative index) -> the node's matching devices
    all_devices: dict[tuple[int, int], list[PoolDevice]] = field(default_factory=dict)
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
        pool_slices: PoolSlices | None = None,
    ) -> None:
        self._classes = classes
        self._slices = list(slices)
        self._allocated = allocated
        self._namespace_labels = namespace_labels
        self._admin_access = admin_access
        self._prioritized_list = prioritized_list
        #: the slices a node may see (an index), instead of scanning ``slices``
        self._slices_for = slices_for
        #: a pool's slices on every node (an index; with ``slices_for``)
        self._pool_slices = pool_slices

    # -- checks that do not depend on the node

    def validate(self, claims: Sequence[ResourceClaim]) -> None:
        """Raise AllocationError for what is wrong whatever the node."""
        check_claims(
            claims,
            self._classes,
            self._namespace_labels,
            admin_access=self._admin_access,
            prioritized_list=self._prioritized_list,
        )

    # -- per node

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], deadline: float | None = None
    ) -> list[AllocationResult] | None:
        """``deadline``: a ``time.monotonic()`` value; past it the search raises
        AllocationTimeout (checked at every step of the backtracking search)."""
        source = self._slices_for(node) if self._slices_for is not None else self._slices
        pools = gather_pools(source, node, self._pool_slices)
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
        search = _Search(pools, needs, claims, deadline=deadline, counts=[0] * len(claims))
        self._gather_all(search)
        try:
            done = self._solve(search, 0)
        except _Exceeded:
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            if any(p.invalid for p in pools):
                # upstream: only when nothing could be allocated, and as "failed on node"
                raise AllocationFailedOnNode("invalid resource pools were encountered")
            return None
        return [self._result(search, ci, claim, node) for ci, claim in enumerate(claims)]

    def _gather_all(self, s: _Search) -> None:
        """Per node, before the search (upstream validateDeviceRequest): the devices each
        mode-All alternative takes, refused while a pool is incomplete or invalid, and
        the claim limit with them counted."""
        least = [0] * len(s.claims)
        for index, need in enumerate(s.needs):
            claim = s.claims[need.claim]
            sizes = []
            for ai, alt in enumerate(need.alternatives):
                if alt.allocation_mode != ALLOCATION_MODE_ALL:
                    sizes.append(alt.count)
                    continue
                name = f"{need.request}/{alt.name}" if need.prioritized else need.request
                for pool in s.pools:
                    state = (
                        "being updated" if pool.incomplete else "invalid" if pool.invalid else ""
                    )
                    if state:
                        raise AllocationError(
                            f"claim {claim.key}, request {name}: asks for all devices, but "
                            f"resource pool {pool.driver}/{pool.name} is currently {state}"
                        )
                found = self._matching(s, claim, alt)
                s.all_devices[(index, ai)] = found
                sizes.append(len(found))
            least[need.claim] += min(sizes)
        for claim, n in zip(s.claims, least, strict=True):
            if n > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {n} exceeds the claim "
                    f"limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )

    def _solve(self, s: _Search, index: int) -> bool:
        """Need ``index`` and everything after it. A prioritized list tries its
        alternatives in order; one that would take the claim past 32 devices is
        skipped, and when every one is, that is raised (_Exceeded) so the requests
        before stop trying other devices (upstream errAllocationResultMaxSizeExceeded)."""
        if index == len(s.needs):
            return True
        s.check_deadline()
        need = s.needs[index]
        if not need.prioritized:
            return self._attempt(s, index, 0)
        all_exceeded = True
        for ai in range(len(need.alternatives)):
            try:
                done = self._attempt(s, index, ai)
            except _Exceeded:
                continue
            all_exceeded = False
            if done:
                return True
        if all_exceeded:
            raise _Exceeded
        return False

    def _next(self, s: _Search, index: int) -> bool:
        """The needs after ``index``; past the end of a claim, the next claim's
        _Exceeded is only a failure (it says nothing about this claim's choices)."""
        nxt = index + 1
        if nxt < len(s.needs) and s.needs[nxt].claim != s.needs[index].claim:
            try:
                return self._solve(s, nxt)
            except _Exceeded:
                return False
        return self._solve(s, nxt)

    def _attempt(self, s: _Search, index: int, ai: int) -> bool:
        need = s.needs[index]
        claim = s.claims[need.claim]
        alt = need.alternatives[ai]
        name = f"{need.request}/{alt.name}" if need.prioritized else need.request
        if alt.allocation_mode == ALLOCATION_MODE_ALL:
            devices = s.all_devices[(index, ai)]
            if not devices:
                return False
            if s.counts[need.claim] + len(devices) > ALLOCATION_RESULTS_MAX_SIZE:
                raise _Exceeded
            return self._take_all(s, index, claim, devices, alt, name)
        if s.counts[need.claim] + alt.count > ALLOCATION_RESULTS_MAX_SIZE:
            raise _Exceeded
        # upstream: per device in turn, in use first, then the selectors (so a selector
        # that fails on a device in use, or past the devices taken, raises nothing)
        candidates = [
            dev
            for pool in s.pools
            if not (pool.incomplete or pool.invalid)
            for dev in pool.devices
            if dev.device.selectable
        ]
        exprs = self._selectors(claim, alt)
        return self._take(s, index, claim, candidates, exprs, alt, name, alt.count)

    def _selectors(self, claim: ResourceClaim, alt: ExactRequest) -> list[_Selector]:
        """The class's selectors, then the request's: upstream numbers them apart and
        names the class or the claim in a runtime error."""
        cls = self._classes[alt.device_class_name]
        exprs = [(f"class {cls.name}", i, compile_selector(e)) for i, e in enumerate(cls.selectors)]
        exprs += [
            (f"claim {claim.key}", i, compile_selector(e)) for i, e in enumerate(alt.selectors)
        ]
        return exprs

    def _matching(self, s: _Search, claim: ResourceClaim, alt: ExactRequest) -> list[PoolDevice]:
        """Mode All: the node's devices the class and request selectors accept, in pool
        order (upstream runs the selectors on every device for "all")."""
        exprs = self._selectors(claim, alt)
        return [
            dev
            for pool in s.pools
            for dev in pool.devices
            if dev.device.selectable and _selects(exprs, dev)
        ]

    def _free(self, s: _Search, dev: PoolDevice, admin: bool, ci: int) -> bool:
        """upstream allocateDevice's in-use checks: an admin-access request may share a
        device with anyone but its own claim; any other needs it allocated to nobody
        and being allocated to no claim of this search."""
        holders = s.used.get(dev.id)
        if admin:
            return not holders or ci not in holders
        return not holders and not self._allocated(dev.id)

    def _pick(self, s: _Search, index: int, dev: PoolDevice, admin: bool, name: str) -> None:
        ci = s.needs[index].claim
        s.picked.setdefault(index, []).append((dev, admin, name))
        s.used.setdefault(dev.id, set()).add(ci)
        s.counts[ci] += 1

    def _unpick(self, s: _Search, index: int, dev: PoolDevice) -> None:
        ci = s.needs[index].claim
        s.picked[index].pop()
        s.used[dev.id].discard(ci)
        s.counts[ci] -= 1

    def _take(
        self,
        s: _Search,
        index: int,
        claim: ResourceClaim,
        candidates: list[PoolDevice],
        exprs: list[_Selector],
        alt: ExactRequest,
        name: str,
        remaining: int,
        start: int = 0,
    ) -> bool:
        if remaining == 0:
            return self._next(s, index)
        ci = s.needs[index].claim
        for pos in range(start, len(candidates)):
            s.check_deadline()
            dev = candidates[pos]
            if not self._free(s, dev, alt.admin_access, ci):
                continue
            if not _selects(exprs, dev) or dev.device.consumes_counters:
                continue
            if not self._constraints_ok(s, index, claim, dev, name):
                continue
            self._pick(s, index, dev, alt.admin_access, name)
            try:
                if self._take(
                    s, index, claim, candidates, exprs, alt, name, remaining - 1, pos + 1
                ):
                    return True
            except _Exceeded:
                self._unpick(s, index, dev)
                raise
            self._unpick(s, index, dev)
        return False

    def _take_all(
        self,
        s: _Search,
        index: int,
        claim: ResourceClaim,
        devices: list[PoolDevice],
        alt: ExactRequest,
        name: str,
    ) -> bool:
        """Mode All: every matching device, in order; one in use or consuming counters
        ends the attempt, one that breaks a constraint is an error (upstream: such a
        claim makes no sense)."""
        ci = s.needs[index].claim
        taken: list[PoolDevice] = []
        ok = True
        for dev in devices:
            if not self._free(s, dev, alt.admin_access, ci) or dev.device.consumes_counters:
                ok = False
                break
            if not self._constraints_ok(s, index, claim, dev, name):
                raise AllocationError(
                    f"claim {claim.key}, request {alt.name or name}: cannot add device "
                    f"{dev.driver}/{dev.pool}/{dev.device.name} because a claim constraint "
                    "would not be satisfied"
                )
            self._pick(s, index, dev, alt.admin_access, name)
            taken.append(dev)
        try:
            if ok and self._next(s, index):
                return True
        except _Exceeded:
            for dev in reversed(taken):
                self._unpick(s, index, dev)
            raise
        for dev in reversed(taken):
            self._unpick(s, index, dev)
        return False

    def _constraints_ok(
        self, s: _Search, index: int, claim: ResourceClaim, dev: PoolDevice, name: str
    ) -> bool:
        """matchAttribute: every device of the constraint's requests has the attribute,
        with one value. A constraint naming a request covers its subrequests; naming
        ``req/sub`` covers that subrequest only."""
        need = s.needs[index]
        for con in claim.spec.constraints:
            if not _covers(con.requests, name):
                continue
            value = _attribute(dev, con.match_attribute)
            if value is None:
                return False
            for other_index, picks in s.picked.items():
                if s.needs[other_index].claim != need.claim:
                    continue
                for other_dev, _, other_name in picks:
                    if _covers(con.requests, other_name) and (
                        _attribute(other_dev, con.match_attribute) != value
                    ):
                        return False
        return True

    def _result(self, s: _Search, ci: int, claim: ResourceClaim, node: Node) -> AllocationResult:
        devices: list[DeviceResult] = []
        slices: list[ResourceSlice] = []
        #: the chosen alternative of each request, in claim order
        chosen: list[tuple[str, ExactRequest]] = []
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
                chosen.append((alt_name, alt))
        return AllocationResult(
            tuple(devices),
            allocation_configs(self._classes, claim, chosen),
            node_selector(slices, node),
        )


def _selects(exprs: list[_Selector], dev: PoolDevice) -> bool:
    """Whether every selector accepts ``dev``; a runtime error aborts the attempt."""
    for owner, i, sel in exprs:
        try:
            if not device_matches(sel, dev.driver, dev.device):
                return False
        except CelRuntimeError as err:
            raise AllocationError(f"{owner}: selector #{i}: CEL runtime error: {err}") from None
    return True


def _covers(requests: tuple[str, ...], name: str) -> bool:
    """Whether a constraint over ``requests`` (empty: all) applies to a device picked
    for ``name`` (``req`` or ``req/sub``)."""
    return not requests or name in requests or name.partition("/")[0] in requests


def _attribute(dev: PoolDevice, name: str) -> AttributeValue | None:
    return dev.device.attributes.get(name)
