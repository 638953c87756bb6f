"""Upstream's plugin table (``test_dynamicresources_upstream_table`` lists every case),
the effects on the stored claims: Reserve's in-flight allocation, PreBind's finalizer,
``status.allocation`` and ``status.reservedFor``, Unreserve before PreBind (skip-bind) and
after a failed binding (bind-failure), PostFilter's deallocation (wrong-topology), and
upstream's "prepare" edits made while the pod waits between Reserve and PreBind, all
through the real scheduler and store (Redis). Devices are compared by request, driver
and pool: upstream's verify ignores which device was picked."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.store.store import Store
from tests.dra.dra_fixtures import UP_CLAIM, UP_CLAIM2, UP_FINALIZER, allocated, node
from tests.plugins.dra_table_cases import (
    ADMIN_PENDING,
    ALLOCATED,
    CASES,
    IN_USE,
    PRIORITIZED,
    PRIORITIZED_4321,
    PRIORITIZED_SELECTOR,
    PRIORITIZED_TWO,
    Case,
    pod_with_claim,
)
from tests.plugins.dra_table_score_cases import SCORING
from tests.scheduler.coordinator_harness import PERMIT, PREBIND, PROFILE, Harness, config

Edit = Callable[[dict[str, Any]], None]


def _reserved(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["status"]["reservedFor"] = IN_USE["status"]["reservedFor"]
    return out


def _deallocated(doc: dict[str, Any]) -> dict[str, Any]:
    """PostFilter's UpdateStatus: allocation, reservedFor and devices gone, finalizer kept."""
    out = copy.deepcopy(doc)
    out["status"] = {}
    return out


def _results(*items: tuple[str, int]) -> list[tuple[str, str]]:
    return [(req, f"instance-{i}") for req, n in items for i in range(1, n + 1)]


@dataclass(frozen=True)
class Bind:
    #: claim name -> the stored claim afterwards (finalizers and status compared);
    #: claims not named are unchanged
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the node the pod is bound to; None: it stays unscheduled
    bound: str | None = "worker"
    #: Permit rejects the pod held there (upstream: Unreserve before PreBind)
    reject: bool = False
    #: upstream's prepare.prebind: an edit of the stored claim between Reserve and PreBind
    prepare: Edit | None = None
    #: a later PreBind plugin fails (upstream: Bind fails after PreBind; Unreserve runs)
    fail_binding: bool = False


def _drop_finalizers(doc: dict[str, Any]) -> None:
    doc["metadata"]["finalizers"] = []


def _add_finalizer(doc: dict[str, Any]) -> None:
    doc["metadata"]["finalizers"] = [UP_FINALIZER]


GOOD = CASES["good-topology"].objects[0]
BINDS: dict[str, Bind] = {
    "empty": Bind(),
    "claim-reference": Bind({UP_CLAIM: _reserved(ALLOCATED)}),
    "claim-template": Bind({UP_CLAIM: _reserved(ALLOCATED)}),
    "with-resources": Bind({UP_CLAIM: IN_USE}),
    "with-resources-has-finalizer": Bind({UP_CLAIM: IN_USE}),
    "with-resources-finalizer-gets-removed": Bind({UP_CLAIM: IN_USE}, prepare=_drop_finalizers),
    "with-resources-finalizer-gets-added": Bind({UP_CLAIM: IN_USE}, prepare=_add_finalizer),
    "skip-bind": Bind(bound=None, reject=True),
    "tainted-device-disabled": Bind({UP_CLAIM: IN_USE}),
    "request-admin-access-with-DRAAdminAccess-featuregate": Bind(
        {UP_CLAIM: allocated(ADMIN_PENDING, reserved=True, admin=True)}
    ),
    "structured-ignore-allocated-admin-access": Bind({UP_CLAIM: IN_USE}),
    "wrong-topology": Bind({UP_CLAIM: _deallocated(CASES["wrong-topology"].objects[0])}, None),
    "good-topology": Bind({UP_CLAIM: _reserved(GOOD)}),
    "bind-failure": Bind({UP_CLAIM: GOOD}, bound=None, fail_binding=True),
    "reserved-okay": Bind(),
    "claim-with-prioritized-list": Bind(
        {UP_CLAIM: allocated(PRIORITIZED, [("req-1/subreq-1", "instance-1")], reserved=True)}
    ),
    "timeout_zero": Bind({UP_CLAIM: IN_USE}),
    "single-claim-prioritized-list-scoring": Bind(
        {UP_CLAIM: allocated(PRIORITIZED_SELECTOR, _results(("req-1/subreq-1", 1)), reserved=True)}
    ),
    "multiple-claims-prioritized-list-scoring": Bind(
        {
            UP_CLAIM: allocated(PRIORITIZED, _results(("req-1/subreq-1", 1)), reserved=True),
            UP_CLAIM2: allocated(PRIORITIZED_4321, _results(("req-1/subreq-2", 3)), reserved=True),
        }
    ),
    "multiple-requests-prioritized-list-scoring": Bind(
        {
            UP_CLAIM: allocated(
                PRIORITIZED_TWO,
                _results(("req-1/subreq-1", 2), ("req-2/subreq-1", 2)),
                reserved=True,
            )
        }
    ),
}
ALL = {**CASES, **SCORING}


