"""Upstream's DynamicResources tests other than the TestPlugin table
(pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go, v1.35,
resource.k8s.io/v1), ported with upstream's fixtures: pod my-pod (uid 1234) in default,
claim my-pod-my-resource with request req-1 of class my-resource-class, owned by the
pod; node worker with device instance-1 of driver some-driver.

Every case needs only v1.35's default gates (the hint tests run upstream's plugin with
DRASchedulerFilterTimeout on and nothing else; the score tests use no gate at all):

TestIsSchedulableAfterClaimChange (9 cases, all ported):
  skip-deletes, backoff-wrong-new-object, skip-wrong-claim, skip-unrelated-claim,
  queue-on-add, backoff-wrong-old-object, skip-adding-finalizer,
  queue-on-status-change, claim-deallocate.
TestIsSchedulableAfterPodChange (5 cases, all ported):
  backoff-wrong-new-object, complete, wrong-pod, missing-claim, incomplete.
Test_computesScore (7 cases, all ported) and TestNormalizeScore (7 cases, all ported):
  in tests/plugins/test_dynamicresources_score_upstream.py.
TestAllocatorSelection (3 cases: only-GA -> stable, default -> incubating, alpha ->
  experimental): not ported; it asserts which of upstream's three Go allocator types
  a gate set picks, and this project has one allocator with per-gate switches (the
  gate-off behaviour is in test_dynamicresources_gates.py).
EventsToRegister and SignPod have no table upstream; the tests here assert the values
  upstream's code returns (dynamicresources.go, SchedulerQueueingHints on).
TestPlugin (PreEnqueue, PreFilter ... PostFilter, in-flight claims): ported elsewhere.
Not in v1.35 or not at default gates: dra_manager_test.go (TestSignalClaimPendingAllocation,
  TestGetPendingAllocation, TestMaybeRemoveClaimPendingAllocation) tests the sharers
  count of in-flight claims that came after v1.35 (k8s.io/kube-scheduler v0.35.0's
  ResourceClaimTracker has Signal/ClaimHas/RemoveClaimPendingAllocation only);
  extendeddynamicresources_test.go and extended/ need DRAExtendedResource (off).

An upstream ``wantErr`` (an object of the wrong type) is a hint that raises: the queue
counts that as Queue, as upstream counts (Queue, err). The claims the hint reads are
in the cache when it runs, as upstream's assume cache has them when the informer's
event arrives.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cluster_sched.api.manifest import parse_object
from cluster_sched.cache.cache import Cache
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.signature import IN_TREE_SIGNERS
from cluster_sched.plugins import names
from cluster_sched.plugins.dynamicresources import DynamicResources, new
from cluster_sched.queue.requeueing import run_hint
from cluster_sched.testing.builders import make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
POD, UID = "my-pod", "1234"
CLAIM, CLASS, DRIVER = "my-pod-my-resource", "my-resource-class", "some-driver"


def _pod(*entries: dict[str, str], status: list[dict[str, str]] | None = None) -> Any:
    doc = make_pod(POD).obj().raw
    doc = {**doc, "metadata": {**doc["metadata"], "uid": UID}}
    doc["spec"] = {**doc["spec"], "resourceClaims": list(entries)}
    if status is not None:
        doc["status"] = {"resourceClaimStatuses": status}
    return parse_object(doc)


BY_NAME = {"name": "my-resource", "resourceClaimName": CLAIM}
BY_TEMPLATE = {"name": "my-resource", "resourceClaimTemplateName": CLAIM}
BY_TEMPLATE_2 = {"name": "my-resource-2", "resourceClaimTemplateName": CLAIM}
IN_STATUS = [{"name": "my-resource", "resourceClaimName": CLAIM}]

POD_WITH_CLAIM_NAME = _pod(BY_NAME)
POD_WITH_CLAIM_TEMPLATE = _pod(BY_TEMPLATE)
POD_WITH_CLAIM_TEMPLATE_IN_STATUS = _pod(BY_TEMPLATE, status=IN_STATUS)
POD_WITH_TWO_CLAIM_TEMPLATES = _pod(BY_TEMPLATE, BY_TEMPLATE_2)


def _claim(name: str = CLAIM, owned: bool = True, uid: str = "") -> dict[str, Any]:
    """upstream's claim (st.MakeResourceClaim().Request(className)), pendingClaim when
    owned by the pod."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"}
    if owned:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": UID, "controller": True}
        ]
    request = {"name": "req-1", "exactly": {"deviceClassName": CLASS}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [request]}},
    }


