"""Issue 22: traced, the Ray shards still get the batched protocol (the reduced protocol
through the compiled path), with the placements of the untraced run, and each batch
shows in the trace: a ``shardBatch`` span per batch sent, a ``shardCall`` child per
shard and chunk with its bytes, and a link from each pod that read a batch's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.shards.batch_trace import ATTR_UNREAD
from cluster_sched.telemetry import spans as S
from cluster_sched.telemetry.tracing import setup_tracing
from tests.scheduler.shards.shard_runs import reducible_workload, run_outcome
from tests.telemetry.trace_files import attrs_of, spans_in


def _untraced_and_traced(
    redis_client: redis.Redis, docs: Any, options: ExecutorOptions, tmp_path: Path
) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """The workload run untraced, then traced to a file: the untraced outcome, the traced
    run's counters and its spans, once the traced placements and FailedScheduling counts
    are checked equal to the untraced ones."""
    untraced = run_outcome(redis_client, docs, options, 64)
    path = tmp_path / "spans.jsonl"
    tracing = setup_tracing(None, trace_file=str(path))
    try:
        placements, counts, counters = run_outcome(redis_client, docs, options, 64, tracing=tracing)
    finally:
        tracing.shutdown()
    assert (placements, counts) == untraced[:2]
    return untraced, counters, spans_in(path)


@pytest.mark.parametrize("relay", ["off", "on"])
def test_traced_ray_shards_batch_as_untraced_and_show_each_batch(
    ray_session: None, redis_client: redis.Redis, redis_url: str, tmp_path: Path, relay: str
) -> None:
    """Through the shard relay too: one call per chunk, but each shard's part of it is
    still a ``shardCall`` with that shard's bytes."""
    docs = reducible_workload(11, n_nodes=120, n_pods=60)
    options = ExecutorOptions(
        "ray", shards=2, redis_url=redis_url, shard_dispatch="shards", shard_relay=relay
    )
    _, counters, spans = _untraced_and_traced(redis_client, docs, options, tmp_path)
    assert counters["reduced_attempts"] > 0 and counters["reduced_batches"] > 0, counters
    assert (counters["reduced_relayed_payloads"] > 0) == (relay == "on"), counters

    batches = {s["spanId"]: s for s in spans if s["name"] == S.SHARD_BATCH}
    assert len(batches) == counters["reduced_batches"]
    assert all("parentSpanId" not in s or not s["parentSpanId"] for s in batches.values())
    batch_attrs = [attrs_of(s) for s in batches.values()]
    assert all(a[S.ATTR_SHARD_COUNT] == 2 and a[S.ATTR_BATCH_PODS] > 0 for a in batch_attrs)
    assert sum(a[S.ATTR_BATCH_CHUNKS] for a in batch_attrs) == counters["reduced_payloads"]

    calls = [s for s in spans if s["name"] == S.SHARD_CALL and s.get("parentSpanId") in batches]
    assert len(calls) == counters["reduced_payloads"] * 2
    per_batch: dict[str, set[int]] = {}
    for call in calls:
        a = attrs_of(call)
        assert a[S.ATTR_PHASE] == "reduce" and a[S.ATTR_BYTES_SENT] > 0
        assert (S.ATTR_BYTES_RECEIVED in a) != bool(a.get(ATTR_UNREAD)), a
        per_batch.setdefault(call["parentSpanId"], set()).add(a[S.ATTR_SHARD_ID])
    assert len(per_batch) == len(batches)
    assert all(shards == {0, 1} for shards in per_batch.values())
    assert any(S.ATTR_BYTES_RECEIVED in attrs_of(c) for c in calls)

    # every attempt the shards' reductions answered links to the batch it read
    linked = [s for s in spans for link in s.get("links", []) if link["spanId"] in batches]
    assert len(linked) == counters["reduced_attempts"]


def test_traced_prefetch_without_the_compiled_path_shows_each_batch(
    ray_session: None, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Plugin by plugin (``compiled=False``) the shards answer each popped batch's first
    Filter questions ahead (``prefetch``): traced as untraced, each batch a span whose
    calls cover both shards, and each pod that used the prefetched answer links to it."""
    docs = reducible_workload(11, n_nodes=120, n_pods=60)
    options = ExecutorOptions("ray", shards=2, redis_url=redis_url, compiled=False)
    untraced, counters, spans = _untraced_and_traced(redis_client, docs, options, tmp_path)
    assert counters["prefetch_hits"] == untraced[2]["prefetch_hits"] > 0, counters

    batches = {s["spanId"]: s for s in spans if s["name"] == S.SHARD_BATCH}
    assert batches and all(attrs_of(s)[S.ATTR_PHASE] == "prefetch" for s in batches.values())
    per_batch: dict[str, set[int]] = {}
    for call in spans:
        if call["name"] == S.SHARD_CALL and call.get("parentSpanId") in batches:
            per_batch.setdefault(call["parentSpanId"], set()).add(attrs_of(call)[S.ATTR_SHARD_ID])
    assert len(per_batch) == len(batches)
    assert all(shards == {0, 1} for shards in per_batch.values())
    linked = [s for s in spans for link in s.get("links", []) if link["spanId"] in batches]
    assert len(linked) == counters["prefetch_hits"]
