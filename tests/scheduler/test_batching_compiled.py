"""OpportunisticBatching on the compiled path (issue 26, finding 4): the one-node checks
of a hint (the last chosen node, the hinted node) are answered from the pod shape's
columns and the kernel's NodeResourcesFit, or a whole run of hinted pods by one kernel
call (``whole_batch_hints``), and the decisions are those of the plugins."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import parse_config
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.round_driver import LIST_DEFAULTING, PROFILE

N = 16
_runs = itertools.count()


def _docs(tainted: int) -> list[dict[str, Any]]:
    """N nodes with room for one 1-cpu pod each (``tainted`` of them NoSchedule, so the
    shape's verdict column rejects some hints' last nodes too); N identical pods."""
    nodes = []
    for i in range(N):
        b = make_node(f"n{i:02d}").capacity(cpu=f"{1000 + 50 * i}m", memory="4Gi", pods=110)
        if i < tainted:
            b = b.taint("dedicated", "x", "NoSchedule")
        nodes.append(b.manifest())
    pods = [make_pod(f"p{k:02d}").req(cpu="1", memory="1Gi").manifest() for k in range(N)]
    return nodes + pods


def _run(
    client: redis.Redis, compiled: bool, tainted: int, whole: bool = False
) -> tuple[dict[str, str], dict[str, int], dict[str, int]]:
    prefix = f"{{obc{next(_runs)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(_docs(tainted))
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        parse_config(LIST_DEFAULTING, "<test>"),
        options=ExecutorOptions("local", compiled=compiled),
        clock=clock,
        seed=5,
        prefix=prefix,
        batch_size=4,
    )
    coord.whole_batch = whole
    try:
        coord.start()
        while coord.step(pop_timeout=0):
            pass
        assert coord.binder.wait_idle(30.0)
        coord.process_binding_outcomes()
        placed = {d["metadata"]["name"]: d["spec"].get("nodeName", "") for d in store.list("Pod")}
        batch = coord.algorithm.batches[PROFILE]
        fast = coord.algorithm.fast
        counters = fast.counters() if fast is not None else {}
        return placed, dict(batch.attempts), counters
    finally:
        coord.close()


@pytest.mark.parametrize("whole", [False, True], ids=["per-pod", "whole-batch"])
@pytest.mark.parametrize("tainted", [0, 3], ids=["plain", "tainted"])
def test_hints_are_checked_by_the_compiled_path_with_the_plugins_answers(
    redis_client: redis.Redis, tainted: int, whole: bool
) -> None:
    numpy_placed, numpy_attempts, _ = _run(redis_client, False, tainted)
    placed, attempts, counters = _run(redis_client, True, tainted, whole)
    assert placed == numpy_placed
    assert attempts == numpy_attempts
    hinted = attempts.get("hint_used", 0)
    assert hinted >= N - tainted - 2, attempts
    # per pod: each hinted pod's last-node check and its hint from the shape's columns;
    # in a run: each pod one answer of the shape's columns
    assert counters["shape_hits"] >= (hinted if whole else 2 * hinted), counters
