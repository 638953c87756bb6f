"""The coordinator's pop grows while whole batches take every pod (``GROWTH``) and
comes back to ``batch_size`` after any other batch; the decisions stay those of a
serial loop (batch size 1)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config
from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.round_driver import decisions, drive_rounds

_prefixes = itertools.count()


def _docs() -> list[dict[str, Any]]:
    docs = [
        make_node(f"n{i:02d}").capacity(cpu="4", memory="8Gi", pods=110).manifest()
        for i in range(12)
    ]
    # 60 pods that fit, then 6 that fit nowhere (each fails on its own cycle), then 60
    docs += [make_pod(f"a{k:03d}").req(cpu="100m").manifest() for k in range(60)]
    docs += [make_pod(f"b{k:03d}").req(cpu="64").manifest() for k in range(6)]
    docs += [make_pod(f"c{k:03d}").req(cpu="100m").manifest() for k in range(60)]
    return docs


def _run(client: redis.Redis, batch: int, on: bool) -> tuple[dict[str, Any], list[int]]:
    prefix = f"{{pg{next(_prefixes)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(_docs())
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        load_config(None),
        options=ExecutorOptions("local"),
        clock=clock,
        seed=7,
        prefix=prefix,
        batch_size=batch,
    )
    coord.whole_batch = on
    sizes: list[int] = []
    real = coord.queue.pop_many

    def recording(max_pods: int, *args: Any, **kwargs: Any) -> Any:
        popped = real(max_pods, *args, **kwargs)
        if popped:
            sizes.append(max_pods)
        return popped

    coord.queue.pop_many = recording  # type: ignore[method-assign]
    try:
        drive_rounds(coord, clock)
        return decisions(coord, store), sizes
    finally:
        coord.close()


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)


def test_pops_grow_while_batches_go_whole_and_decisions_stay_serial(
    redis_client: redis.Redis, settled: None
) -> None:
    serial, ones = _run(redis_client, 1, True)
    grown, sizes = _run(redis_client, 4, True)
    assert set(ones) == {1}
    assert grown == serial
    assert max(sizes) == coordinator_module.GROWTH * 4
    # doubling from batch_size while every pod goes whole (the very first pod takes its
    # own cycle: its shape is new)
    assert [4, 8, 16] in [sizes[i : i + 3] for i in range(len(sizes))]
    # a batch with a pod on its own cycle (the ones that fit nowhere) starts over
    assert any(b == 4 and a > 4 for a, b in itertools.pairwise(sizes))


def test_without_whole_batches_pops_keep_batch_size(
    redis_client: redis.Redis, settled: None
) -> None:
    _, sizes = _run(redis_client, 4, False)
    assert set(sizes) == {4}
