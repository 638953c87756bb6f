"""Whole batches of pods with pod affinity and anti-affinity (``kernels.affinity``: the
required terms' counts carried by the kernel) take the serial decisions: with runs on
and off, the same placements, attempts per pod and FailedScheduling events, on random
clusters (zones, racks, some nodes without them, windows smaller than the cluster) and
random terms (required and preferred, affinity and anti-affinity, zone, hostname or
rack, the pods' own app or another, their namespace or another: preferred ones and
hard-weighted self-affinity decline), pods already bound that the terms count, pods
that fit nowhere, several shapes interleaved; and such runs do happen."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.plugins.names import INTER_POD_AFFINITY as IPA
from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.testing.builders import HOSTNAME_LABEL, ZONE_LABEL, make_node, make_pod
from tests.scheduler.affinity_specs import (
    AffinitySpec,
    affinity_builder,
    affinity_specs,
    node_builders,
)
from tests.scheduler.round_driver import run_outcome

ZONE = ZONE_LABEL


def _docs(seed: int, specs: list[AffinitySpec]) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    n_nodes = rng.choice([rng.randint(3, 30), rng.randint(101, 160)])
    docs = [b.manifest() for b in node_builders(n_nodes, seed, pods=rng.choice([4, 110]))]
    for j in range(rng.randint(0, 10)):  # already bound: the terms count them
        node = f"n{rng.randrange(n_nodes)}"
        docs.append(affinity_builder(f"b{j:03d}", rng.choice(specs), node).manifest())
    k = 0
    for _ in range(rng.randint(2, 6)):
        spec = rng.choice(specs)
        for _ in range(rng.randint(1, 40)):
            docs.append(affinity_builder(f"p{k:03d}", spec).manifest())
            k += 1
    return docs


def _outcome(
    client: redis.Redis,
    docs: list[dict[str, Any]],
    seed: int,
    on: bool,
    batch: int,
    probe: dict[str, int] | None = None,
    then: tuple[list[str], list[dict[str, Any]]] | None = None,
) -> tuple[dict[str, Any], int]:
    """Decisions and runs; ``probe`` (if given) gets the pods the runs handled and the
    runs of InterPodAffinity's PreFilter; ``then``: see ``run_outcome``."""
    got = run_outcome(client, docs, seed, on, batch, counted=IPA, then=then)
    if probe is not None:
        probe.update(handled=got.handled, pre_filters=got.pre_filters)
    return got.decisions, got.runs


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Watch events read only between rounds, never inside a batch."""
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**16),
    specs=st.lists(affinity_specs, min_size=1, max_size=3),
    batch=st.sampled_from([8, 64]),
    gate=st.booleans(),
)
def test_affinity_runs_on_and_off_take_the_same_decisions(
    redis_client: redis.Redis,
    settled: None,
    seed: int,
    specs: list[AffinitySpec],
    batch: int,
    gate: bool,
) -> None:
    """``gate``: OpportunisticBatching on (pods without terms sign; its counters are
    among the decisions)."""
    docs = _docs(seed, specs)
    off = run_outcome(redis_client, docs, seed, False, batch, gate=gate)
    on = run_outcome(redis_client, docs, seed, True, batch, gate=gate)
    assert off.runs == 0
    assert on.decisions == off.decisions


def _anti_deployment(pods: int) -> list[dict[str, Any]]:
    """scheduler_perf's SchedulingPodAntiAffinity in small: pods repelling each other by
    hostname (each needs a node of its own) on 120 nodes, 10 of them bound first."""
    docs = [
        make_node(f"n{i:03d}").capacity(cpu="4", memory="8Gi", pods=110).manifest()
        for i in range(120)
    ]

    def pod(name: str, node: str | None = None) -> dict[str, Any]:
        b = make_pod(name).req(cpu="100m", memory="64Mi").label("color", "green")
        b = b.pod_anti_affinity(HOSTNAME_LABEL, {"color": "green"})
        return (b.node(node) if node else b).manifest()

    docs += [pod(f"b{i:03d}", f"n{i * 7 % 120:03d}") for i in range(10)]
    docs += [pod(f"p{i:03d}") for i in range(pods)]
    return docs


def test_anti_affinity_runs_happen_and_match(redis_client: redis.Redis, settled: None) -> None:
    docs = _anti_deployment(130)
    off, none = _outcome(redis_client, docs, 3, False, 64)
    on, runs = _outcome(redis_client, docs, 3, True, 64)
    assert none == 0 and runs >= 2
    assert on == off
    placed = [v for k, v in on.items() if k.startswith("p") and v]
    assert len(placed) == 110 and len(set(placed)) == 110  # one node each, 10 taken


def test_pods_after_a_runs_first_take_its_affinity_state_without_pre_filter(
    redis_client: redis.Redis, settled: None
) -> None:
    """All 100 pods placed on their first attempt: with runs off, InterPodAffinity's
    PreFilter runs once per pod; with runs on, once per pod outside a run and once per
    run (its first pod's state is the later pods')."""
    docs = _anti_deployment(100)
    off_probe: dict[str, int] = {}
    on_probe: dict[str, int] = {}
    off, _ = _outcome(redis_client, docs, 7, False, 64, off_probe)
    on, runs = _outcome(redis_client, docs, 7, True, 64, on_probe)
    assert on == off
    assert all(on[f"attempts:default/p{i:03d}"] == 1 for i in range(100))
    assert off_probe["pre_filters"] == 100
    assert runs >= 1 and on_probe["handled"] >= 90
    assert on_probe["pre_filters"] == 100 - on_probe["handled"] + runs


@pytest.mark.parametrize("term", ["required-affinity", "preferred-anti", "preferred-affinity"])
def test_pods_their_own_terms_score_take_the_ordinary_cycle(
    redis_client: redis.Redis, settled: None, term: str
) -> None:
    """Terms that score the next pod once a pod of the spec is placed: required zone
    affinity to their own label (existing pods' required terms score by
    hardPodAffinityWeight 1), or a preferred hostname anti-affinity / zone affinity to
    it. The first pod's PreScore Skips (nothing placed yet), the later ones' does not:
    no run starts, and the decisions are the same."""
    docs = [
        make_node(f"n{i:02d}").capacity(cpu="4", memory="8Gi", pods=110).zone(f"z{i % 3}")
        for i in range(12)
    ]
    manifests = [b.manifest() for b in docs]
    for i in range(30):
        b = make_pod(f"p{i:03d}").req(cpu="100m").label("foo", "")
        if term == "required-affinity":
            b = b.pod_affinity(ZONE, {"foo": ""})
        elif term == "preferred-anti":
            b = b.pod_anti_affinity(HOSTNAME_LABEL, {"foo": ""}, weight=50)
        else:
            b = b.pod_affinity(ZONE, {"foo": ""}, weight=50)
        manifests.append(b.manifest())
    # one pod first, deleted once placed: the shape's shared state stays, the next
    # batch's first pod Skips PreScore (nothing placed matches), the later ones do not
    then = (["default/p000"], manifests[13:])
    off, _ = _outcome(redis_client, manifests[:13], 5, False, 64, then=then)
    on, runs = _outcome(redis_client, manifests[:13], 5, True, 64, then=then)
    assert on == off
    assert runs == 0
    hosts = [v for k, v in on.items() if k.startswith("p") and v]
    assert len(hosts) == 29
    if term == "preferred-anti":  # the score spreads them: one node each while it can
        assert len(set(hosts)) == 12
    else:  # affinity: all in the first pod's zone
        assert len({int(v[1:]) % 3 for v in hosts}) == 1