@pytest.fixture
def harness(redis_client: redis.Redis) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make() -> Harness:
        h = Harness(Store(redis_client), redis_client, config(PERMIT, PREBIND))
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """Finalizers and status, devices by (request, driver, pool) as upstream compares."""
    status = copy.deepcopy(doc.get("status") or {})
    allocation = status.get("allocation")
    if allocation is not None:
        results = allocation["devices"]["results"]
        for r in results:
            r.pop("device")
        results.sort(key=lambda r: (r["request"], r["pool"]))
    if not status.get("reservedFor"):
        status.pop("reservedFor", None)
    return {"finalizers": (doc.get("metadata") or {}).get("finalizers") or [], "status": status}


def _pod_doc(case: Case, bind: Bind) -> dict[str, Any]:
    """The case's pod, held in Permit (GatePermit) after Reserve; ``fail_binding``: the
    test PreBind plugin after DynamicResources' fails it."""
    pod = case.pod if case.pod is not None else pod_with_claim()
    doc = copy.deepcopy(pod.raw)
    labels = doc["metadata"].setdefault("labels", {})
    labels["permit"] = "wait"
    if bind.fail_binding:
        labels["prebind"] = "fail"
    return doc


def _claims_of(pod: dict[str, Any]) -> set[str]:
    """The names of the claims the pod uses (by name, or its template's in its status)."""
    named = {e.get("resourceClaimName") for e in pod["spec"].get("resourceClaims", [])}
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    return {n for n in named if n} | {s["resourceClaimName"] for s in statuses}


@pytest.mark.parametrize("name", list(BINDS))
def test_upstream_case_stored_claims(name: str, harness: Callable[..., Harness]) -> None:
    case, bind = ALL[name], BINDS[name]
    h = harness()
    h.apply(*(node(n) for n in case.nodes), *(copy.deepcopy(d) for d in case.objects))
    claims = [d for d in case.objects if d["kind"] == "ResourceClaim"]
    before = {c["metadata"]["name"]: _comparable(c) for c in claims}
    pod = _pod_doc(case, bind)
    key = f"default/{pod['metadata']['name']}"
    h.apply(pod)
    h.start()
    h.cycle()
    dra = h.cache.snapshot.dra
    waiting = h.coord.frameworks[PROFILE].handle.waiting_pods.get(key)
    in_flight = {c["metadata"]["name"] for c in claims if dra.has_pending(c["metadata"]["uid"])}
    if waiting is None:  # the attempt failed before Reserve
        assert bind.bound is None and not in_flight
    else:
        # upstream's reserve.inFlightClaims: the claims Reserve allocated, nothing else
        uses = _claims_of(pod)
        unallocated = {
            c["metadata"]["name"]
            for c in claims
            if c["metadata"]["name"] in uses and not (c.get("status") or {}).get("allocation")
        }
        assert in_flight == unallocated
        if bind.prepare is not None:  # prepare.prebind: lands between Reserve and PreBind
            doc = copy.deepcopy(h.store.get("ResourceClaim", f"default/{UP_CLAIM}"))
            bind.prepare(doc)
            h.store.apply(doc)
            h.coord.poll_informer()
        if bind.reject:  # unreserveBeforePreBind
            waiting.reject(PERMIT, "skip bind")
        else:
            waiting.allow(PERMIT)
    h.settle()
    assert h.node_of(key) == bind.bound
    for claim_name, was in before.items():
        got = _comparable(h.store.get("ResourceClaim", f"default/{claim_name}") or {})
        want = _comparable(bind.claims[claim_name]) if claim_name in bind.claims else was
        assert got == want, claim_name
    # nothing stays in flight: PreBind wrote it, or Unreserve withdrew it
    assert not any(dra.has_pending(c["metadata"]["uid"]) for c in claims)


def test_empty_pre_bind_pre_flight_skips(harness: Callable[..., Harness]) -> None:
    """empty: prebindPreFlight Skip (a pod without claims)."""
    h = harness()
    case = CASES["empty"]
    h.apply(node("worker"))
    plugin = h.plugin("DynamicResources")
    state = CycleState()
    plugin.pre_filter(state, case.pod, h.cache.snapshot)
    assert plugin.reserve(state, case.pod, "worker").is_success
    assert plugin.pre_bind_pre_flight(state, case.pod, "worker").is_skip
