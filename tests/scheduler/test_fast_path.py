"""The compiled path's contract: it answers only inside the kernel's domain and declines
(the numpy path runs, with the same state) everywhere else."""

from __future__ import annotations

import random

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.kernels import VALUE_LIMIT
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import make_node, make_pod


def _attempt(node_memory: str, pod_memory: str, fast: FastPath) -> tuple[str | None, int]:
    cache = Cache()
    cache.load(
        [make_node(f"n{i}").capacity(cpu="8", memory=node_memory, pods=10).obj() for i in range(4)]
    )
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    pod = make_pod("p").req(cpu="1", memory=pod_memory).obj()
    sched = Scheduler(0, random.Random(3), fast=fast)
    table = cache.sink.table  # type: ignore[attr-defined]
    result = sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
    return result.suggested_host, sched.next_start_node_index


class CountingFastPath(FastPath):
    def __init__(self) -> None:
        super().__init__()
        self.answered = 0

    def find_feasible(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        found = super().find_feasible(*args, **kwargs)
        self.answered += found is not None
        return found


def test_inside_the_domain_the_kernel_answers_as_numpy_does() -> None:
    fast = CountingFastPath()
    assert _attempt("32Gi", "1Gi", fast) == _attempt("32Gi", "1Gi", None)  # type: ignore[arg-type]
    assert fast.answered == 1


def test_past_the_domain_it_declines_and_numpy_answers() -> None:
    huge = str(VALUE_LIMIT * 4)  # bytes: a node whose memory x 100 leaves int64
    fast = CountingFastPath()
    assert _attempt(huge, "1Gi", fast) == _attempt(huge, "1Gi", None)  # type: ignore[arg-type]
    assert fast.answered == 0
