"""Clusters under preemption pressure by construction, for the exactness tests at scale.

A few hundred nodes (so the next-start-node rotation moves every window and, past 256
nodes, the compiled path's masked head runs out) filled by low-priority pods first:

- ``initial``: the nodes, low-priority pods already bound on most of them (some holding
  host port 8080), and low-priority pending pods that fit in the slack (a share with
  host port 8080, so NodePorts takes the compiled path's general masked branch; node
  selectors, tolerations, ScheduleAnyway zone spread);
- ``arrivals``: high-priority pods applied once the first ones are placed, most bigger
  than any node's free room (each needs a preemption), some asking for the port the
  bound pods hold, some with hostname anti-affinity, a few that fit nowhere even after
  preemption (FailedScheduling every attempt) and a few that may not preempt;
- ``departures``: bound low-priority pods that finish once the arrivals were handled:
  their deletions move the pods left unschedulable (to backoffQ if their backoff is
  still running, else activeQ), which are then retried.

Everything is drawn from one ``random.Random``: a seed names a workload.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from cluster_sched.testing.node_builder import make_node
from cluster_sched.testing.pod_builder import make_pod

__all__ = ["PressureWorkload", "pressure_workload"]

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")
PORT = 8080


@dataclass(frozen=True, slots=True)
class PressureWorkload:
    """Manifests applied before scheduling starts, those applied once it drained, and
    the pods deleted once those drained in turn."""

    initial: list[dict[str, Any]]
    arrivals: list[dict[str, Any]]
    departures: list[str]

    def phases(self) -> list[tuple[list[dict[str, Any]], list[str]]]:
        """(manifests to apply, pod keys to delete), one entry per phase."""
        return [(self.initial, []), (self.arrivals, []), ([], self.departures)]


def pressure_workload(
    seed: int,
    n_nodes: int = 300,
    low: int | None = None,
    high: int | None = None,
    fill: tuple[int, ...] = (60, 75, 90, 100),
    ports: float = 0.2,
    taints: float = 0.1,
) -> PressureWorkload:
    """``n_nodes`` nodes, filled to one of ``fill`` percent of their cpu; ``low``
    low-priority pending pods (default n/6), ``high`` high-priority arrivals (default
    n/10) and as many departures; ``ports``: the share of nodes where a bound pod holds
    host port 8080; ``taints``: the share of tainted nodes. See the module docstring.
    Rotation needs at least 100 nodes that fit a low pod: lower ``fill`` on small
    tables."""
    rng = random.Random(seed)
    low = n_nodes // 6 if low is None else low
    high = n_nodes // 10 if high is None else high
    initial: list[dict[str, Any]] = []
    bound: list[dict[str, Any]] = []
    for i in range(n_nodes):
        name = f"n{i:03d}"
        cpu = rng.choice([4000, 8000])
        b = make_node(name).capacity(cpu=f"{cpu}m", memory="32Gi", pods=110)
        b = b.zone(f"z{i % 3}").label("disk", rng.choice(["ssd", "hdd"]))
        if rng.random() < taints:
            b = b.taint("dedicated", "infra")
        initial.append(b.manifest())
        # low-priority pods fill 60-100% of the node's cpu
        target = cpu * rng.choice(fill) // 100
        used = 0
        j = 0
        while used + 1000 <= target:
            req = min(rng.choice([1000, 1500, 2000]), target - used)
            p = make_pod(f"{name}-old{j}").req(cpu=f"{req}m", memory="1Gi")
            p = p.priority(rng.choice([0, 5])).label("app", rng.choice(APPS))
            if j == 0 and rng.random() < ports:
                p = p.host_port(PORT)
            bound.append(p.node(name).manifest())
            used += req
            j += 1
    initial += bound
    initial += [_low(rng, k) for k in range(low)]
    arrivals = [_high(rng, k) for k in range(high)]
    gone = rng.sample(bound, min(high, len(bound)))
    departures = [f"default/{d['metadata']['name']}" for d in gone]
    return PressureWorkload(initial, arrivals, departures)


def _low(rng: random.Random, k: int) -> dict[str, Any]:
    app = rng.choice(APPS)
    b = make_pod(f"low{k:03d}").label("app", app).priority(rng.choice([0, 10]))
    b = b.req(cpu=f"{rng.choice([250, 500, 1000])}m", memory=f"{rng.choice([256, 512])}Mi")
    roll = rng.random()
    if roll < 0.4:
        b = b.host_port(PORT)
    elif roll < 0.55:
        b = b.node_selector("disk", "ssd")
    elif roll < 0.65:
        b = b.tolerate("dedicated", value="infra", effect="NoSchedule")
    elif roll < 0.75:
        b = b.spread(1, ZONE, "ScheduleAnyway", {"app": app})
    return b.manifest()


def _high(rng: random.Random, k: int) -> dict[str, Any]:
    app = rng.choice(APPS)
    b = make_pod(f"high{k:03d}").label("app", app).priority(rng.choice([1000, 2000]))
    roll = rng.random()
    cpu = rng.choice([3000, 3500, 4500, 6000])
    if roll < 0.06:
        cpu = 16000  # fits no node, even emptied
    b = b.req(cpu=f"{cpu}m", memory="1Gi")
    if 0.06 <= roll < 0.3:
        b = b.host_port(PORT)
    elif 0.3 <= roll < 0.45:
        b = b.pod_anti_affinity(HOST, {"app": app})
    elif 0.45 <= roll < 0.52:
        b = b.preemption_policy("Never")
    elif 0.52 <= roll < 0.65:
        b = b.node_selector("disk", "ssd")
    return b.manifest()
