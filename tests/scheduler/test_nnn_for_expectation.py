"""NominatedNodeNameForExpectation on and off (upstream KEP-5278).

On: a pod whose binding cycle will wait on Permit (or do PreBind work) has
status.nominatedNodeName = its host in the store while the binding is in progress; the
bind clears it, and so does a failed binding cycle. A pod bound at once gets none.
Off: no nominatedNodeName is ever written for a binding.
"""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.features import NOMINATED_NODE_NAME_FOR_EXPECTATION, FeatureGates
from cluster_sched.workload.virtual_binding import InlineBindingExecutor
from tests.scheduler.coordinator_harness import PERMIT, PREBIND, PROFILE, config, node, pod


def _nnn(h: Any, key: str) -> str:
    doc = h.store.get("Pod", key) or {}
    return str((doc.get("status") or {}).get("nominatedNodeName", ""))


def _harness(make_harness: Any, on: bool) -> Any:
    return make_harness(
        config(PERMIT), features=FeatureGates({NOMINATED_NODE_NAME_FOR_EXPECTATION: on})
    )


@pytest.mark.parametrize("on", [True, False], ids=["gate-on", "gate-off"])
def test_waiting_pod_is_nominated_to_its_host_until_bound(make_harness: Any, on: bool) -> None:
    h = _harness(make_harness, on)
    h.apply(node("n1"), pod("p").label("permit", "wait"))
    h.start()
    h.cycle()
    waiting = h.coord.frameworks[PROFILE].handle.waiting_pods.get("default/p")
    assert waiting is not None
    assert h.node_of("default/p") is None
    assert _nnn(h, "default/p") == ("n1" if on else "")
    h.coord.poll_informer()  # the watch sees the update: the assumed pod stays put
    assert h.cache.is_assumed("default/p")
    assert not h.queue.nominator.has_nomination("default/p")
    waiting.allow(PERMIT)
    h.settle()
    assert h.node_of("default/p") == "n1"
    assert _nnn(h, "default/p") == ""


def test_failed_binding_clears_the_expectation(make_harness: Any) -> None:
    h = _harness(make_harness, True)
    h.apply(node("n1"), pod("p").label("permit", "wait"))
    h.start()
    h.cycle()
    assert _nnn(h, "default/p") == "n1"
    h.coord.frameworks[PROFILE].handle.waiting_pods.reject("default/p", PERMIT, "not now")
    h.settle()
    assert h.node_of("default/p") is None
    assert _nnn(h, "default/p") == ""


def test_pod_bound_at_once_gets_no_nomination(make_harness: Any) -> None:
    h = _harness(make_harness, True)
    h.apply(node("n1"), pod("p"))
    h.start()
    h.cycle()
    assert _nnn(h, "default/p") == ""
    h.settle()
    assert h.node_of("default/p") == "n1"


def test_prebind_pods_are_nominated_by_their_binding_cycle(make_harness: Any) -> None:
    """A pod whose PreBind will work gets its nomination from its binding cycle, before
    PreBind (upstream bindingCycle's first step), not from the scheduling cycle: nothing
    is written for it until the binder runs. The bind clears it, a failed PreBind too."""
    h = make_harness(
        config(PREBIND),
        binding_executor=InlineBindingExecutor,  # binding cycles run at the next poll
        features=FeatureGates({NOMINATED_NODE_NAME_FOR_EXPECTATION: True}),
    )
    h.apply(node("n1"), pod("a"), pod("b").label("prebind", "fail"))
    h.start()
    h.cycle()
    h.cycle()
    assert (_nnn(h, "default/a"), _nnn(h, "default/b")) == ("", "")
    since = h.store.last_event_id()
    h.settle()
    seen = [
        (ev.key, (ev.obj.get("status") or {}).get("nominatedNodeName", ""),
         (ev.obj.get("spec") or {}).get("nodeName", ""))
        for ev in h.store.read_events(since)
        if ev.kind == "Pod"
    ]  # fmt: skip
    assert seen[:2] == [("default/a", "n1", ""), ("default/b", "n1", "")]
    assert ("default/a", "", "n1") in seen[2:]
    assert (h.node_of("default/a"), h.node_of("default/b")) == ("n1", None)
    assert (_nnn(h, "default/a"), _nnn(h, "default/b")) == ("", "")
