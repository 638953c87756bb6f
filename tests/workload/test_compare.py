"""cluster-sched compare: a sweep of (workload, config, seed) evaluations, each with its
own redis-server; on Ray tasks it reports exactly what the sequential runs report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cluster_sched.cli import main as cli_main
from cluster_sched.report.compare import aggregate
from cluster_sched.workload.compare import CompareOptions, run_compare

REPO = Path(__file__).resolve().parents[2]
MOST_ALLOCATED = REPO / "examples" / "configs" / "most-allocated.yaml"

SWEEP = """
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {name: sweep}
spec:
  nodeGroups:
  - count: 5
    template:
      apiVersion: v1
      kind: Node
      metadata: {name: node}
      status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
  podGroups:
  - name: jobs
    count: 50
    lifetime: {exponential: {mean: 10m}}
    arrival: {poisson: {count: 50, over: 30m}}
    template:
      apiVersion: v1
      kind: Pod
      metadata: {name: job, namespace: default}
      spec:
        containers:
        - name: main
          image: pause
          resources: {requests: {cpu: 600m, memory: 1Gi}}
"""


def _options(tmp_path: Path, executor: str, out: str) -> CompareOptions:
    workload = tmp_path / "sweep.yaml"
    workload.write_text(SWEEP)
    default = tmp_path / "default.yaml"
    default.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
    return CompareOptions(
        workloads=[str(workload)],
        configs=[str(default), str(MOST_ALLOCATED)],
        seeds=[1, 2, 3],
        output=str(tmp_path / out),
        executor=executor,
        clock="virtual",
    )


def _decisions(data: dict[str, Any]) -> dict[str, Any]:
    """compare.json without the wall-clock figures (they measure the machine)."""
    wall = set(data["wall_clock_figures"])
    figures = {
        w: {name: v for name, v in per.items() if name not in wall}
        for w, per in data["figures"].items()
    }
    runs = [
        {**r, "figures": {k: v for k, v in r["figures"].items() if k not in wall}}
        for r in data["runs"]
    ]
    return {"figures": figures, "runs": runs}


@pytest.mark.usefixtures("ray_session")
def test_ray_sweep_reports_what_the_sequential_runs_report(tmp_path: Path) -> None:
    on_ray = run_compare(_options(tmp_path, "ray", "ray"))
    sequential = run_compare(_options(tmp_path, "local", "seq"), report=False)
    assert on_ray["configs"] == ["default", "most-allocated"]
    assert on_ray["seeds"] == [1, 2, 3]
    assert len(on_ray["runs"]) == 6
    assert _decisions(on_ray) == _decisions(sequential)
    # Every run's history is its own (seeds differ) and both configs scheduled everything.
    assert len({r["history_sha256"] for r in on_ray["runs"]}) == 6
    scheduled = on_ray["figures"]["sweep"]["scheduled"]
    assert scheduled["default"]["values"] == [50.0, 50.0, 50.0]
    page = (tmp_path / "ray" / "compare.html").read_text()
    assert "http://" not in page and "https://" not in page
    assert page.count("data:image/png;base64,") == 4
    assert json.loads((tmp_path / "ray" / "compare.json").read_text())["baseline"] == "default"


def test_local_processes_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    opts = _options(tmp_path, "local", "cli")
    code = cli_main(
        [
            "compare",
            opts.workloads[0],
            "--config",
            opts.configs[0],
            "--config",
            opts.configs[1],
            "--seeds",
            "4,5",
            "--parallel",
            "2",
            "--clock",
            "virtual",
            "--output",
            opts.output,
        ]
    )
    assert code == 0
    data = json.loads((Path(opts.output) / "compare.json").read_text())
    assert [(r["config"], r["seed"]) for r in data["runs"]] == [
        ("default", 4),
        ("default", 5),
        ("most-allocated", 4),
        ("most-allocated", 5),
    ]
    assert "compare.html" in capsys.readouterr().out


def _run(config: str, seed: int, value: float) -> dict[str, Any]:
    return {
        "workload": "w",
        "config": config,
        "seed": seed,
        "figures": {"nodes used (end)": value},
        "placements_sha256": "",
        "history_sha256": "",
        "clock": "virtual",
    }


@pytest.mark.parametrize(
    ("other", "marked", "verdict"),
    [
        ([4.0, 5.0, 6.0], False, ""),  # within the seeds' noise
        ([10.0, 10.0, 11.0], True, "worse"),  # more nodes used is worse
        ([1.0, 1.0, 1.0], True, "better"),
    ],
    ids=["within-spread", "worse", "better"],
)
def test_differences_are_marked_when_significant(
    other: list[float], marked: bool, verdict: str
) -> None:
    runs = [_run("a", s, v) for s, v in zip((1, 2, 3), (4.0, 5.0, 6.0), strict=True)]
    runs += [_run("b", s, v) for s, v in zip((1, 2, 3), other, strict=True)]
    data = aggregate(runs)
    stats = data["figures"]["w"]["nodes used (end)"]
    assert stats["a"]["mean"] == 5.0 and stats["a"]["std"] == 1.0
    diff = data["differences"]["w"]["nodes used (end)"]["b"]
    assert (diff["marked"], diff["verdict"]) == (marked, verdict)
