"""Whole batches of pods with topology spread constraints (``kernels.spread``: the
DoNotSchedule counts carried by the kernel) take the serial decisions: with runs on and
off, the same placements, attempts per pod and FailedScheduling events, on random
clusters (zones, some nodes without one, taints, a disk label, windows smaller than the
cluster), random constraints (maxSkew, zone or hostname, minDomains, node inclusion
policies, matchLabelKeys, some ScheduleAnyway: those decline), pods already bound that
the selectors count, pods that fit nowhere, several shapes interleaved; and such runs
do happen."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.config.load import parse_config
from cluster_sched.plugins.names import POD_TOPOLOGY_SPREAD as SPREAD
from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.testing.builders import HOSTNAME_LABEL, ZONE_LABEL, make_node, make_pod
from tests.scheduler.round_driver import run_outcome

ZONES = ("z0", "z1", "z2", "z3", None)


def _spread_pod(name: str, rng: random.Random) -> Any:
    """A builder for one random shape's pods (the caller names them)."""
    app, ver = rng.choice("ab"), rng.choice(("v1", "v2"))
    cpu = rng.choice(["100m", "100m", "500m", "1", "64"])  # the last fits no node

    def build(pod_name: str, node: str | None = None) -> dict[str, Any]:
        b = make_pod(pod_name).req(cpu=cpu, memory="256Mi").label("app", app).label("ver", ver)
        for key, action, skew, min_domains, aff, taints, mlk in constraints:
            b = b.spread(
                skew,
                key,
                action,
                {"app": app},
                min_domains=min_domains,
                node_affinity_policy=aff,
                node_taints_policy=taints,
                match_label_keys=["ver"] if mlk else None,
            )
        if ssd_only:
            b = b.node_selector("disk", "ssd")
        if tolerates:
            b = b.tolerate("dedicated", value="x")
        if node is not None:
            b = b.node(node)
        return b.manifest()

    constraints = []
    for key in rng.sample([ZONE_LABEL, HOSTNAME_LABEL], rng.choice([1, 1, 2])):
        action = rng.choice(["DoNotSchedule"] * 4 + ["ScheduleAnyway"])
        constraints.append(
            (
                key,
                action,
                rng.randint(1, 3),
                rng.choice([None, None, 1, 2, 4]) if action == "DoNotSchedule" else None,
                rng.choice([None, "Honor", "Ignore"]),
                rng.choice([None, "Honor", "Ignore"]),
                rng.random() < 0.3,
            )
        )
    ssd_only, tolerates = rng.random() < 0.2, rng.random() < 0.5
    del name
    return build


