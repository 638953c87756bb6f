"""Every store write of a deposed leader comes back FENCED, is counted, and writes nothing.

The leader (``cluster_sched.testing.fencing``) won a real lease and stopped renewing it;
a standby took the lease over. Each write below is one the old leader could still have
in flight, and one that would succeed if it were not fenced (the pod is unbound, the
object exists...), so the refusal is the fence's and nothing else's: with the check in
``_fence.lua`` switched off, every case here fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from cluster_sched.errors import StoreError
from cluster_sched.store import Store
from cluster_sched.store.fence import is_fenced_error
from cluster_sched.testing import make_node, make_pod
from cluster_sched.testing.fencing import Takeover, depose, lead, redis_state

#: name -> (the write, the operation its refusal is counted under)
WRITES: dict[str, tuple[Callable[[Store], Any], str]] = {
    "bind_many": (
        lambda s: s.bind_many(
            [("default/p", "n1", None, None, None), ("default/q", "n1", None, None, None)],
            scheduled_events=True,
            check_fit=True,
        ),
        "store.bind",
    ),
    "bind": (lambda s: s.bind("default/p", "n1", scheduled_event=True), "store.bind"),
    "nominatedNodeName": (
        lambda s: s.set_nominated_node_name("default/p", "n1"),
        "store.apply",
    ),
    "PodScheduled condition": (
        lambda s: s.update_pod_status_condition(
            "default/p", {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        ),
        "store.apply",
    ),
    "Events": (
        lambda s: s.record_events(
            [{"kind": "Pod", "key": "default/p", "reason": "FailedScheduling", "message": "x"}]
        ),
        "store.events",
    ),
    "delete (preemption)": (lambda s: s.delete("Pod", "default/q"), "store.delete"),
    "apply": (lambda s: s.apply(make_pod("r").manifest()), "store.apply"),
}


@pytest.fixture
def takeover(redis_client: redis.Redis) -> Iterator[tuple[Store, Takeover]]:
    admin = Store(redis_client)  # kubectl: unfenced
    admin.apply_many(
        [
            make_node("n1").capacity(cpu="4", pods=10).manifest(),
            make_pod("p").req(cpu="1").manifest(),
            make_pod("q").req(cpu="1").manifest(),
        ]
    )
    old_store = Store(redis_client)
    old = lead(redis_client, old_store)
    assert old_store.set_nominated_node_name("default/q", "n1") is not None  # writes while leading
    t = depose(old, redis_client)
    yield old_store, t
    t.close()


@pytest.mark.parametrize("name", list(WRITES))
def test_a_deposed_leaders_write_is_fenced_and_counted(
    name: str, takeover: tuple[Store, Takeover], redis_client: redis.Redis
) -> None:
    old_store, t = takeover
    write, operation = WRITES[name]
    before = redis_state(redis_client)
    with pytest.raises(StoreError) as err:
        write(old_store)
    assert is_fenced_error(err.value)
    assert dict(old_store.fence.refused) == {operation: 1}
    assert redis_state(redis_client) == before, "a refused script writes nothing"
    # The same write with the new leader's token lands: the refusal was the fence's.
    write(t.new_store)
    assert t.new_store.fence.refused_total() == 0


def test_a_leader_that_lost_the_lease_locally_is_fenced_too(
    takeover: tuple[Store, Takeover],
) -> None:
    """After OnStoppedLeading the token is LOST_TOKEN: refused even with no new holder's
    token to compare with."""
    old_store, t = takeover
    t.old._stop_leading("test")
    with pytest.raises(StoreError) as err:
        old_store.bind("default/p", "n1")
    assert is_fenced_error(err.value)
    assert old_store.fence.refused["store.bind"] == 1
