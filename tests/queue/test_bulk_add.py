"""A burst added in one ``add_many`` equals the same pods added one ``add`` at a time.

``add_many`` builds the script's arguments in one pass (PreEnqueue, QueueSort key, packed
record per pod, no Placement); ``add`` builds each through ``_placement``, as every
other move does. On two copies of the same random queue (pods already active, gated, in
the pool, backing off, in flight, or absent) the same additions, repeats and nominations
included, must leave the same Redis state key by key, the same results, the same metrics
hook calls, the same nominations and the same pop order afterwards.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.queue import QueuedPodInfo, SchedulingQueue
from tests.queue.queue_helpers import FIT, GATES, PLUGIN_EVENTS, T0, Recorder, dump, info, twin

PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

#: Where a pod is before the burst.
FATES = ("absent", "active", "gated", "pool", "backoff", "flying")
KEYS = [f"p{i}" for i in range(8)]  # few keys: a burst repeats queued pods and itself

adds = st.lists(
    st.tuples(
        st.sampled_from(KEYS),
        st.integers(min_value=-2, max_value=2),  # priority: many ties
        st.integers(min_value=0, max_value=30).map(lambda s: s / 10),  # timestamp offset
        st.sampled_from(["", "", "node-a", "node-b"]),  # nominatedNodeName
    ),
    min_size=1,
    max_size=25,
)


@PROPERTY
@given(
    fates=st.lists(st.sampled_from(FATES), min_size=len(KEYS), max_size=len(KEYS)),
    burst=adds,
    gated=st.sets(st.sampled_from(KEYS)),
)
def test_add_many_equals_adds_one_at_a_time(
    redis_client: redis.Redis,
    fates: list[str],
    burst: list[tuple[str, int, float, str]],
    gated: set[str],
) -> None:
    clock = FakeClock(T0)
    gate: set[str] = set()

    def pre_enqueue(i: QueuedPodInfo) -> str | None:
        return GATES if i.pod_key.split("/")[-1] in gate else None

    common: dict[str, Any] = {
        "clock": clock,
        "plugin_events": PLUGIN_EVENTS,
        "pre_enqueue": pre_enqueue,
    }
    hook = Recorder()
    one = SchedulingQueue(
        redis_client, prefix=f"{{a{uuid.uuid4().hex}}}", on_incoming=hook, **common
    )
    fate = dict(zip(KEYS, fates, strict=True))
    # The queue before the burst: the tried pods added, popped and failed as fated,
    # then the others added (gated ones by PreEnqueue).
    tried = [k for k in KEYS if fate[k] in ("pool", "backoff", "flying")]
    one.add_many([info(k, 0, T0 + i) for i, k in enumerate(tried)])
    for p in one.pop_many(len(tried), timeout=0) if tried else []:
        key = p.info.pod_key.split("/")[-1]
        if fate[key] != "flying":
            plugins = frozenset({FIT}) if fate[key] == "pool" else frozenset()
            one.add_unschedulable_if_not_present(
                replace(p.info, unschedulable_plugins=plugins), p.cycle
            )
    gate.update(k for k, f in fate.items() if f == "gated")
    one.add_many([info(k, 0, T0 + 0.1) for k in KEYS if fate[k] in ("active", "gated")])
    counts = one.counts()
    assert sum(counts.values()) == sum(1 for f in fates if f != "absent")
    clock.step(0.5)
    gate.clear()
    gate.update(gated)
    other_hook = Recorder()
    many = twin(redis_client, one, on_incoming=other_hook, **common)
    hook.seen.clear()

    infos = [info(k, prio, T0 + off, nominated_node_name=n) for k, prio, off, n in burst]
    singles = [one.add(i) for i in infos]
    bulk = many.add_many(infos)

    assert bulk == singles
    assert dump(redis_client, many.keys) == dump(redis_client, one.keys)
    assert other_hook.seen == hook.seen
    assert [many.nominator.nominated_node_for_pod(f"default/{k}") for k in KEYS] == [
        one.nominator.nominated_node_for_pod(f"default/{k}") for k in KEYS
    ]
    assert many.pop_many(2 * len(KEYS), timeout=0) == one.pop_many(2 * len(KEYS), timeout=0)
    assert dump(redis_client, many.keys) == dump(redis_client, one.keys)
