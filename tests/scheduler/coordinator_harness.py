"""The coordinator harness shared by the scheduler tests (a helper module of the
``tests.scheduler`` package; its fixtures live in ``conftest.py``).

``Harness`` drives the loop by hand: ``cycle()`` pops one pod and runs ``schedule_one``;
``settle()`` waits for the binding executor, applies its outcomes and reads the watch, so
the order of events is the test's, not a timer's. The queue's clock is a FakeClock, so a
pod in backoff stays there until the test steps the clock.

Out-of-tree test plugins are defined here and configured by import path
(``tests.scheduler.coordinator_harness:Class``), as a user's plugin would be.
"""

from __future__ import annotations

from typing import Any

import redis

from cluster_sched.api.objects import Pod
from cluster_sched.clock import FakeClock
from cluster_sched.config.load import parse_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.plugins import names
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.assembly import new_scheduler
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod

T0 = 1_700_000_000.0
PROFILE = "default-scheduler"
#: The cross-node plugins, disabled in the mechanics tests so that they test the loop.
CROSS_NODE = [names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY, names.DEFAULT_PREEMPTION]
#: Import path of the test plugins below, as a user's configuration names its plugins.
PLUGINS = __name__


# --------------------------------------------------------------------- test plugins


class RejectingReserve:
    """Reserve rejects pods labelled ``reserve=reject``; records every unreserve."""

    def __init__(self, args: Any, handle: Any) -> None:
        self.reserved: list[tuple[str, str]] = []
        self.unreserved: list[tuple[str, str]] = []

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if pod.labels.get("reserve") == "reject":
            return Status(Code.UNSCHEDULABLE, ("reserve said no",))
        self.reserved.append((pod.key, node_name))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.unreserved.append((pod.key, node_name))


class GatePermit:
    """Permit: ``permit=reject`` rejects, ``permit=wait`` waits (a minute), else allows."""

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        verdict = pod.labels.get("permit")
        if verdict == "reject":
            return Status(Code.UNSCHEDULABLE, ("permit said no",)), 0.0
        if verdict == "wait":
            return Status(Code.WAIT), 60.0
        return SUCCESS, 0.0


class RejectingPreBind:
    """PreBind fails pods labelled ``prebind=fail`` (a binding-cycle failure)."""

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if pod.labels.get("prebind") == "fail":
            return Status(Code.ERROR, ("volume not ready",))
        return SUCCESS


RESERVE = f"{PLUGINS}:RejectingReserve"
PERMIT = f"{PLUGINS}:GatePermit"
PREBIND = f"{PLUGINS}:RejectingPreBind"


def config(*extra: str, disable_cross_node: bool = True) -> SchedulerConfiguration:
    multi: dict[str, Any] = {}
    if extra:
        multi["enabled"] = [{"name": n} for n in extra]
    if disable_cross_node:
        multi["disabled"] = [{"name": n} for n in CROSS_NODE]
    return parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": PROFILE, "plugins": {"multiPoint": multi}}],
        },
        "<test>",
    )


# --------------------------------------------------------------------- harness


class Harness:
    def __init__(
        self,
        store: Store,
        client: redis.Redis,
        cfg: SchedulerConfiguration,
        binding_executor: Any = None,
        patience: float = 10.0,
        features: Any = None,
    ) -> None:
        self.store = store
        self.clock = FakeClock(T0)
        self.coord = new_scheduler(
            store,
            client,
            cfg,
            clock=self.clock,
            seed=7,
            binding_executor=binding_executor,
            features=features,
        )
        #: liveness bound for bindings to finish (never a timing assertion)
        self.patience = patience
        self.started = False

    @property
    def queue(self) -> Any:
        return self.coord.queue

    @property
    def cache(self) -> Any:
        return self.coord.cache

    def plugin(self, name: str) -> Any:
        return self.coord.frameworks[PROFILE].plugins[name]

    def apply(self, *objs: Any) -> None:
        self.store.apply_many([o.manifest() if hasattr(o, "manifest") else o for o in objs])
        if self.started:
            self.coord.poll_informer()

    def start(self) -> None:
        self.coord.start()
        self.started = True

    def cycle(self) -> QueuedPodInfo:
        """Pop the head of activeQ and run its scheduling cycle."""
        info = self.queue.pop(timeout=2.0)
        assert info is not None, "nothing to pop"
        self.coord.schedule_one(info, self.queue.last_pop_cycle)
        self.coord.flush_done()
        return info

    def settle(self) -> None:
        """Every submitted binding finished, its outcome applied, the watch read."""
        binder = self.coord.binder
        assert binder.wait_idle(self.patience), "bindings did not finish"
        self.coord.process_binding_outcomes()
        self.coord.poll_informer()
        self.coord.flush_done()

    def node_of(self, key: str) -> str | None:
        doc = self.store.get("Pod", key)
        assert doc is not None
        return (doc.get("spec") or {}).get("nodeName")

    def condition(self, key: str) -> dict[str, Any] | None:
        doc = self.store.get("Pod", key) or {}
        for cond in (doc.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled":
                return dict(cond)
        return None

    def requested_cpu(self, node: str) -> int:
        table = self.cache.sink.table
        return int(table.requested[table.resource_col("cpu"), table.index[node]])

    def close(self) -> None:
        self.coord.close()


def node(name: str, cpu: str = "4", pods: int = 110) -> Any:
    return make_node(name).capacity(cpu=cpu, memory="32Gi", pods=pods)


def pod(name: str, cpu: str = "1") -> Any:
    return make_pod(name).req(cpu=cpu, memory="1Gi")
