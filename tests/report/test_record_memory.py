"""The run's record keeps parsed objects only: no figure reads a manifest, and a million
manifests would more than double what the record holds."""

from __future__ import annotations

from cluster_sched.report.record import build_record, record_of
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.testing import make_node, make_pod


def test_record_objects_keep_no_manifest_and_skip_invalid_ones() -> None:
    nodes = [make_node("n2").manifest(), make_node("n1").manifest()]
    pods = [make_pod("b").node("n1").manifest(), make_pod("a").manifest()]
    bad = make_pod("bad").manifest()
    bad["spec"]["containers"] = "nope"
    record = build_record(iter(nodes), iter([*pods, bad]), RunStats())
    assert [n.name for n in record.nodes] == ["n1", "n2"]
    assert [p.key for p in record.pods] == ["default/a", "default/b"]
    assert all(o.raw is None for o in (*record.nodes, *record.pods))
    assert [p.key for p in record.bound] == ["default/b"]


def test_objects_handed_over_lose_their_manifest_in_place() -> None:
    """An informer's objects at the end of a run are handed over (``final_record``): the
    record keeps the very objects, each without its manifest, rather than copies."""
    nodes = [make_node("n2").obj(), make_node("n1").obj()]
    pods = [make_pod("b").node("n1").obj(), make_pod("a").obj()]
    assert all(o.raw is not None for o in (*nodes, *pods))
    kept = record_of(list(nodes), list(pods), RunStats())
    assert all(o.raw is not None for o in (*nodes, *pods))  # copies: the caller's keep theirs
    assert all(o.raw is None for o in (*kept.nodes, *kept.pods))
    record = record_of(list(nodes), list(pods), RunStats(), handed_over=True)
    assert [n.name for n in record.nodes] == ["n1", "n2"]
    assert [p.key for p in record.pods] == ["default/a", "default/b"]
    assert record.nodes[0] is nodes[1] and record.pods[0] is pods[1]
    assert all(o.raw is None for o in (*record.nodes, *record.pods))
    assert record.nodes == kept.nodes and record.pods == kept.pods
