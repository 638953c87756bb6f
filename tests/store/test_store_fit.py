"""bind.lua's over-commit check and Scheduled events written with the binding."""

from __future__ import annotations

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.store import BindOutcome, Store
from cluster_sched.store.accounting import requested_by_node
from cluster_sched.testing import make_node, make_pod


def _apply(store: Store, *builders: object) -> None:
    store.apply_many([b.manifest() for b in builders])  # type: ignore[attr-defined]


def _bind(store: Store, pod: str, node: str = "n1") -> BindOutcome:
    return store.bind_many([(f"default/{pod}", node, None)], scheduled_events=True, check_fit=True)[
        0
    ].outcome


@pytest.mark.parametrize(
    ("node", "pod", "resource"),
    [
        (make_node("n1").capacity(cpu="1", pods=10), make_pod("p").req(cpu="600m"), "cpu"),
        (
            make_node("n1").capacity(memory="1Gi", pods=10),
            make_pod("p").req(memory="600Mi"),
            "memory",
        ),
        (make_node("n1").capacity(cpu="8", pods=1), make_pod("p").req(cpu="1m"), "pods"),
        (
            make_node("n1").capacity({"cpu": "8", "pods": 10, "example.com/gpu": 1}),
            make_pod("p").req({"example.com/gpu": 1}),
            "example.com/gpu",
        ),
    ],
    ids=["cpu", "memory", "pods", "extended"],
)
def test_second_pod_that_does_not_fit_is_refused_with_its_own_event(
    store: Store, node: object, pod: object, resource: str
) -> None:
    _apply(store, node, pod, make_pod("q").req(**_requests_of(pod)))  # type: ignore[arg-type]
    assert _bind(store, "p") is BindOutcome.BOUND
    assert _bind(store, "q") is BindOutcome.OVER_COMMITTED
    assert (store.get("Pod", "default/q") or {}).get("spec", {}).get("nodeName") is None
    [refused] = store.events(key="default/q", reason="OverCommit")
    assert refused["type"] == "Warning" and resource in refused["message"]
    assert [e["key"] for e in store.events(reason="Scheduled")] == ["default/p"]


def _requests_of(builder: object) -> dict[str, object]:
    doc = builder.manifest()  # type: ignore[attr-defined]
    return dict(doc["spec"]["containers"][0]["resources"]["requests"])


def test_deleting_a_bound_pod_frees_its_room(store: Store) -> None:
    _apply(store, make_node("n1").capacity(cpu="1", pods=10))
    _apply(store, make_pod("p").req(cpu="800m"), make_pod("q").req(cpu="800m"))
    assert _bind(store, "p") is BindOutcome.BOUND
    assert _bind(store, "q") is BindOutcome.OVER_COMMITTED
    assert store.delete("Pod", "default/p")
    assert _bind(store, "q") is BindOutcome.BOUND
    _, requested = requested_by_node(store.client, store.keys)
    assert requested["n1"]["cpu"] == 800 and requested["n1"]["pods"] == 1


def test_pods_created_bound_count_once(store: Store) -> None:
    _apply(store, make_node("n1").capacity(cpu="1", pods=10))
    bound = make_pod("early").req(cpu="700m").node("n1")
    _apply(store, bound)
    _apply(store, bound.label("again", "yes"))  # an update does not count it twice
    _apply(store, make_pod("p").req(cpu="400m"))
    assert _bind(store, "p") is BindOutcome.OVER_COMMITTED
    _, requested = requested_by_node(store.client, store.keys)
    assert requested["n1"] == {"cpu": 700, "pods": 1}


def test_node_update_changes_the_limit_and_unknown_nodes_are_not_checked(store: Store) -> None:
    _apply(store, make_node("n1").capacity(cpu="1", pods=10), make_pod("p").req(cpu="2"))
    assert _bind(store, "p") is BindOutcome.OVER_COMMITTED
    _apply(store, make_node("n1").capacity(cpu="4", pods=10))
    assert _bind(store, "p") is BindOutcome.BOUND
    _apply(store, make_pod("elsewhere").req(cpu="64"))
    assert _bind(store, "elsewhere", "not-a-node") is BindOutcome.BOUND


