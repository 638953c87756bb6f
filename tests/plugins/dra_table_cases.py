"""Upstream's TestPlugin objects, cases and the check that drives one through explain, shared by the plugin-table test modules."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from cluster_sched.api.manifest import parse_object
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.errors import SchedulerError
from cluster_sched.features import parse_feature_gates
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.testing.builders import make_pod
from tests.dra.dra_fixtures import (
    UP_BROKEN,
    UP_CLAIM,
    UP_CLAIM2,
    allocated,
    bare_class,
    device,
    label_selector,
    node,
    request,
    st_slice,
    sub_request,
    up_claim,
    up_pod,
)

UNRESOLVABLE = "UnschedulableAndUnresolvable"


PLUGIN = "DynamicResources"


CEL_ERROR = f"claim default/{UP_CLAIM}: selector #0: CEL runtime error: no such key: healthy"


# upstream's objects
PENDING = up_claim()


ALLOCATED = allocated(PENDING)


OTHER = up_claim("not-my-claim", owned=False)


OTHER_ALLOCATED = allocated(OTHER)


IN_USE = allocated(PENDING, reserved=True)


WORKER_SLICE = st_slice("worker", device("instance-1"))


LARGE_SLICE = st_slice("worker", *(device(f"instance-{i}") for i in range(1, 5)))


HEALTHY = {"healthy": True}


WORKER2_SLICE = st_slice("worker-2", device("instance-1", **HEALTHY))


WORKER3_SLICE = st_slice("worker-3", device("instance-1", **HEALTHY))


def _with(doc: dict[str, Any], **meta: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["metadata"].update(meta)
    return out


def _broken_claim(doc: dict[str, Any]) -> dict[str, Any]:
    """breakCELInClaim: every request's selectors replaced by the broken one."""
    out = copy.deepcopy(doc)
    for req in out["spec"]["devices"]["requests"]:
        req["exactly"]["selectors"] = [{"cel": {"expression": UP_BROKEN}}]
    return out


def _tainted(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for dev in out["spec"]["devices"]:
        dev["taints"] = [{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]
    return out


def prioritized_claim(
    name: str, *reqs: tuple[str, list[dict[str, Any]]], owned: bool = True
) -> Any:
    return up_claim(name, *({"name": r, "firstAvailable": subs} for r, subs in reqs), owned=owned)


#: claimWithPrioritzedList (req-1: subreq-1 of one device) and its owned variant
PRIORITIZED = prioritized_claim(UP_CLAIM, ("req-1", [sub_request("subreq-1")]))


#: pendingClaimWithPrioritizedListAndSelector: subreq-1 wants a healthy device
PRIORITIZED_SELECTOR = prioritized_claim(
    UP_CLAIM, ("req-1", [sub_request("subreq-1", 1, UP_BROKEN), sub_request("subreq-2")])
)


#: pendingClaim2WithPrioritizedListAndMultipleSubrequests: 4, 3, 2 or 1 devices
PRIORITIZED_4321 = prioritized_claim(
    UP_CLAIM2, ("req-1", [sub_request(f"subreq-{i}", 5 - i) for i in range(1, 5)])
)


#: pendingClaimWithMultiplePrioritizedListRequests: two requests of 2 or 1 devices
TWO_BY_21 = [sub_request("subreq-1", 2), sub_request("subreq-2", 1)]


PRIORITIZED_TWO = prioritized_claim(UP_CLAIM, ("req-1", TWO_BY_21), ("req-2", TWO_BY_21))


def _unknown_class(doc: dict[str, Any]) -> dict[str, Any]:
    """updateDeviceClassName(claim, "does-not-exist")."""
    out = copy.deepcopy(doc)
    for req in out["spec"]["devices"]["requests"]:
        for alt in req.get("firstAvailable") or [req.get("exactly")]:
            alt["deviceClassName"] = "does-not-exist"
    return out


@dataclass(frozen=True)
class Case:
    objects: tuple[dict[str, Any], ...]
    pod: Any = None  # default: podWithClaimName
    nodes: tuple[str, ...] = ("worker",)
    #: (code, message) when PreEnqueue rejects the pod
    preenqueue: tuple[str, str] | None = None
    #: DynamicResources' PreFilter status: (code, message); None: Success
    prefilter: tuple[str, str] | None = None
    #: node -> (code, message) of the nodes Filter rejects; the others pass
    filter: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the Error a Filter returned, which aborts the attempt
    error: str | None = None
    #: DynamicResources' PostFilter message (the pod fits nowhere)
    postfilter: str | None = None
    #: node -> (Score, NormalizeScore) of DynamicResources
    scores: dict[str, tuple[int, int]] = field(default_factory=dict)
    gates: str = ""
    filter_timeout: str | None = None


def pod_with_claim() -> Any:
    return up_pod(UP_CLAIM)


def pod_two_claims() -> Any:
    return up_pod(UP_CLAIM, UP_CLAIM2)


NO_NEW = "no new claims to deallocate"


STILL = "still not schedulable"


CANNOT = (UNRESOLVABLE, "cannot allocate all claims")


CLASS = bare_class()


WITH_FINALIZER = _with(PENDING, finalizers=["resource.kubernetes.io/delete-protection"])


ADMIN_PENDING = up_claim(UP_CLAIM, request("req-1", "my-resource-class", admin=True))


#: largeClaim: five requests of one device each (not owned by the pod)
LARGE_CLAIM = up_claim(
    UP_CLAIM, *(request(f"req-{i}", "my-resource-class") for i in range(1, 6)), owned=False
)


#: Upstream's API server admits an adminAccess claim only in a namespace with this label
#: (AuthorizedForAdmin, pkg/registry/resource); the unit test's fake client skips that
#: admission. Here no admission runs on apply, so the allocator checks the label instead:
#: the precondition upstream's claim met is stated as the labelled namespace.
ADMIN_NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "default", "labels": {"resource.kubernetes.io/admin-access": "true"}},
}


