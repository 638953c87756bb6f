"""evolve is dataclasses.replace, faster: equal results (derived fields included) on the
classes it serves, the same errors, and no effect on the original."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.api.evolve import evolve
from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import ObjectMeta
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.testing import make_pod

POD = parse_object(make_pod("web-1").req(cpu="1").label("app", "web").manifest())
names = st.sampled_from(["a", "b-2", "web-1"])
pod_changes = st.fixed_dictionaries(
    {},
    optional={
        "node_name": names,
        "nominated_node_name": names,
        "priority": st.integers(-10, 10),
        "raw": st.none(),
        "meta": st.builds(ObjectMeta, names, st.sampled_from(["default", "kube-system"])),
        "phase": st.sampled_from(["Pending", "Running"]),
    },
)


@given(pod_changes)
def test_a_pod_evolves_as_replace_makes_it(changes: dict[str, Any]) -> None:
    before = dataclasses.replace(POD)
    new = evolve(POD, **changes)
    assert new == dataclasses.replace(POD, **changes)
    assert new.key == f"{new.meta.namespace}/{new.meta.name}"  # __post_init__ ran
    assert before == POD


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "attempts": st.integers(0, 5),
            "initial_attempt_timestamp": st.floats(0, 10),
            "unschedulable_plugins": st.frozensets(st.sampled_from(["NodePorts", "Fit"])),
            "gated": st.booleans(),
        },
    )
)
def test_a_queue_entry_evolves_as_replace_makes_it(changes: dict[str, Any]) -> None:
    info = QueuedPodInfo("default/p", priority=3, timestamp=1.5)
    assert evolve(info, **changes) == dataclasses.replace(info, **changes)


def test_the_errors_are_replace_s() -> None:
    with pytest.raises(TypeError):
        evolve(POD, no_such_field=1)
    with pytest.raises(ValueError, match="init=False"):
        evolve(POD, key="x/y")
    with pytest.raises(ValueError, match="invalid pod key"):  # __post_init__'s check
        evolve(QueuedPodInfo("default/p"), pod_key="")


def test_a_class_with_slots_of_its_own_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int = 0

    with pytest.raises(TypeError, match="slotted dataclass"):
        evolve(NoSlots(), x=1)
