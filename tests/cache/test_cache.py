"""The scheduler cache: the assume/forget/finish_binding/expire/confirm state machine,
node removal and re-adding, image states.

Accounting is read back from the in-process node table (requested CPU, pod count and
the pods recorded on each row), so every test also checks that the columns the filters
read agree with the cache's own bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import DEFAULT_ASSUMED_POD_TTL, Cache
from cluster_sched.clock import FakeClock
from cluster_sched.errors import SchedulerError
from cluster_sched.testing.builders import make_node, make_pod

T0 = 1_700_000_000.0
TTL = 30.0


@dataclass(frozen=True, slots=True)
class Accounting:
    cpu: int
    pods: int
    keys: frozenset[str]


def accounting(cache: Cache, node: str) -> Accounting:
    """What the node columns say about ``node`` (what Filter and Score read)."""
    table = cache.sink.table  # type: ignore[attr-defined]
    row = table.index[node]
    cpu = int(table.requested[table.resource_col("cpu"), row])
    return Accounting(cpu, int(table.pod_count[row]), frozenset(table.row_pods[row]))


def empty() -> Accounting:
    return Accounting(0, 0, frozenset())


def holding(*pods: Pod) -> Accounting:
    return Accounting(
        sum(p.requests.get("cpu", 0) for p in pods), len(pods), frozenset(p.key for p in pods)
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def cache(clock: FakeClock) -> Cache:
    c = Cache(clock=clock, assumed_pod_ttl=TTL)
    for name in ("n1", "n2"):
        c.add_node(make_node(name).capacity(cpu="4", memory="8Gi", pods=10).obj())
    return c


def pending_pod(name: str = "p", cpu: str = "500m") -> Pod:
    return make_pod(name).uid(f"uid-{name}").req(cpu=cpu, memory="100Mi").obj()


def bound(pod: Pod, node: str) -> Pod:
    """The pod as the watch delivers it once its binding is written."""
    return replace(pod, node_name=node)


# --------------------------------------------------------------------- state machine

# Each op: (operation, node). "add" is the watch's Add of the bound pod (on that node);
# "expire" steps the clock past the TTL and runs cleanup; "early" steps to just before it.
Op = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Transition:
    ops: tuple[Op, ...]
    #: the cache's view at the end: None (absent), "assumed" or "added"
    state: str | None
    #: node whose columns hold the pod at the end (None: no node)
    node: str | None
    #: SchedulerError expected from the last op
    error: bool = False


TRANSITIONS: dict[str, Transition] = {
    "assume": Transition((("assume", "n1"),), "assumed", "n1"),
    "assume-forget": Transition((("assume", "n1"), ("forget", "")), None, None),
    "assume-add-confirms": Transition((("assume", "n1"), ("add", "n1")), "added", "n1"),
    "assume-finish-add": Transition(
        (("assume", "n1"), ("finish", ""), ("add", "n1")), "added", "n1"
    ),
    "assume-add-elsewhere-moves": Transition((("assume", "n1"), ("add", "n2")), "added", "n2"),
    "assume-finish-expire": Transition(
        (("assume", "n1"), ("finish", ""), ("expire", "")), None, None
    ),
    "assume-finish-early-keeps": Transition(
        (("assume", "n1"), ("finish", ""), ("early", "")), "assumed", "n1"
    ),
    "assume-expire-without-finish-keeps": Transition(
        (("assume", "n1"), ("expire", "")), "assumed", "n1"
    ),
    "assume-add-expire-keeps-added": Transition(
        (("assume", "n1"), ("finish", ""), ("add", "n1"), ("expire", "")), "added", "n1"
    ),
    "assume-remove": Transition((("assume", "n1"), ("remove", "")), None, None),
    "assume-twice-errors": Transition(
        (("assume", "n1"), ("assume", "n2")), "assumed", "n1", error=True
    ),
    "add": Transition((("add", "n1"),), "added", "n1"),
    "add-twice-is-update": Transition((("add", "n1"), ("add", "n1")), "added", "n1"),
    "add-forget-errors": Transition((("add", "n1"), ("forget", "")), "added", "n1", error=True),
    "add-assume-errors": Transition((("add", "n1"), ("assume", "n2")), "added", "n1", error=True),
    "add-update-moves": Transition((("add", "n1"), ("update", "n2")), "added", "n2"),
    "add-remove": Transition((("add", "n1"), ("remove", "")), None, None),
    "assume-update-ignored": Transition((("assume", "n1"), ("update", "n2")), "assumed", "n1"),
    "forget-unknown-errors": Transition((("forget", ""),), None, None, error=True),
    "assume-forget-assume-again": Transition(
        (("assume", "n1"), ("forget", ""), ("assume", "n2")), "assumed", "n2"
    ),
}


def _run(cache: Cache, clock: FakeClock, pod: Pod, op: str, node: str) -> None:
    if op == "assume":
        cache.assume_pod(bound(pod, node), node)
    elif op == "forget":
        st = cache.pod_states.get(pod.key)
        cache.forget_pod(st.pod if st is not None else pod)
    elif op == "finish":
        cache.finish_binding(cache.get_pod(pod.key) or pod)
    elif op == "add":
        cache.add_pod(bound(pod, node))
    elif op == "update":
        old = cache.get_pod(pod.key) or pod
        cache.update_pod(old, bound(pod, node))
    elif op == "remove":
        cache.remove_pod(cache.get_pod(pod.key) or pod)
    elif op == "expire":
        clock.step(TTL + 1)
        cache.cleanup_assumed_pods()
    elif op == "early":
        clock.step(TTL - 1)
        cache.cleanup_assumed_pods()
    else:  # pragma: no cover - table typo
        raise AssertionError(op)


@pytest.mark.parametrize("case", list(TRANSITIONS.values()), ids=list(TRANSITIONS))
def test_pod_state_machine(cache: Cache, clock: FakeClock, case: Transition) -> None:
    pod = pending_pod()
    *head, (last_op, last_node) = case.ops
    for op, node in head:
        _run(cache, clock, pod, op, node)
    if case.error:
        with pytest.raises(SchedulerError):
            _run(cache, clock, pod, last_op, last_node)
    else:
        _run(cache, clock, pod, last_op, last_node)

    if case.state is None:
        assert cache.get_pod(pod.key) is None
        assert not cache.is_assumed(pod.key)
    else:
        assert cache.get_pod(pod.key) is not None
        assert cache.is_assumed(pod.key) == (case.state == "assumed")
        assert cache.pod_node(pod.key) == case.node
    for node in ("n1", "n2"):
        expected = holding(pod) if node == case.node else empty()
        assert accounting(cache, node) == expected, node
        in_cache = {p.key for p in cache.pods_on_node(node)}
        assert in_cache == set(expected.keys), node


def test_confirmation_on_another_node_moves_accounting(cache: Cache) -> None:
    pod = pending_pod(cpu="1")
    other = pending_pod("other", cpu="2")
    cache.add_pod(bound(other, "n2"))
    cache.assume_pod(bound(pod, "n1"), "n1")
    assert accounting(cache, "n1") == holding(pod)

    cache.add_pod(bound(pod, "n2"))

    assert accounting(cache, "n1") == empty()
    assert accounting(cache, "n2") == holding(pod, other)
    assert cache.pod_node(pod.key) == "n2"
    assert not cache.is_assumed(pod.key)
    # Removing it later frees n2, not n1.
    cache.remove_pod(bound(pod, "n2"))
    assert accounting(cache, "n2") == holding(other)
    assert accounting(cache, "n1") == empty()


def test_confirmation_with_different_requests_reaccounts(cache: Cache) -> None:
    """A newer object of an assumed pod that counts differently replaces the assumed one."""
    pod = pending_pod(cpu="1")
    cache.assume_pod(bound(pod, "n1"), "n1")
    bigger = make_pod("p").uid("uid-p").req(cpu="3", memory="100Mi").node("n1").obj()
    cache.add_pod(bigger)
    assert accounting(cache, "n1") == holding(bigger)


def test_forget_of_added_pod_errors_and_keeps_it(cache: Cache) -> None:
    pod = bound(pending_pod(), "n1")
    cache.add_pod(pod)
    with pytest.raises(SchedulerError, match="wasn't assumed"):
        cache.forget_pod(pod)
    assert accounting(cache, "n1") == holding(pod)


def test_expiry_only_after_finish_binding_and_ttl(cache: Cache, clock: FakeClock) -> None:
    pod = bound(pending_pod(), "n1")
    cache.assume_pod(pod, "n1")
    # However long the binding takes, an unfinished binding never expires.
    clock.step(10 * TTL)
    assert cache.cleanup_assumed_pods() == []
    assert cache.is_assumed(pod.key)

    cache.finish_binding(pod)
    clock.step(TTL)
    assert cache.cleanup_assumed_pods() == [], "deadline is exclusive: now == deadline keeps it"
    clock.step(0.001)
    assert [p.key for p in cache.cleanup_assumed_pods()] == [pod.key]
    assert cache.get_pod(pod.key) is None
    assert accounting(cache, "n1") == empty()


def test_expiry_picks_only_expired_pods(cache: Cache, clock: FakeClock) -> None:
    first = bound(pending_pod("a"), "n1")
    second = bound(pending_pod("b"), "n1")
    cache.assume_pod(first, "n1")
    cache.assume_pod(second, "n1")
    cache.finish_binding(first)
    clock.step(TTL / 2)
    cache.finish_binding(second)
    clock.step(TTL / 2 + 1)
    assert [p.key for p in cache.cleanup_assumed_pods()] == [first.key]
    assert accounting(cache, "n1") == holding(second)


def test_finish_binding_of_unknown_or_added_pod_is_noop(cache: Cache, clock: FakeClock) -> None:
    pod = bound(pending_pod(), "n1")
    cache.finish_binding(pod)  # unknown: nothing happens
    cache.add_pod(pod)
    cache.finish_binding(pod)
    clock.step(TTL * 2)
    assert cache.cleanup_assumed_pods() == []
    assert accounting(cache, "n1") == holding(pod)


def test_default_ttl_is_upstreams() -> None:
    assert DEFAULT_ASSUMED_POD_TTL == 15 * 60


# --------------------------------------------------------------------- nodes


def test_removing_a_node_keeps_its_pods_and_readding_reaccounts(cache: Cache) -> None:
    a = bound(pending_pod("a", cpu="1"), "n1")
    b = bound(pending_pod("b", cpu="2"), "n1")
    cache.add_pod(a)
    cache.assume_pod(b, "n1")

    cache.remove_node("n1")
    assert "n1" not in cache.sink.table.index  # type: ignore[attr-defined]
    assert {p.key for p in cache.pods_on_node("n1")} == {a.key, b.key}
    assert cache.get_pod(a.key) is a
    assert cache.is_assumed(b.key)

    # A pod confirmed on the missing node is kept too.
    c = bound(pending_pod("c", cpu="500m"), "n1")
    cache.add_pod(c)

    cache.add_node(make_node("n1").capacity(cpu="8", memory="8Gi", pods=10).obj())
    assert accounting(cache, "n1") == holding(a, b, c)
    table = cache.sink.table  # type: ignore[attr-defined]
    row = table.index["n1"]
    assert int(table.free[table.resource_col("cpu"), row]) == 8000 - 3500


def test_removing_pods_of_a_missing_node_forgets_them(cache: Cache) -> None:
    a = bound(pending_pod("a"), "n1")
    cache.add_pod(a)
    cache.remove_node("n1")
    cache.remove_pod(a)
    assert cache.pods_on_node("n1") == []
    assert "n1" not in cache.node_pods
    cache.add_node(make_node("n1").capacity(cpu="4", pods=10).obj())
    assert accounting(cache, "n1") == empty()


def test_node_update_keeps_pod_accounting(cache: Cache) -> None:
    a = bound(pending_pod("a", cpu="1"), "n1")
    cache.add_pod(a)
    cache.update_node(
        make_node("n1").capacity(cpu="16", memory="8Gi", pods=10).label("x", "y").obj()
    )
    assert accounting(cache, "n1") == holding(a)
    assert cache.num_nodes == 2


def test_removing_an_unknown_node_is_noop(cache: Cache) -> None:
    generation = cache.generation
    cache.remove_node("nope")
    assert cache.generation == generation


# --------------------------------------------------------------------- images

MB = 1024 * 1024


def test_image_states_follow_nodes(cache: Cache) -> None:
    cache.add_node(make_node("i1").image("nginx:1.25", 100 * MB, "docker.io/nginx:1.25").obj())
    cache.add_node(make_node("i2").image("nginx:1.25", 100 * MB).image("redis:7", 50 * MB).obj())
    assert cache.image_state("nginx:1.25") == (100 * MB, 2)
    assert cache.image_state("docker.io/nginx:1.25") == (100 * MB, 1)
    assert cache.image_state("redis:7") == (50 * MB, 1)
    assert cache.image_state("busybox") is None

    # The update drops redis from i2; removing i1 drops nginx's alias.
    cache.update_node(make_node("i2").image("nginx:1.25", 100 * MB).obj())
    assert cache.image_state("redis:7") is None
    cache.remove_node("i1")
    assert cache.image_state("nginx:1.25") == (100 * MB, 1)
    assert cache.image_state("docker.io/nginx:1.25") is None
    cache.remove_node("i2")
    assert cache.images == {}
