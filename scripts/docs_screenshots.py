"""Regenerate the README's report pictures from fresh runs.

    .venv/bin/python scripts/docs_screenshots.py [--out docs]

- ``docs/report-openb-virtual.png``: the openb sample trace
  (``examples/traces/openb-sample``) replayed with ``--clock virtual --seed 1``: its key
  figures and the report's charts;
- ``docs/compare-most-allocated.png``: ``compare`` of the default configuration against
  ``examples/configs/most-allocated.yaml`` on a small churn workload (5 nodes, 50 pods
  coming and going over 30 simulated minutes, seeds 1-3, virtual time): the figures
  table (differences marked only where Welch's t-test over the seeds finds them) and the
  overlays.

No browser is needed: each picture is composed with matplotlib from the run's own
summary and chart PNGs, the same ones report.html and compare.html embed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

REPO = Path(__file__).resolve().parents[1]
OPENB = REPO / "examples" / "traces" / "openb-sample" / "workload.yaml"
MOST_ALLOCATED = REPO / "examples" / "configs" / "most-allocated.yaml"
#: The charts of the report picture, in order (those the run did not draw are skipped).
REPORT_CHARTS = (
    "utilisation_over_time",
    "extended_over_time",
    "pending_over_time",
    "waiting_reasons_over_time",
    "nodes_in_use",
    "latency_cdf",
    "throughput",
    "node_utilisation_heatmap",
)
#: A small churn workload: 5 nodes, 50 pods coming and going over 30 simulated minutes.
CHURN = REPO / "examples" / "virtual" / "churn-small.yaml"
#: Page width (inches at DPI) of both pictures: 1280 px.
WIDTH, DPI = 12.8, 100


def _page(
    title: str, lines: Sequence[str], images: Sequence[Path], out: Path, *, columns: int = 2
) -> None:
    """Title, text lines, then the images in a grid, as one PNG."""
    pictures = [mpimg.imread(p) for p in images]
    rows = -(-len(pictures) // columns)
    cell_h = WIDTH / columns * 0.6
    text_h = 0.6 + 0.22 * len(lines)
    fig = Figure(figsize=(WIDTH, text_h + rows * cell_h), dpi=DPI)
    FigureCanvasAgg(fig)
    top = 1 - 0.45 / (text_h + rows * cell_h)
    fig.text(0.02, top, title, fontsize=16, weight="bold", va="top")
    for i, line in enumerate(lines):
        y = 1 - (0.75 + 0.22 * i) / (text_h + rows * cell_h)
        fig.text(0.02, y, line, fontsize=9.5, family="monospace", va="top")
    grid_top = 1 - text_h / (text_h + rows * cell_h)
    for i, img in enumerate(pictures):
        r, c = divmod(i, columns)
        h = cell_h / (text_h + rows * cell_h)
        ax = fig.add_axes((c / columns, grid_top - (r + 1) * h, 1 / columns, h))
        ax.imshow(img)
        ax.set_axis_off()
    fig.savefig(out, format="png", metadata={"Software": None})


def report_picture(out: Path, work: Path) -> Path:
    from cluster_sched.workload.runner import RunOptions, run_evaluation

    run_dir = work / "openb"
    result = run_evaluation(
        RunOptions(workload=str(OPENB), seed=1, output=str(run_dir), quiet=True, clock="virtual")
    )
    s = result.summary
    over, vt, sim = s["over_time"], s["virtual_time"], s["simulation_speed"]
    waiting = s["waiting"]
    lines = [
        f"{s['nodes']} nodes, {s['pods']} pods over {vt['simulated_seconds'] / 3600:.1f} "
        f"simulated hours: {s['scheduled']} scheduled, {vt['completions']} completed, "
        f"{vt['running_at_end']} running at the end",
        f"pending time (simulated) p50 {s['latency_ms']['p50'] / 1e3:g} s, p99 "
        f"{s['latency_ms']['p99'] / 1e3:g} s; {waiting['pods_waited']} pods waited "
        f"(up to {waiting['max_attempts']} attempts)",
        f"nodes in use: mean {over['nodes_in_use_mean']:.1f}, peak "
        f"{over['nodes_in_use_max']:.0f}; allocation (time mean): "
        + ", ".join(f"{r} {v:.1%}" for r, v in over["utilisation_mean"].items() if r != "pods"),
        *(
            f"{r}: {v:.1%} of capacity unallocated on partly used nodes (time mean)"
            for r, v in (over.get("unallocated_on_partly_used_nodes_mean") or {}).items()
        ),
        f"simulation speed (wall clock): {sim['pods_per_wall_second']} pods/s, "
        f"{sim['cpu_us_per_pod']} µs CPU per pod",
    ]
    plots = run_dir / "plots"
    images = [plots / f"{n}.png" for n in REPORT_CHARTS if (plots / f"{n}.png").exists()]
    path = out / "report-openb-virtual.png"
    _page("report.html: openb sample trace, virtual time (seed 1)", lines, images, path)
    return path


def _cell(stats: Mapping[str, Any] | None, diff: Mapping[str, Any] | None) -> str:
    if stats is None:
        return "-"
    text = f"{stats['mean']:.4g} ± {stats['std']:.2g}"
    if diff is not None and diff["marked"]:
        unit = " pp" if diff.get("unit") == "percentage points" else ""
        text += f"  Δ {diff['delta']:+.3g}{unit} ({diff['verdict']}, p={diff['p_value']:.2g})"
    return text


def compare_picture(out: Path, work: Path) -> Path:
    from cluster_sched.workload.compare import CompareOptions, run_compare

    workload = CHURN
    default = work / "default.yaml"
    default.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
    cmp_dir = work / "compare"
    data = run_compare(
        CompareOptions(
            workloads=[str(workload)],
            configs=[str(default), str(MOST_ALLOCATED)],
            seeds=[1, 2, 3],
            output=str(cmp_dir),
            clock="virtual",
        )
    )
    configs: list[str] = data["configs"]
    w = data["workloads"][0]
    wall = set(data["wall_clock_figures"])
    lines = [f"{'figure':42} " + "".join(f"{c:34}" for c in configs)]
    for name, per in data["figures"][w].items():
        label = name.replace("latency", "pending").replace("(ms)", "(simulated ms)")
        label = label.replace("(pods/s)", "(pods per simulated s)")
        label = f"{name} (sim. speed)" if name in wall else label
        diffs = data["differences"][w].get(name, {})
        lines.append(
            f"{label[:42]:42} " + "".join(f"{_cell(per.get(c), diffs.get(c)):34}" for c in configs)
        )
    lines.append(f"Δ shown only when significant: {data['significance_test']}")
    plots = cmp_dir / "plots"
    images = [
        plots / f"w0_{n}.png" for n in ("latency_cdf", "utilisation", "nodes_in_use", "pending")
    ]
    path = out / "compare-most-allocated.png"
    _page(
        "compare.html: default vs MostAllocated, churn-small, seeds 1-3, virtual time",
        lines,
        images,
        path,
    )
    (work / "compare.json").write_text(json.dumps(data))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs"), help="directory of the PNGs")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="docs-screenshots-") as tmp:
        for path in (report_picture(out, Path(tmp)), compare_picture(out, Path(tmp))):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
