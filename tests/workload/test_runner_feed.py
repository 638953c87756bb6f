"""``run`` feeds a burst of pods in step with the scheduling loop: pods bind while the
rest of the burst is still being written (issue 23, item 4: writing and watching the
whole burst before the first batch left a second-long gap in the throughput chart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.testing import make_node, make_pod
from cluster_sched.workload.commands import print_summary
from cluster_sched.workload.runner import RunOptions, run_evaluation


def _template(builder: Any) -> dict[str, Any]:
    doc: dict[str, Any] = builder.manifest()
    doc["metadata"].pop("namespace", None)
    return doc


def _workload(path: Path, pods: int) -> Path:
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "burst"},
        "spec": {
            "nodeGroups": [
                {"count": 20, "template": _template(make_node("n").capacity(cpu="8", pods=110))}
            ],
            "podGroups": [
                {
                    "name": "burst",
                    "count": pods,
                    "template": _template(make_pod("p").req(cpu="10m")),
                }
            ],
        },
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("batch_size", [8, 32], ids=["batch8", "batch32"])
def test_a_burst_binds_while_it_is_written(
    tmp_path: Path, redis_url: str, batch_size: int, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = 600
    result = run_evaluation(
        RunOptions(
            str(_workload(tmp_path / "w.yaml", pods)),
            seed=1,
            quiet=True,
            redis=redis_url,
            batch_size=batch_size,
        )
    )
    assert result.summary["scheduled"] == pods
    assert result.record is not None
    stats = result.record.stats
    assert len(stats.bound_at) == pods
    first_bound = min(stats.bound_at.values())
    last_queued = max(stats.enqueued_at.values())
    # The first batch binds before the burst's last pod reached the queue.
    assert first_bound < last_queued
    # run reports the compiled path's and OpportunisticBatching's counters (issue 26.4):
    # the default profile's spreading defaults leave every pod unsignable (no hint)
    batching = result.summary["opportunistic_batching"]["default-scheduler"]
    assert batching["attempts"] == {"no_hint": pods}
    compiled = result.summary["compiled_path"]
    assert compiled["shape_hits"] + compiled["shape_misses"] == pods
    print_summary(result.summary)
    out = capsys.readouterr().out
    assert f"batching       default-scheduler: no_hint={pods}; flushed " in out
    assert f"compiled path  {compiled['shape_hits']} shape hits" in out
