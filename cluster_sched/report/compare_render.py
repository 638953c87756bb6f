"""compare.html: the configs side by side, mean and spread over seeds, differences from
the baseline marked, and each workload's charts with every config overlaid.

The page is self-contained like report.html (charts embedded as base64 PNG, drawn with
the report's Agg-canvas figures); the PNGs also stay under ``DIR/plots/``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from cluster_sched.report.html import figure_html, page_style, table_html
from cluster_sched.report.plots import Chart, new_figure, save_png
from cluster_sched.report.plots_time import time_label

__all__ = ["write_compare_report"]

_EXTRA_STYLE = """
td.better { background: #e3f4e1; } td.worse { background: #fbe3e1; }
td.marked { font-weight: bold; }
"""


def _fmt(stats: Mapping[str, Any]) -> str:
    mean, std = stats["mean"], stats["std"]
    spread = f" ± {std:.4g}" if std else ""
    rng = f" [{stats['min']:.4g} to {stats['max']:.4g}]" if stats["min"] != stats["max"] else ""
    return f"{mean:.4g}{spread}{rng}"


def _figures_table(data: Mapping[str, Any], workload: str) -> str:
    configs: list[str] = data["configs"]
    header = ["figure", *configs]
    rows = []
    classes = []
    wall = set(data.get("wall_clock_figures") or ())
    virtual = data.get("clock") == "virtual"
    for name, per_config in data["figures"][workload].items():
        diffs = data["differences"][workload].get(name, {})
        label = name
        if virtual:
            # every figure but the wall-clock ones is in simulated time
            label = name.replace("latency", "pending").replace("(ms)", "(simulated ms)")
            label = label.replace("(pods/s)", "(pods per simulated s)")
            if name in wall:
                label = f"{name}: simulation speed (wall clock)"
        row: list[object] = [label]
        cls: list[str] = [""]
        for c in configs:
            stats = per_config.get(c)
            if stats is None:
                row.append("")
                cls.append("")
                continue
            text = _fmt(stats)
            d = diffs.get(c)
            if d is not None and d["marked"]:
                pct = f" ({d['delta_pct']:+.1f}%)" if d["delta_pct"] is not None else ""
                unit = " pp" if d.get("unit") == "percentage points" else ""
                text += f" Δ {d['delta']:+.4g}{unit}{pct}, p={d['p_value']:.2g}"
                cls.append(f"marked {d['verdict']}".strip())
            else:
                cls.append("")
            row.append(text)
        rows.append(row)
        classes.append(cls)
    return table_html(header, rows, classes)


def _overlay(
    name: str,
    title: str,
    out_dir: Path,
    runs: Sequence[Mapping[str, Any]],
    configs: Sequence[str],
    draw: Any,
    empty: str,
) -> Chart:
    fig, axes = new_figure()
    fig.suptitle(title)
    ax: Axes = axes[0]
    colors = [f"C{i}" for i in range(10)]
    for i, config in enumerate(configs):
        mine = [r for r in runs if r["config"] == config and r["series"]]
        for j, run in enumerate(mine):
            draw(ax, run["series"], colors[i % 10], config if j == 0 else None)
    finish_overlay_axes(ax, empty)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")
    path = out_dir / f"{name}.png"
    save_png(fig, path)
    return Chart(name, title, path)


def finish_overlay_axes(ax: Axes, empty: str) -> str:
    """Give an overlay axes that no run put a value on limits that do not read as data.

    With no point drawn, or only lines at 0, matplotlib centres the axes on 0 with a
    bare -0.04..0.04 range, which looks like a measured figure; say ``empty`` in words
    instead, or start a flat zero line's axis at 0. Returns what it found: ``"empty"``,
    ``"zero"`` or ``"data"``."""
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.lines]
    ys = [y for y in ys if y.size]
    if not ys:
        ax.text(0.5, 0.5, empty, transform=ax.transAxes, ha="center", va="center")
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_xticks([])
        ax.set_yticks([])
        return "empty"
    if not any(y.any() for y in ys):
        ax.set_ylim(0.0, 1.0)
        return "zero"
    return "data"


@dataclass(frozen=True, slots=True)
class _Axis:
    """The time axis shared by a workload's overlays: label and seconds per unit."""

    label: str
    seconds: float
    virtual: bool


def _time_axis(runs: Sequence[Mapping[str, Any]], virtual: bool) -> _Axis:
    span = max(
        (
            float(r["series"][k][-1])
            for r in runs
            if r["series"]
            for k in ("utilisation_t", "pending_t", "nodes_t")
            if r["series"].get(k)
        ),
        default=0.0,
    )
    label, seconds = time_label(span, virtual)
    return _Axis(label, seconds, virtual)


def _latency(axis: _Axis) -> Any:
    def draw(ax: Axes, s: Mapping[str, Any], color: str, label: str | None) -> None:
        x = np.asarray(s["latency_ms"]) / (1e3 if axis.virtual else 1.0)
        if axis.virtual and len(x) and not x.any():
            # no pod of this run waited: a line at 0 would say nothing
            ax.plot([], [], color=color, label=f"{label}: no pod waited" if label else None)
        elif len(x):
            ax.plot(x, np.asarray(s["latency_q"]) / 100, color=color, label=label, alpha=0.8)
        if axis.virtual:
            ax.set_xlabel("pending time, queued → bound (simulated s)")
        else:
            ax.set_xlabel("queued → bound latency (ms)")
        ax.set_ylabel("fraction of pods")

    return draw


def _utilisation(axis: _Axis) -> Any:
    def draw(ax: Axes, s: Mapping[str, Any], color: str, label: str | None) -> None:
        if s["utilisation_t"]:
            ax.step(
                np.asarray(s["utilisation_t"]) / axis.seconds,
                np.asarray(s["utilisation_cpu"]) * 100,
                where="post",
                color=color,
                label=label,
                alpha=0.8,
            )
        ax.set_xlabel(axis.label)
        ax.set_ylabel("cluster cpu requested / allocatable (%)")

    return draw


def _steps(axis: _Axis, t_key: str, v_key: str, ylabel: str) -> Any:
    """An overlay of one step series of the runs' digests (``t_key`` times, ``v_key``
    values)."""

    def draw(ax: Axes, s: Mapping[str, Any], color: str, label: str | None) -> None:
        if s.get(t_key):
            ax.step(
                np.asarray(s[t_key]) / axis.seconds,
                s[v_key],
                where="post",
                color=color,
                label=label,
                alpha=0.8,
            )
        ax.set_xlabel(axis.label)
        ax.set_ylabel(ylabel)

    return draw


def write_compare_report(
    data: Mapping[str, Any], runs: Sequence[Mapping[str, Any]], out_dir: Path
) -> Path:
    """Draw the overlays into ``out_dir/plots`` and write ``out_dir/compare.html``."""
    plots = out_dir / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    configs: list[str] = data["configs"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>cluster-sched compare</title><style>{page_style()}{_EXTRA_STYLE}</style>",
        "</head><body><h1>cluster-sched compare</h1>",
        table_html(
            [],
            [
                ("configs (first = baseline)", ", ".join(configs)),
                ("seeds", ", ".join(str(s) for s in data["seeds"])),
                ("workloads", ", ".join(data["workloads"])),
            ],
        ),
        '<p class="muted">Each cell: mean ± standard deviation [min to max] over seeds. '
        "Δ: difference of the means from the baseline, shown only when significant "
        f"({html.escape(data.get('significance_test', ''))}; one seed tests nothing); "
        "green better, red worse; pp: percentage points. Wall-clock figures "
        f"({html.escape(', '.join(data['wall_clock_figures']))}) measure the machine, not "
        "the scheduler's decisions"
        + (
            "; in virtual time they are simulation speed and never marked, every other "
            "figure is in simulated time."
            if data.get("clock") == "virtual"
            else "."
        )
        + "</p>",
    ]
    for wi, workload in enumerate(data["workloads"]):
        mine = [r for r in runs if r["workload"] == workload]
        axis = _time_axis(mine, data.get("clock") == "virtual")
        charts = [
            _overlay(
                f"w{wi}_latency_cdf",
                f"{workload}: " + ("pending time CDF" if axis.virtual else "latency CDF"),
                plots,
                mine,
                configs,
                _latency(axis),
                "no pod waited in any run",
            ),
            _overlay(
                f"w{wi}_utilisation",
                f"{workload}: cpu utilisation over time",
                plots,
                mine,
                configs,
                _utilisation(axis),
                "no utilisation sample in any run",
            ),
            _overlay(
                f"w{wi}_nodes_in_use",
                f"{workload}: nodes in use over time",
                plots,
                mine,
                configs,
                _steps(axis, "nodes_t", "nodes", "nodes holding a pod"),
                "no node held a pod in any run",
            ),
            _overlay(
                f"w{wi}_pending",
                f"{workload}: pending pods over time",
                plots,
                mine,
                configs,
                _steps(axis, "pending_t", "pending", "pending pods"),
                "no pod was pending in any run",
            ),
        ]
        parts += [
            f"<h2>{html.escape(workload)}</h2>",
            _figures_table(data, workload),
            '<div class="charts">',
            *(figure_html(c) for c in charts),
            "</div>",
        ]
    parts.append("</body></html>")
    path = out_dir / "compare.html"
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path
