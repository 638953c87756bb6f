"""PreFilter/PreScore shared by pods of one shape: used while the facts the cross-node
Skips read are unchanged, made again (InterPodAffinity then running per pod) the moment
a pod with affinity terms exists, and never changing a decision (the same hosts as the
unshared numpy path)."""

from __future__ import annotations

import random

from cluster_sched.api.evolve import evolve
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.plugins.podtopologyspread.filtering import PreFilterState
from cluster_sched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY as SPREAD_KEY
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.pre_cycle import KNOWN, PreCycleReuse, plugin_names
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    make_controller,
    make_node,
    make_pod,
)


def _run(fast: FastPath | None, events: list[str]) -> list[str]:
    """Schedule ``web`` pods (one spec) and assume each; ``anti`` adds a bound pod whose
    required anti-affinity repels app=web by hostname, ``ctrl`` a ReplicaSet selecting
    app=web (PodTopologySpread's system default constraints then apply)."""
    cache = Cache()
    cache.load(
        [
            make_node(f"n{i}").capacity(cpu="8", memory="16Gi", pods=20).zone(f"z{i % 2}").obj()
            for i in range(6)
        ]
    )
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    sched = Scheduler(0, random.Random(11), fast=fast)
    table = cache.sink.table  # type: ignore[attr-defined]
    hosts: list[str] = []
    for i, what in enumerate(events):
        if what == "anti":
            guard = (
                make_pod("guard")
                .req(cpu="100m")
                .pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"})
                .node(hosts[-1])
                .obj()
            )
            cache.add_pod(guard)
            continue
        if what == "ctrl":
            cache.set_controller(make_controller("ReplicaSet", "web", {"app": "web"}))
            continue
        pod = make_pod(f"web-{i}").req(cpu="1", memory="1Gi").label("app", "web").obj()
        result = sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
        host = result.suggested_host
        assert host is not None
        cache.assume_pod(pod, host)
        hosts.append(host)
    return hosts


def test_shared_state_gives_the_unshared_hosts_and_reruns_affinity_once_it_exists() -> None:
    events = ["web", "web", "web", "anti", "web", "web", "web"]
    fast = FastPath(share_pre_cycle=True)
    hosts = _run(fast, events)
    assert hosts == _run(None, events)
    assert fast.pre_cycle is not None
    # two pods shared the first one's state; the guard (the first pod group with
    # affinity) changes the validity: the next pod runs its plugins, the two after it
    # share its state with InterPodAffinity's PreFilter and PreScore run again
    assert fast.pre_cycle.counters() == {"pre_cycle_hits": 4, "pre_cycle_misses": 2}
    # the guard's anti-affinity kept later web pods off its node
    assert hosts[2] not in hosts[3:]


def test_a_controller_selecting_the_pods_ends_sharing() -> None:
    events = ["web", "web", "ctrl", "web", "web"]
    fast = FastPath(share_pre_cycle=True)
    assert _run(fast, events) == _run(None, events)
    assert fast.pre_cycle is not None
    # the ReplicaSet changes the cluster objects: the third pod runs its plugins again
    # (PodTopologySpread's system defaults now score it), the fourth shares only its
    # PreFilter (PreScore no longer Skips PodTopologySpread, so it is not shared)
    assert fast.pre_cycle.counters() == {"pre_cycle_hits": 2, "pre_cycle_misses": 2}


def test_pre_filter_next_gives_a_runs_later_pod_what_pre_filter_gives() -> None:
    """A whole-batch run's later pod (one spec, so the same parsed objects; a spread
    constraint, so PodTopologySpread's state carried from the first pod): the state
    ``pre_filter_next`` writes is the one ``pre_filter`` writes with the same carry;
    without a current entry it declines and writes nothing."""
    cache = Cache()
    cache.load(
        [
            make_node(f"n{i}").capacity(cpu="8", memory="16Gi", pods=20).zone(f"z{i % 3}").obj()
            for i in range(6)
        ]
    )
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    spec = (
        make_pod("web-0")
        .req(cpu="1", memory="1Gi")
        .label("app", "web")
        .spread(1, ZONE_LABEL, "DoNotSchedule", {"app": "web"})
        .obj()
    )
    pods = [evolve(spec, meta=evolve(spec.meta, name=f"web-{i}")) for i in range(3)]
    reuse = PreCycleReuse()
    assert not reuse.pre_filter_next(fwk, CycleState(), pods[1], cache.snapshot, CycleState())
    first = CycleState()
    reuse.pre_filter(fwk, first, pods[0], cache.snapshot)  # makes the entry
    first = CycleState()
    reuse.pre_filter(fwk, first, pods[0], cache.snapshot)  # shares it
    assert isinstance(first.get(SPREAD_KEY), PreFilterState)
    want = CycleState()
    reuse.pre_filter(fwk, want, pods[1], cache.snapshot, first)
    got = CycleState()
    assert reuse.pre_filter_next(fwk, got, pods[2], cache.snapshot, first)
    assert got.data_copy().keys() == want.data_copy().keys()
    assert all(got.get(k) is v for k, v in want.data_copy().items())
    assert got.get(SPREAD_KEY) is first.get(SPREAD_KEY)
    assert got.skip_filter_plugins == want.skip_filter_plugins
    assert got.skip_score_plugins == want.skip_score_plugins == set()


class _Unknown:
    """A PreFilter plugin not in KNOWN: its state may read anything."""

    name = "SomeOutOfTreePlugin"

    def pre_filter(self, state: CycleState, pod: object, snapshot: object) -> None:
        return None


def test_a_plugin_joining_a_profiles_list_ends_sharing() -> None:
    """The profile's plugin names are kept per list (``plugin_names``): a list that
    changes is read again, so a plugin outside KNOWN joining PreFilter stops the
    sharing at once (the kept names of the same list would have let it share)."""
    cache = Cache()
    cache.load([make_node("n0").capacity(cpu="8", memory="16Gi", pods=20).obj()])
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    pod = make_pod("web-0").req(cpu="1", memory="1Gi").obj()
    reuse = PreCycleReuse()
    assert plugin_names(fwk.pre_filter) <= KNOWN
    for _ in range(2):
        reuse.pre_filter(fwk, CycleState(), pod, cache.snapshot)
    assert reuse.counters() == {"pre_cycle_hits": 1, "pre_cycle_misses": 1}
    fwk.pre_filter.append(_Unknown())
    assert "SomeOutOfTreePlugin" in plugin_names(fwk.pre_filter)
    reuse.pre_filter(fwk, CycleState(), pod, cache.snapshot)
    assert reuse.counters() == {"pre_cycle_hits": 1, "pre_cycle_misses": 2}
