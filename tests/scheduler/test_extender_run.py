"""``cluster-sched run`` with HTTP extenders, end to end: a filter extender limits the
nodes, a bind extender binds every pod (writing the binding to the store itself, as a
real extender calls the API server), and a failing ignorable extender changes nothing.
Placements are read from placements.json and from the store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from cluster_sched.cli import main
from cluster_sched.redis_server import connect
from cluster_sched.store.results import BindOutcome
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.testing.extender_server import ExtenderServer, FakeExtender, only

ALLOWED = ("n1", "n2", "n3")


@pytest.fixture
def store_binder(redis_url: str) -> Iterator[Any]:
    """What a bind extender does: the pods/binding call, here on the run's store."""
    client = connect(redis_url)
    store = Store(client)
    bound: list[tuple[str, str]] = []

    def bind(namespace: str, name: str, uid: str, node: str) -> None:
        result = store.bind(f"{namespace}/{name}", node, uid or None)
        if result.outcome is not BindOutcome.BOUND:
            raise RuntimeError(f"binding {namespace}/{name}: {result.outcome.name}")
        bound.append((f"{namespace}/{name}", node))

    bind.bound = bound  # type: ignore[attr-defined]
    try:
        yield bind
    finally:
        client.close()


def test_run_with_a_filter_extender_and_a_bind_extender(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    redis_url: str,
    redis_client: redis.Redis,
    store_binder: Any,
) -> None:
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="16Gi", pods=110) for i in range(1, 6)]
    pods = [make_pod(f"p{i}").req(cpu="500m", memory="256Mi") for i in range(12)]
    workload = tmp_path / "workload.yaml"
    workload.write_text(yaml.safe_dump_all([o.manifest() for o in (*nodes, *pods)]))

    filterer = FakeExtender(predicates=[only(*ALLOWED)], node_cache_capable=True)
    binder = FakeExtender(binder=store_binder)
    broken = FakeExtender(status=503)
    with ExtenderServer(filterer) as f, ExtenderServer(binder) as b, ExtenderServer(broken) as x:
        config = tmp_path / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "extenders": [
                        {"urlPrefix": x.url, "filterVerb": "filter", "ignorable": True},
                        {"urlPrefix": f.url, "filterVerb": "filter", "nodeCacheCapable": True},
                        {"urlPrefix": b.url, "bindVerb": "bind", "httpTimeout": "10s"},
                    ],
                }
            )
        )
        out_dir = tmp_path / "out"
        code = main(
            [
                "run",
                str(workload),
                "--config",
                str(config),
                "--redis",
                redis_url,
                "--output",
                str(out_dir),
                "--no-report",
                "--quiet",
                "--seed",
                "1",
            ]
        )
        err = capsys.readouterr().err
    assert code == 0, err

    placements = json.loads((out_dir / "placements.json").read_text())
    assert set(placements) == {f"default/p{i}" for i in range(12)}
    assert set(placements.values()) <= set(ALLOWED)
    # every pod was bound by the extender, to the node the scheduler chose
    assert sorted(store_binder.bound) == sorted(placements.items())
    assert binder.verbs() == ["bind"] * 12
    store = Store(redis_client)
    for key, node in placements.items():
        doc = store.get("Pod", key)
        assert doc is not None and doc["spec"]["nodeName"] == node
    # the ignorable extender failed every time and was skipped; the filter saw names only
    assert broken.verbs() == ["filter"] * 12
    assert all(body["Nodes"] is None for _, body in filterer.calls)
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["scheduled"] == 12 and summary["unschedulable"] == 0
