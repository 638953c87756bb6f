"""``cluster-sched explain`` as a table: readable at 80 columns (no line wider, no
header cut), bracketed reasons printed as they are (never eaten as rich markup),
weights and weighted scores, every plugin's verdict on a failing node, and each
extension point's results."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cluster_sched.cli import main
from cluster_sched.testing.builders import make_node, make_pod

LONG = "node-with-a-rather-long-name-0001"


def _files(tmp_path: Path, pod: dict) -> list[str]:  # type: ignore[type-arg]
    nodes = [
        make_node(LONG).capacity(cpu="8", memory="16Gi", pods=10).manifest(),
        make_node("medium").capacity(cpu="4", memory="8Gi", pods=10).manifest(),
        make_node("small").capacity(cpu="2", memory="4Gi", pods=10).manifest(),
        make_node("tiny-tainted")
        .capacity(cpu="1", memory="1Gi", pods=10)
        .taint("gpu", "yes")
        .manifest(),
    ]
    cluster, pod_file = tmp_path / "cluster.yaml", tmp_path / "pod.yaml"
    cluster.write_text(yaml.safe_dump_all(nodes))
    pod_file.write_text(yaml.safe_dump(pod))
    return ["--cluster", str(cluster), "--pod", str(pod_file)]


def _table(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pod: dict,  # type: ignore[type-arg]
    *extra: str,
) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    code = main(["explain", *_files(tmp_path, pod), "--seed", "1", *extra])
    out = capsys.readouterr()
    assert code == 0 and out.err == ""
    return out.out


def test_table_fits_80_columns_with_every_header_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _table(tmp_path, capsys, monkeypatch, make_pod("p").req(cpu="3").manifest())
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out  # nothing cut with an ellipsis
    for header in ("node", "filter", "final", "plugin"):
        assert f" {header} " in out
    joined = "".join(line.strip("│┃ ") for line in out.splitlines())
    assert LONG in joined.replace("│", "").replace("┃", "").replace(" ", "")


def test_table_shows_weights_weighted_scores_and_final(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _table(tmp_path, capsys, monkeypatch, make_pod("p").req(cpu="1").manifest())
    assert "scores: weighted = normalised x weight" in out
    assert "TaintToleration x3" in out
    assert "300 = 100x3" in out  # every node tolerates: normalised 100, weight 3
    assert "raw 0" in out  # TaintToleration's raw score before NormalizeScore
    rows = [line for line in out.splitlines() if line.startswith("│ final ")]
    assert len(rows) == 1


def test_failing_node_shows_its_verdict_and_the_other_failing_plugins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _table(tmp_path, capsys, monkeypatch, make_pod("p").req(cpu="3").manifest())
    flat = " ".join(" ".join(line.strip("│ ").split()) for line in out.splitlines())
    assert "TaintToleration: node(s) had untolerated taint(s)" in flat
    assert "also failing: NodeResourcesFit" in flat
    assert "passed" in flat and "skipped" in flat  # feasible nodes: passed/skipped counts


def test_extension_point_results_are_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _table(tmp_path, capsys, monkeypatch, make_pod("p").req(cpu="1").manifest())
    flat = " ".join(out.split())
    assert "PreEnqueue: passed SchedulingGates" in flat
    assert "PreFilter: passed NodeResourcesFit; skipped NodeAffinity" in flat
    assert "PreScore: passed TaintToleration" in flat
    assert f"Reserve on {LONG}: passed VolumeBinding" in flat
    assert f"Permit on {LONG}: no plugins" in flat


@pytest.mark.parametrize(
    ("pod", "text"),
    [
        pytest.param(
            make_pod("g").req(cpu="1").scheduling_gates("example.com/gate").manifest(),
            "waiting for scheduling gates: [example.com/gate]",
            id="scheduling-gates",
        ),
        pytest.param(
            make_pod("a")
            .req(cpu="1")
            .node_affinity_required(
                fields=[{"key": "metadata.name", "operator": "In", "values": ["small"]}]
            )
            .manifest(),
            "node(s) didn't satisfy plugin(s) [NodeAffinity]",
            id="prefilter-excluded",
        ),
    ],
)
def test_bracketed_text_survives(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pod: dict,  # type: ignore[type-arg]
    text: str,
) -> None:
    out = _table(tmp_path, capsys, monkeypatch, pod, "--all")
    flat = " ".join(" ".join(line.strip("│ ").split()) for line in out.splitlines())
    assert text in flat
