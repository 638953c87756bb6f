"""InFlightEvents keeps the events some pod in flight may need: those tagged at or after
the oldest cycle in flight. The oldest cycle comes from a heap, not a scan of every pod
per finished pod; this checks it against the plain definition (min over the pods in
flight) for random histories of pops (pods popped again too), events and finished pods."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.framework.events import EVENT_NODE_ADD
from cluster_sched.queue.inflight import InFlightEvents

PODS = [f"default/p{i}" for i in range(6)]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("pop"), st.lists(st.sampled_from(PODS), min_size=1, max_size=3)),
        st.tuples(st.just("event"), st.just([])),
        st.tuples(st.just("finish"), st.lists(st.sampled_from(PODS), min_size=1, max_size=3)),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(history=steps)
def test_events_kept_are_those_from_the_oldest_cycle_in_flight(
    history: list[tuple[str, list[str]]],
) -> None:
    tracked = InFlightEvents()
    in_flight: dict[str, int] = {}  # the plain model: pod -> its cycle
    kept: list[int] = []  # tags of the events the model keeps
    cycle = 0
    for op, pods in history:
        if op == "pop":
            batch = []
            for pod in dict.fromkeys(pods):
                cycle += 1
                batch.append((pod, cycle))
            tracked.popped(batch)
            in_flight.update(batch)
        elif op == "event":
            assert tracked.record(cycle, EVENT_NODE_ADD) == bool(in_flight)
            if in_flight:
                kept.append(cycle)
        else:
            tracked.finished(pods)
            for pod in pods:
                in_flight.pop(pod, None)
            oldest = min(in_flight.values(), default=None)
            kept = [] if oldest is None else [t for t in kept if t >= oldest]
        assert len(tracked) == len(kept)
        for pod, c in in_flight.items():
            got = tracked.events_for(pod, c)
            assert got is not None
            assert [e.tag for e in got] == [t for t in kept if t >= c]