CASES: dict[str, Case] = {
    "empty": Case((), pod=parse_object(make_pod("foo").obj().raw), prefilter=("Skip", "")),
    "claim-reference": Case((ALLOCATED, OTHER)),
    "claim-template": Case((ALLOCATED, OTHER), pod=up_pod(UP_CLAIM, template=True)),
    "missing-claim": Case(
        (ALLOCATED, OTHER),
        pod=up_pod(template=True),
        preenqueue=(UNRESOLVABLE, 'pod "default/my-pod": ResourceClaim not created yet'),
    ),
    "deleted-claim": Case(
        (_with(ALLOCATED, deletionTimestamp="2026-11-27T00:00:00Z"),),
        pod=up_pod(UP_CLAIM, template=True),
        preenqueue=(UNRESOLVABLE, f'resourceclaim "{UP_CLAIM}" is being deleted'),
    ),
    "wrong-claim": Case(
        (
            _with(
                ALLOCATED,
                ownerReferences=[
                    {"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": "1234123"}
                    | {"controller": True}
                ],
            ),
        ),
        pod=up_pod(UP_CLAIM, template=True),
        preenqueue=(
            UNRESOLVABLE,
            f"ResourceClaim default/{UP_CLAIM} was not created for pod default/my-pod "
            "(pod is not owner)",
        ),
    ),
    "no-resources": Case((PENDING, CLASS), filter={"worker": CANNOT}, postfilter=STILL),
    "with-resources": Case((PENDING, CLASS, WORKER_SLICE)),
    "with-resources-has-finalizer": Case((WITH_FINALIZER, CLASS, WORKER_SLICE)),
    "with-resources-finalizer-gets-removed": Case((WITH_FINALIZER, CLASS, WORKER_SLICE)),
    "with-resources-finalizer-gets-added": Case((PENDING, CLASS, WORKER_SLICE)),
    "skip-bind": Case((PENDING, CLASS, WORKER_SLICE)),
    "exhausted-resources": Case(
        (PENDING, OTHER_ALLOCATED, CLASS, WORKER_SLICE), filter={"worker": CANNOT}, postfilter=STILL
    ),
    "tainted-device-disabled": Case((PENDING, CLASS, _tainted(WORKER_SLICE))),
    "request-admin-access-with-DRAAdminAccess-featuregate": Case(
        (ADMIN_PENDING, OTHER_ALLOCATED, CLASS, WORKER_SLICE, ADMIN_NAMESPACE)
    ),
    "structured-ignore-allocated-admin-access": Case(
        (PENDING, allocated(OTHER, admin=True), CLASS, WORKER_SLICE)
    ),
    "claim-parameters-CEL-runtime-error": Case(
        (_broken_claim(PENDING), CLASS, WORKER_SLICE), error=CEL_ERROR
    ),
    "class-parameters-CEL-runtime-error": Case(
        (PENDING, bare_class("my-resource-class", UP_BROKEN), WORKER_SLICE),
        error="class my-resource-class: selector #0: CEL runtime error: no such key: healthy",
    ),
    "CEL-runtime-error-for-one-of-two-nodes": Case(
        (_broken_claim(PENDING), CLASS, WORKER_SLICE, WORKER2_SLICE),
        nodes=("worker", "worker-2"),
        error=CEL_ERROR,
    ),
    "CEL-runtime-error-for-one-of-three-nodes": Case(
        (_broken_claim(PENDING), CLASS, WORKER_SLICE, WORKER2_SLICE, WORKER3_SLICE),
        nodes=("worker", "worker-2", "worker-3"),
        error=CEL_ERROR,
    ),
    "missing-class": Case(
        (PENDING,),
        prefilter=(UNRESOLVABLE, "request req-1: device class my-resource-class does not exist"),
        postfilter=NO_NEW,
    ),
    "wrong-topology": Case(
        (allocated(PENDING, [], node_selector=label_selector("no-such-label", "no-such-value")),),
        filter={"worker": (UNRESOLVABLE, "resourceclaim not available on the node")},
        postfilter="deallocation of ResourceClaim completed",
    ),
    "good-topology": Case(
        (allocated(PENDING, [], node_selector=label_selector("kubernetes.io/hostname", "worker")),)
    ),
    "bind-failure": Case(
        (allocated(PENDING, [], node_selector=label_selector("kubernetes.io/hostname", "worker")),)
    ),
    "reserved-okay": Case((IN_USE,)),
    "claim-with-request-with-unknown-device-class": Case(
        (_unknown_class(up_claim(owned=False)),),
        prefilter=(UNRESOLVABLE, "request req-1: device class does-not-exist does not exist"),
        postfilter=NO_NEW,
    ),
    "claim-with-prioritized-list-unknown-device-class": Case(
        (
            _unknown_class(
                prioritized_claim(UP_CLAIM, ("req-1", [sub_request("subreq-1")]), owned=False)
            ),
        ),
        prefilter=(
            UNRESOLVABLE,
            "request req-1/subreq-1: device class does-not-exist does not exist",
        ),
        postfilter=NO_NEW,
    ),
    "claim-with-prioritized-list": Case((PRIORITIZED, CLASS, WORKER_SLICE)),
    "timeout": Case(
        (LARGE_CLAIM, CLASS, LARGE_SLICE),
        filter={"worker": (UNRESOLVABLE, "timed out trying to allocate devices")},
        postfilter=STILL,
        filter_timeout="1ns",
    ),
    "timeout_zero": Case((PENDING, CLASS, WORKER_SLICE), filter_timeout="0"),
}