def _docs(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    docs = []
    n_nodes = rng.choice([rng.randint(3, 30), rng.randint(101, 180)])
    for i in range(n_nodes):
        b = make_node(f"n{i:03d}").capacity(
            cpu=rng.choice(["2", "4", "4"]), memory="8Gi", pods=rng.choice([4, 110])
        )
        zone = rng.choice(ZONES)
        if zone is not None:
            b = b.zone(zone)
        if rng.random() < 0.15:
            b = b.taint("dedicated", "x")
        if rng.random() < 0.5:
            b = b.label("disk", "ssd")
        docs.append(b.manifest())
    shapes = [_spread_pod(f"s{j}", rng) for j in range(rng.randint(1, 3))]
    for j in range(rng.randint(0, 12)):  # already bound: the selectors count them
        docs.append(rng.choice(shapes)(f"b{j:03d}", f"n{rng.randrange(n_nodes):03d}"))
    k = 0
    for _ in range(rng.randint(2, 6)):
        shape = rng.choice(shapes)
        for _ in range(rng.randint(1, 40)):
            docs.append(shape(f"p{k:03d}"))
            k += 1
    return docs


def _outcome(
    client: redis.Redis,
    docs: list[dict[str, Any]],
    seed: int,
    on: bool,
    gate: bool,
    batch: int,
    config: Any = None,
    probe: dict[str, int] | None = None,
) -> tuple[dict[str, Any], int]:
    """Decisions and runs; ``probe`` (if given) gets the pods the runs handled and the
    runs of PodTopologySpread's PreFilter."""
    got = run_outcome(client, docs, seed, on, batch, gate=gate, config=config, counted=SPREAD)
    if probe is not None:
        probe.update(handled=got.handled, spread_pre_filters=got.pre_filters)
    return got.decisions, got.runs


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Watch events read only between rounds, never inside a batch."""
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), gate=st.booleans(), batch=st.sampled_from([8, 64]))
def test_spread_runs_on_and_off_take_the_same_decisions(
    redis_client: redis.Redis, settled: None, seed: int, gate: bool, batch: int
) -> None:
    docs = _docs(seed)
    off, none = _outcome(redis_client, docs, seed, False, gate, batch)
    on, _ = _outcome(redis_client, docs, seed, True, gate, batch)
    assert none == 0
    assert on == off


def _deployment() -> list[dict[str, Any]]:
    """scheduler_perf's TopologySpreading in small: three zones, plain pods bound, then
    one Deployment's pods spread over zones (DoNotSchedule) that fill the cluster."""
    docs = [
        make_node(f"n{i:03d}")
        .capacity(cpu="1", memory="8Gi", pods=110)
        .zone(f"moon-{i % 3}")
        .manifest()
        for i in range(150)
    ]
    docs += [
        make_pod(f"b{i:03d}").req(cpu="100m").node(f"n{i % 7:03d}").manifest() for i in range(20)
    ]
    for i in range(1600):  # more than fit (10 per node): the last ones fail
        b = make_pod(f"p{i:04d}").req(cpu="100m", memory="64Mi").label("color", "blue")
        docs.append(b.spread(5, ZONE_LABEL, "DoNotSchedule", {"color": "blue"}).manifest())
    return docs


def test_spread_runs_happen_and_match(redis_client: redis.Redis, settled: None) -> None:
    docs = _deployment()
    off, none = _outcome(redis_client, docs, 3, False, False, 64)
    on, runs = _outcome(redis_client, docs, 3, True, False, 64)
    assert none == 0 and runs > 10
    assert on == off
    placed = [v for k, v in on.items() if k.startswith("p") and v]
    assert len(placed) == 1480  # 150 nodes x 10 pods, minus the 20 bound ones' room


def test_pods_after_a_runs_first_take_its_spread_state_without_pre_filter(
    redis_client: redis.Redis, settled: None
) -> None:
    """One Deployment's spread pods, all placed on their first attempt: with runs off,
    PodTopologySpread's PreFilter runs once per pod; with runs on, once per pod outside a
    run and once per run (its first pod's state is the later pods')."""
    docs = [
        make_node(f"n{i:02d}")
        .capacity(cpu="4", memory="8Gi", pods=110)
        .zone(f"z{i % 3}")
        .manifest()
        for i in range(30)
    ]
    for i in range(40):
        b = make_pod(f"p{i:03d}").req(cpu="100m").label("app", "a")
        docs.append(b.spread(1, ZONE_LABEL, "DoNotSchedule", {"app": "a"}).manifest())
    off_probe: dict[str, int] = {}
    on_probe: dict[str, int] = {}
    off, _ = _outcome(redis_client, docs, 7, False, False, 64, probe=off_probe)
    on, runs = _outcome(redis_client, docs, 7, True, False, 64, probe=on_probe)
    assert on == off
    assert all(on[f"attempts:default/p{i:03d}"] == 1 for i in range(40))
    assert off_probe["spread_pre_filters"] == 40
    assert runs >= 1 and on_probe["handled"] >= 30
    assert on_probe["spread_pre_filters"] == 40 - on_probe["handled"] + runs


#: List defaulting with a DoNotSchedule zone constraint: pods without constraints of
#: their own spread by their controller's selector
LIST_DO_NOT_SCHEDULE = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {
                    "name": "PodTopologySpread",
                    "args": {
                        "defaultingType": "List",
                        "defaultConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": ZONE_LABEL,
                                "whenUnsatisfiable": "DoNotSchedule",
                            }
                        ],
                    },
                }
            ],
        }
    ],
}


def _replica_set(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
    }


def test_pods_of_one_spec_with_other_owners_spread_by_their_own_selector(
    redis_client: redis.Redis, settled: None
) -> None:
    """Same spec and labels, two ReplicaSets (rs-a counts every app=a pod, rs-b only the
    tier=x ones): the default constraints differ by owner, so a run holds one owner's
    pods (the kernel carries one set of counts)."""
    docs = [_replica_set("rs-a", {"app": "a"}), _replica_set("rs-b", {"app": "a", "tier": "x"})]
    docs += [
        make_node(f"n{i:02d}")
        .capacity(cpu="4", memory="8Gi", pods=110)
        .zone(f"z{i % 3}")
        .manifest()
        for i in range(12)
    ]
    # app=a pods without tier=x in z0: rs-a's pods avoid z0, rs-b's do not see them
    docs += [make_pod(f"b{i}").label("app", "a").node("n00").manifest() for i in range(4)]
    k = 0
    for owner in ("rs-a", "rs-b", "rs-a", "rs-b"):
        for _ in range(9):
            b = make_pod(f"p{k:03d}").req(cpu="100m").label("app", "a").label("tier", "x")
            docs.append(b.owner("ReplicaSet", owner).manifest())
            k += 1
    config = parse_config(LIST_DO_NOT_SCHEDULE, "<test>")
    off, none = _outcome(redis_client, docs, 5, False, False, 64, config)
    on, runs = _outcome(redis_client, docs, 5, True, False, 64, config)
    assert on == off
    assert none == 0 and runs >= 4
