"""``Cache.assume_pods`` (a whole-batch run's pods assumed in one call) leaves the cache
as ``assume_pod`` pod by pod does: pod states, the assumed set, pods per node, the
generation and every node-table column (repeated hosts, host ports, a host not in the
cache, a pod index built or not); it stops before the first pod whose key the cache
holds, as the per-pod loop stops at its error; and Forget and expiry of one of the pods
afterwards work the same."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.clock import FakeClock
from cluster_sched.errors import SchedulerError
from cluster_sched.testing.builders import make_namespace, make_node, make_pod
from tests.nodetable.table_state import table_state

NODES = [f"n{i}" for i in range(5)]
HOSTS = [*NODES, "gone"]  # "gone": a host the cache has no node for (accounted later)
TTL = 30.0


def _pod(name: str, kind: int, port: bool) -> Pod:
    b = make_pod(name).label("app", "ab"[kind % 2])
    if kind == 0:
        b = b.req(cpu="0", memory="0")
    elif kind == 1:
        b = b.req({"cpu": "100m", "example.com/gpu": "1"})
    else:
        b = b.req(cpu=f"{100 * kind}m", memory=f"{64 * kind}Mi")
    if port:
        b = b.host_port(8080)
    return b.obj()


def _cache(existing: list[tuple[str, bool]], indexed: bool) -> Cache:
    cache = Cache(clock=FakeClock(1000.0), assumed_pod_ttl=TTL)
    nodes = [make_node(n).capacity(cpu="8", memory="32Gi", pods=110).obj() for n in NODES]
    cache.load([make_namespace("default"), *nodes])
    for name, assumed in existing:  # pods already in the cache, bound or assumed
        if assumed:
            cache.assume_pod(evolve(_pod(name, 2, False), node_name="n0"), "n0")
        else:
            cache.add_pod(make_pod(name).req(cpu="100m").node("n1").obj())
    if indexed:
        cache.sink.table.pod_index.groups  # type: ignore[attr-defined]  # noqa: B018
    return cache


def _state(cache: Cache) -> dict[str, Any]:
    return {
        "pods": {
            k: (s.pod, s.node_name, s.assumed, s.binding_finished, s.deadline)
            for k, s in cache.pod_states.items()
        },
        "assumed": set(cache.assumed),
        "node_pods": {k: set(v) for k, v in cache.node_pods.items() if v},
        "generation": cache.generation,
        "table": table_state(cache.sink.table),  # type: ignore[attr-defined]
    }


run_pods = st.lists(
    st.tuples(
        st.integers(0, 11),  # the pod's name: x0..x11, so names repeat and collide
        st.sampled_from(HOSTS),
        st.integers(0, 4),  # requests
        st.booleans(),  # a host port: the per-pod column path inside add_pods
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    run=run_pods,
    existing=st.lists(
        st.tuples(st.sampled_from(["x3", "x7", "e1"]), st.booleans()),
        max_size=2,
        unique_by=lambda t: t[0],
    ),
    indexed=st.booleans(),
    forget=st.integers(0, 100),
)
def test_assume_pods_equals_assume_pod_one_by_one(
    run: list[tuple[int, str, int, bool]],
    existing: list[tuple[str, bool]],
    indexed: bool,
    forget: int,
) -> None:
    one, bulk = _cache(existing, indexed), _cache(existing, indexed)
    pods = [evolve(_pod(f"x{i}", kind, port), node_name=h) for i, h, kind, port in run]
    hosts = [h for _, h, _, _ in run]
    expected = 0
    for pod, host in zip(pods, hosts, strict=True):
        try:
            one.assume_pod(pod, host)
        except SchedulerError:
            break  # the run ends at the pod whose assume fails
        expected += 1
    assert bulk.assume_pods(pods, hosts) == expected
    assert _state(bulk) == _state(one)
    if expected == 0:
        return
    # Forget one of them (its binding cycle failed), then expire another.
    gone = pods[forget % expected]
    one.forget_pod(gone)
    bulk.forget_pod(gone)
    assert _state(bulk) == _state(one)
    assert not bulk.is_assumed(gone.key) and bulk.get_pod(gone.key) is None
    left = [p for p in pods[:expected] if p.key != gone.key]
    if left:
        for cache in (one, bulk):
            cache.finish_binding(left[0])
            cache.clock.step(TTL + 1)  # type: ignore[attr-defined]
        assert [p.key for p in bulk.cleanup_assumed_pods()] == [left[0].key]
        assert [p.key for p in one.cleanup_assumed_pods()] == [left[0].key]
        assert _state(bulk) == _state(one)
    # A node that comes back accounts its bulk-assumed pods as it does per-pod ones.
    for cache in (one, bulk):
        cache.add_node(make_node("gone").capacity(cpu="8", memory="32Gi", pods=110).obj())
    assert _state(bulk) == _state(one)


def test_assume_pods_stops_before_a_pod_the_cache_holds() -> None:
    cache = _cache([("x1", False)], indexed=False)
    pods = [evolve(_pod(f"x{i}", 2, False), node_name="n2") for i in range(3)]
    assert cache.assume_pods(pods, ["n2"] * 3) == 1
    assert cache.is_assumed("default/x0")
    assert not cache.is_assumed("default/x2") and cache.get_pod("default/x2") is None
    table = cache.sink.table  # type: ignore[attr-defined]
    assert list(table.row_pods[table.index["n2"]]) == ["default/x0"]