def _explain(case: Case) -> dict[str, Any]:
    cache = Cache()
    docs = [node(n) for n in case.nodes] + [copy.deepcopy(d) for d in case.objects]
    cache.load([parse_object(d) for d in docs])
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if case.filter_timeout is not None:
        args = {"filterTimeout": case.filter_timeout}
        cfg["profiles"] = [
            {"schedulerName": "default-scheduler", "pluginConfig": [{"name": PLUGIN, "args": args}]}
        ]
    pod = case.pod if case.pod is not None else pod_with_claim()
    return explain(cache, pod, parse_config(cfg), features=parse_feature_gates(case.gates)).json


def check(name: str, case: Case) -> None:
    """Every extension point upstream's case reaches, asserted on explain's document."""
    if case.error is not None:
        with pytest.raises(SchedulerError) as info:
            _explain(case)
        assert str(info.value) == f'running "{PLUGIN}" filter plugin: {case.error}'
        return
    out = _explain(case)
    results = out["pluginResults"]
    if case.preenqueue is not None:
        code, message = case.preenqueue
        assert results["preEnqueue"][PLUGIN] == {"code": code, "reasons": [message]}
        assert out["message"] == message
        return
    assert results["preEnqueue"][PLUGIN] == {"code": "Success"}
    pre = results["preFilter"][PLUGIN]
    if case.prefilter is None:
        assert pre == {"code": "Success"}
    elif case.prefilter[0] == "Skip":
        assert pre == {"code": "Skip"}
    else:
        assert pre == {"code": case.prefilter[0], "reasons": [case.prefilter[1]]}
        assert out["selectedNode"] is None
    if case.prefilter is None or case.prefilter[0] == "Skip":
        for n in case.nodes:
            want = case.filter.get(n)
            got = results["filter"][n][PLUGIN]
            if case.prefilter is not None:  # Skip: the framework skips its Filter too
                assert got == {"code": "Skip"}
            elif want is not None:
                assert got == {"code": want[0], "reasons": [want[1]]}
            else:
                assert got == {"code": "Success"}
    feasible = [n for n in case.nodes if n not in case.filter]
    if case.prefilter is not None and case.prefilter[0] != "Skip":
        feasible = []
    if not feasible:
        assert out["selectedNode"] is None
        assert case.postfilter is not None
        assert f". {case.postfilter}, preemption: " in out["message"]
        return
    assert out["selectedNode"] in feasible
    for n, (raw, normalized) in case.scores.items():
        assert out["rawScores"][n][PLUGIN] == raw
        assert out["scores"][n][PLUGIN] == normalized
    if case.scores:
        best = max(case.scores, key=lambda n: case.scores[n][1])
        assert out["selectedNode"] == best