def _allocated(doc: dict[str, Any]) -> dict[str, Any]:
    """upstream's Allocation(allocationResult): instance-1 on worker, for req-1."""
    doc = copy.deepcopy(doc)
    result = {"driver": DRIVER, "pool": "worker", "device": "instance-1", "request": "req-1"}
    selector = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker"]}]}
        ]
    }
    doc["status"] = {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}
    return doc


PENDING = _claim()
ALLOCATED = _allocated(PENDING)
OTHER_ALLOCATED = _allocated(_claim("not-my-claim", owned=False))


def _plugin(*claims: dict[str, Any]) -> DynamicResources:
    """The plugin reading a cache that holds ``claims`` (upstream's setup: claims
    created through the client, the informers synced)."""
    cache = Cache()
    cache.load([parse_object(c) for c in claims])
    return new(None, Handle(snapshot=cache.snapshot))


def _event(plugin: DynamicResources, old: Any, new_obj: Any) -> None:
    """The informer delivered the change: the cache holds the new claim."""
    assert plugin._handle.snapshot is not None
    plugin._handle.snapshot.dra.set(new_obj)


# --- TestIsSchedulableAfterClaimChange ---------------------------------------------


def _wrong_owner(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"]["ownerReferences"][0]["uid"] += "123"
    return doc


def _unrelated(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"]["name"] += "-foo"
    doc["metadata"]["uid"] += "123"
    return doc


def _with_finalizer(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"]["finalizers"] = ["foo"]
    return doc


def _empty_allocation(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["status"] = {"allocation": {}}
    return doc


def _deallocated(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["status"].pop("allocation")
    return doc


# (pod, claims in the cache before, old, new, want hint)
CLAIM_CASES = [
    pytest.param(POD_WITH_CLAIM_TEMPLATE, [], ALLOCATED, None, SKIP, id="skip-deletes"),
    pytest.param(POD_WITH_CLAIM_TEMPLATE, [], None, _wrong_owner(ALLOCATED), SKIP,
                 id="skip-wrong-claim"),
    pytest.param(POD_WITH_CLAIM_TEMPLATE, [ALLOCATED], None, _unrelated(ALLOCATED), SKIP,
                 id="skip-unrelated-claim"),
    pytest.param(POD_WITH_CLAIM_NAME, [], None, PENDING, Q, id="queue-on-add"),
    pytest.param(POD_WITH_CLAIM_NAME, [PENDING], PENDING, _with_finalizer(PENDING), SKIP,
                 id="skip-adding-finalizer"),
    pytest.param(POD_WITH_CLAIM_NAME, [PENDING], PENDING, _empty_allocation(PENDING), Q,
                 id="queue-on-status-change"),
    pytest.param(POD_WITH_CLAIM_NAME, [PENDING, OTHER_ALLOCATED], OTHER_ALLOCATED,
                 _deallocated(OTHER_ALLOCATED), Q, id="claim-deallocate"),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "claims", "old", "new_doc", "want"), CLAIM_CASES)
def test_is_schedulable_after_claim_change(
    pod: Any, claims: list[Any], old: Any, new_doc: Any, want: QueueingHint
) -> None:
    plugin = _plugin(*claims)
    old_obj = parse_object(old) if old is not None else None
    new_obj = parse_object(new_doc) if new_doc is not None else None
    if new_obj is not None:
        _event(plugin, old_obj, new_obj)
    hint = _registered(plugin, EventResource.RESOURCE_CLAIM, ActionType.UPDATE)
    assert hint(pod, old_obj, new_obj) is want


@pytest.mark.parametrize(
    ("pod", "claims", "old", "new_obj"),
    [
        pytest.param(POD_WITH_CLAIM_TEMPLATE, [], None, "not-a-claim",
                     id="backoff-wrong-new-object"),
        pytest.param(POD_WITH_CLAIM_NAME, [PENDING], "not-a-claim", parse_object(PENDING),
                     id="backoff-wrong-old-object"),
    ],
)  # fmt: skip
def test_is_schedulable_after_claim_change_errors(
    pod: Any, claims: list[Any], old: Any, new_obj: Any
) -> None:
    """upstream's wantErr: the hint fails, and the queue takes that as Queue."""
    plugin = _plugin(*claims)
    hint = _registered(plugin, EventResource.RESOURCE_CLAIM, ActionType.ADD)
    with pytest.raises(TypeError, match="isSchedulableAfterClaimChange"):
        hint(pod, old, new_obj)
    assert run_hint(hint, names.DYNAMIC_RESOURCES, pod, old, new_obj) is Q


# --- TestIsSchedulableAfterPodChange -----------------------------------------------


def _other_pod() -> Any:
    doc = copy.deepcopy(POD_WITH_CLAIM_TEMPLATE.raw)
    doc["metadata"]["name"] += "2"
    doc["metadata"]["uid"] += "2"  # the relevant difference
    return parse_object(doc)


POD_CASES = [
    pytest.param([PENDING], POD_WITH_CLAIM_TEMPLATE, POD_WITH_CLAIM_TEMPLATE_IN_STATUS, Q,
                 id="complete"),
    pytest.param([PENDING], _other_pod(), POD_WITH_CLAIM_TEMPLATE_IN_STATUS, SKIP,
                 id="wrong-pod"),
    pytest.param([], POD_WITH_CLAIM_TEMPLATE, POD_WITH_CLAIM_TEMPLATE_IN_STATUS, SKIP,
                 id="missing-claim"),
    # only one of two claims created
    pytest.param([PENDING], POD_WITH_TWO_CLAIM_TEMPLATES,
                 _pod(BY_TEMPLATE, BY_TEMPLATE_2, status=IN_STATUS), SKIP, id="incomplete"),
]  # fmt: skip


@pytest.mark.parametrize(("claims", "pod", "new_pod", "want"), POD_CASES)
def test_is_schedulable_after_pod_change(
    claims: list[Any], pod: Any, new_pod: Any, want: QueueingHint
) -> None:
    plugin = _plugin(*claims)
    hint = _registered(plugin, EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    assert hint(pod, None, new_pod) is want


def test_is_schedulable_after_pod_change_wrong_object() -> None:
    """backoff-wrong-new-object: the hint fails, and the queue takes that as Queue."""
    plugin = _plugin()
    hint = _registered(plugin, EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    with pytest.raises(TypeError, match="isSchedulableAfterPodChange"):
        hint(POD_WITH_CLAIM_TEMPLATE, None, "not-a-claim")
    assert run_hint(hint, names.DYNAMIC_RESOURCES, POD_WITH_CLAIM_TEMPLATE, None, "x") is Q


# --- EventsToRegister, SignPod -------------------------------------------------------


def _registered(plugin: DynamicResources, resource: EventResource, action: ActionType) -> Any:
    incoming = ClusterEvent(resource, action)
    for registered in plugin.events_to_register():
        if registered.event.matches(incoming):
            assert registered.queueing_hint_fn is not None, incoming
            return registered.queueing_hint_fn
    raise AssertionError(f"nothing registered for {incoming}")


def test_events_to_register_are_upstreams() -> None:
    """dynamicresources.go EventsToRegister with SchedulerQueueingHints on: node add,
    label and allocatable updates (no hint); claim add/update and the pod's generated
    claim (with hints); device class and slice add/update (no hint)."""
    plugin = _plugin()
    got = {(e.event.resource, e.event.action_type): e.queueing_hint_fn is not None
           for e in plugin.events_to_register()}  # fmt: skip
    add_update = ActionType.ADD | ActionType.UPDATE
    node = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    assert got == {
        (EventResource.NODE, node): False,
        (EventResource.RESOURCE_CLAIM, add_update): True,
        (EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM): True,
        (EventResource.DEVICE_CLASS, add_update): False,
        (EventResource.RESOURCE_SLICE, add_update): False,
    }
    # a node's allocatable changing wakes a pod this plugin rejected
    allocatable = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
    assert any(e.event.matches(allocatable) for e in plugin.events_to_register())
    taint = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert not any(e.event.matches(taint) for e in plugin.events_to_register())


def test_sign_pod() -> None:
    """SignPod: a pod with resource claims is not signable; one without signs with no
    fragment of this plugin."""
    sign = IN_TREE_SIGNERS[names.DYNAMIC_RESOURCES]
    plugin = _plugin()
    assert sign(plugin, POD_WITH_CLAIM_NAME) is None
    assert sign(plugin, parse_object(make_pod("plain").obj().raw)) == []