def test_without_check_fit_bind_is_the_api_servers(store: Store) -> None:
    """A plain binding (no check, no event) is what the pods/binding subresource does;
    it still counts, so the scheduler's next binding sees the node full."""
    _apply(store, make_node("n1").capacity(cpu="1", pods=10))
    _apply(store, make_pod("big").req(cpu="2"), make_pod("p").req(cpu="1m"))
    assert store.bind("default/big", "n1").ok
    assert store.events(reason="Scheduled") == []
    assert _bind(store, "p") is BindOutcome.OVER_COMMITTED


def test_each_successful_binding_has_exactly_one_scheduled_event(store: Store) -> None:
    _apply(store, make_node("n1").capacity(cpu="2", pods=10))
    _apply(store, *(make_pod(f"p{i}").req(cpu="500m") for i in range(6)))
    results = store.bind_many(
        [(f"default/p{i}", "n1", None) for i in range(6)] + [("default/p0", "n1", None)],
        scheduled_events=True,
        check_fit=True,
    )
    bound = [r.pod_key for r in results if r.ok]
    assert bound == [f"default/p{i}" for i in range(4)]
    assert [e["key"] for e in store.events(reason="Scheduled")] == bound
    message = store.events(key="default/p1", reason="Scheduled")[0]["message"]
    assert message == "Successfully assigned default/p1 to n1"


def test_fit_skips_mirror_the_profiles_ignored_resources(store: Store) -> None:
    """A resource the profile's NodeResourcesFit ignores is not checked; a binding with
    no skip list at all (the profile filters without NodeResourcesFit) is not checked."""
    _apply(store, make_node("n1").capacity(cpu="1", pods=10))
    _apply(store, make_pod("gpu").req({"cpu": "100m", "example.com/gpu": 1}))
    _apply(store, make_pod("big").req(cpu="4"))
    [ignored, unchecked] = store.bind_many(
        [
            ("default/gpu", "n1", None, None, ["example.com/gpu"]),
            ("default/big", "n1", None, None, None),
        ],
        check_fit=True,
    )
    assert ignored.outcome is BindOutcome.BOUND and unchecked.outcome is BindOutcome.BOUND


_prefixes = iter(range(1_000_000))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 2), st.integers(1, 3)), max_size=14),
)
def test_one_call_binds_as_the_same_bindings_one_call_each(
    redis_client: redis.Redis, clock: FakeClock, cpus: list[int], plan: list[tuple[int, int, int]]
) -> None:
    """Several bindings to one node in one call (the node's sums read once and written
    once, the revision counter advanced once): the same outcomes, revisions, Events and
    sums as one call per binding. Pods named twice are refused as already bound; pods
    beyond the applied ones do not exist."""
    stores = []
    for _ in range(2):
        store = Store(redis_client, f"{{bf{next(_prefixes)}}}", clock=clock)
        nodes = [make_node(f"n{i}").capacity(cpu=str(c), pods=3) for i, c in enumerate(cpus)]
        pods = [make_pod(f"p{j}").req(cpu=f"{(j % 3 + 1) * 500}m") for j in range(6)]
        _apply(store, *nodes, *pods)
        stores.append(store)
    bindings = [(f"default/p{j}", f"n{n % len(cpus)}", None) for j, n, _ in plan]
    together = stores[0].bind_many(bindings, scheduled_events=True, check_fit=True)
    apart = [stores[1].bind_many([b], scheduled_events=True, check_fit=True)[0] for b in bindings]
    assert [(r.outcome, r.rv) for r in together] == [(r.outcome, r.rv) for r in apart]
    for kind in ("Scheduled", "OverCommit"):
        assert [(e["key"], e["message"]) for e in stores[0].events(reason=kind)] == [
            (e["key"], e["message"]) for e in stores[1].events(reason=kind)
        ]
    sums = [requested_by_node(redis_client, s.keys) for s in stores]
    assert sums[0] == sums[1]
    assert stores[0].list("Pod") == stores[1].list("Pod")
