"""The record of a run's end built from the informer's objects is the record the store's
listing gives (``workload.final_state``), and the store is listed whenever the
informer's objects may differ from it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis

from cluster_sched.config.load import load_config
from cluster_sched.report import report_summary
from cluster_sched.report.record import RunRecord
from cluster_sched.report.series import over_time_figures
from cluster_sched.scheduler.assembly import new_scheduler
from cluster_sched.store.store import Store
from cluster_sched.testing import make_pod
from cluster_sched.workload.final_state import InformerView, final_record, informer_view
from cluster_sched.workload.runner import run_workload
from cluster_sched.workload.spec import Workload, load_workload
from tests.report.mixed import MIXED_WORKLOAD, MOST_ALLOCATED


def _run(
    client: redis.Redis, tmp_path: Path, before: Sequence[dict[str, Any]] = ()
) -> tuple[Store, Workload, InformerView, Any, Any]:
    """The mixed workload run to its end (``before``: pods written first); the store,
    the workload, the informer's view, the run's stats and the configuration."""
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED_WORKLOAD)
    config_path = tmp_path / "most-allocated.yaml"
    config_path.write_text(MOST_ALLOCATED)
    workload = load_workload(str(path), seed=7)
    config = load_config(str(config_path))
    store = Store(client)
    if before:
        store.apply_many(list(before))
    coord = new_scheduler(store, client, config, seed=7)
    try:
        run_workload(workload, coord, store, quiet=True, group_timeout=30)
    finally:
        coord.close()
    return store, workload, informer_view(coord.informer), coord.stats, config


def _groups(workload: Workload) -> dict[str, tuple[str, ...]]:
    return {g.name: g.pod_keys() for g in workload.pod_groups}


def _figures(record: RunRecord, config: Any) -> dict[str, Any]:
    summary = report_summary(record, config=config, config_file=None, seed=7)
    summary["over_time"] = over_time_figures(record)
    return summary


def test_record_from_the_informer_equals_the_store_listing(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    store, workload, view, stats, config = _run(redis_client, tmp_path)
    record, placements = final_record(view, store, None, stats, _groups(workload))
    # the informer's objects were used: handed on (drained), not listed from the store
    assert view.pods == {} and view.nodes == {}
    listed, listed_placements = final_record(None, store, None, stats, _groups(workload))
    assert [p.key for p in record.pods] == [p.key for p in listed.pods]
    assert record.pods == listed.pods
    assert record.nodes == listed.nodes
    assert all(p.raw is None for p in record.pods) and all(n.raw is None for n in record.nodes)
    assert placements == listed_placements
    assert len(placements) > 0 and len(record.pending) > 0  # bound and unschedulable pods
    assert _figures(record, config) == _figures(listed, config)


def test_a_write_after_the_informer_read_lists_the_store(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    store, workload, view, stats, _ = _run(redis_client, tmp_path)
    late = make_pod("late").req(cpu="100m").node("big-0").manifest()
    store.apply(late)
    record, placements = final_record(view, store, None, stats, _groups(workload))
    assert view.pods  # not used: the store changed after the informer's last read
    assert "default/late" in {p.key for p in record.pods}
    assert placements["default/late"] == "big-0"


def test_a_pod_the_informer_dropped_lists_the_store(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """A finished pod stays in the store but leaves the informer (upstream's pod
    informer ignores terminal pods): the record counts it, as the store's listing does."""
    done = make_pod("done").req(cpu="100m").node("big-0").phase("Succeeded").manifest()
    store, workload, view, stats, _ = _run(redis_client, tmp_path, [done])
    assert "default/done" not in view.pods
    record, placements = final_record(view, store, None, stats, _groups(workload))
    assert view.pods  # not used
    assert "default/done" in {p.key for p in record.pods}
    assert placements["default/done"] == "big-0"


def test_the_release_runs_after_a_record_of_the_informers_objects(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """The runner's full collection (``release``) walks the heap once the record has
    dropped every manifest when the informer's objects are used; before the listing is
    decoded when the store is read."""
    store, workload, view, stats, _ = _run(redis_client, tmp_path)
    seen: list[tuple[int, int]] = []  # (informer pods left, informer nodes left) at release
    record, _ = final_record(
        view,
        store,
        None,
        stats,
        _groups(workload),
        lambda: seen.append((len(view.pods), len(view.nodes))),
    )
    assert seen == [(0, 0)] and len(record.pods) > 0  # once, the informer's handed on
    store, workload, view, stats, _ = _run(redis_client, tmp_path)
    store.apply(make_pod("late").req(cpu="100m").node("big-0").manifest())
    listed: list[int] = []
    record, _ = final_record(
        view, store, None, stats, _groups(workload), lambda: listed.append(len(view.pods))
    )
    assert listed == [len(view.pods)] and listed[0] > 0  # once, before: nothing drained
