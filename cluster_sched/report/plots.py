"""The report's charts, drawn with matplotlib's Agg canvas into PNG files.

Figures are built as ``matplotlib.figure.Figure`` on a ``FigureCanvasAgg`` rather than
through pyplot, so no global backend is switched, no window can open and nothing is
shared between threads. Every chart is drawn even without data (a note says so), so a
report always has the same charts; the two over-time charts need a run that spans time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from cluster_sched.report.quality import RESOURCES, NodeUsage
from cluster_sched.report.series import RunSeries

__all__ = ["Chart", "new_figure", "save_png", "write_plots"]

#: Size (inches) and resolution of every chart.
FIGSIZE = (8.0, 4.5)
DPI = 100
#: Longest reason label drawn in the reasons chart (longer ones are cut with "...").
MAX_LABEL = 70
#: Most reasons drawn (the rest are in summary.json).
MAX_REASONS = 15


@dataclass(frozen=True, slots=True)
class Chart:
    """One written chart: ``plots/<name>.png``."""

    name: str
    title: str
    path: Path


def _figure(rows: int = 1, height: float = FIGSIZE[1]) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(FIGSIZE[0], height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, squeeze=False)[:, 0].tolist()
    return fig, axes


def _note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


def _throughput(fig: Figure, axes: list[Axes], series: RunSeries) -> None:
    ax = axes[0]
    starts, rate, width = series.throughput()
    if len(rate) == 0:
        _note(ax, "no pod was bound")
        return
    ax.bar(starts, rate, width=width, align="edge", color="#4c72b0")
    ax.set_xlabel("time since the first pod was queued (s)")
    ax.set_ylabel("pods bound per second")


def _latency_cdf(fig: Figure, axes: list[Axes], series: RunSeries) -> None:
    ax = axes[0]
    lat = series.latency_ms
    if len(lat) == 0:
        _note(ax, "no pod was bound")
        return
    y = np.arange(1, len(lat) + 1) / len(lat)
    ax.step(lat, y, where="post", color="#4c72b0")
    if lat[0] > 0 and lat[-1] / lat[0] > 100:
        ax.set_xscale("log")
    for q in (0.5, 0.9, 0.99):
        ax.axhline(q, color="#bbb", linewidth=0.8, linestyle="--")
    ax.set_xlabel("queued → bound latency (ms)")
    ax.set_ylabel("fraction of pods")
    ax.set_ylim(0, 1.02)


def _attempt_histogram(fig: Figure, axes: list[Axes], series: RunSeries) -> None:
    ax = axes[0]
    ms = series.attempt_ms
    if len(ms) == 0:
        _note(ax, "no scheduling attempt")
        return
    low, high = float(ms.min()), float(ms.max())
    if low > 0 and high / low > 100:
        ax.hist(ms, bins=np.geomspace(low, high, 50).tolist(), color="#55a868")
        ax.set_xscale("log")
    else:
        ax.hist(ms, bins=50, color="#55a868")
    ax.set_xlabel("scheduling attempt (ms)")
    ax.set_ylabel("attempts")


def _utilisation_histogram(fig: Figure, axes: list[Axes], usage: NodeUsage) -> None:
    util = usage.utilisation
    for j, (ax, resource) in enumerate(zip(axes, RESOURCES, strict=True)):
        if len(util) == 0:
            _note(ax, "no node")
            continue
        ax.hist(util[:, j] * 100, bins=np.linspace(0, 100, 41).tolist(), color="#8172b3")
        ax.set_ylabel(f"nodes ({resource})")
        ax.set_xlim(0, 100)
    axes[-1].set_xlabel("requested / allocatable (%)")


def _zone_grid(usage: NodeUsage, column: int) -> tuple[list[str], np.ndarray]:
    """float64[n_zones, widest zone]: utilisation per node, a zone per row, NaN padding."""
    zones = sorted(set(usage.zones))
    members: dict[str, list[int]] = {z: [] for z in zones}
    for i, zone in enumerate(usage.zones):
        members[zone].append(i)
    width = max((len(m) for m in members.values()), default=0)
    grid = np.full((len(zones), max(width, 1)), np.nan)
    util = usage.utilisation[:, column]
    for row, zone in enumerate(zones):
        idx = members[zone]
        grid[row, : len(idx)] = util[idx]
    return zones, grid


def _utilisation_heatmap(fig: Figure, axes: list[Axes], usage: NodeUsage) -> None:
    if len(usage.names) == 0:
        _note(axes[0], "no node")
        return
    image = None
    for j, (ax, resource) in enumerate(zip(axes, RESOURCES, strict=True)):
        zones, grid = _zone_grid(usage, j)
        image = ax.imshow(
            np.ma.masked_invalid(grid * 100),
            aspect="auto",
            interpolation="nearest",
            cmap="viridis",
            vmin=0,
            vmax=100,
        )
        ax.set_yticks(range(len(zones)), zones)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(resource, fontsize=9, loc="left")
    axes[-1].set_xlabel("node (by name, within its zone)")
    if image is not None:
        fig.colorbar(image, ax=axes, label="requested / allocatable (%)")


def _reasons(fig: Figure, axes: list[Axes], reasons: Mapping[str, int]) -> None:
    ax = axes[0]
    if not reasons:
        _note(ax, "every pod was scheduled")
        return
    items = list(reasons.items())[:MAX_REASONS][::-1]
    labels = [r if len(r) <= MAX_LABEL else r[: MAX_LABEL - 3] + "..." for r, _ in items]
    ax.barh(range(len(items)), [c for _, c in items], height=0.6, color="#c44e52")
    ax.set_yticks(range(len(items)), labels, fontsize=8)
    ax.set_ylim(-0.7, max(len(items), 3) - 0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("unschedulable pods giving this reason (last attempt)")


def _utilisation_over_time(fig: Figure, axes: list[Axes], series: RunSeries) -> None:
    ax = axes[0]
    if len(series.utilisation_t) == 0:
        _note(ax, "no pod was bound")
        return
    for j, resource in enumerate(RESOURCES):
        ax.step(series.utilisation_t, series.utilisation[:, j] * 100, where="post", label=resource)
    ax.set_xlabel("time since the first pod was queued (s)")
    ax.set_ylabel("cluster requested / allocatable (%)")
    ax.legend(loc="best")


def _pending_over_time(fig: Figure, axes: list[Axes], series: RunSeries) -> None:
    ax = axes[0]
    ax.step(series.pending_t, series.pending, where="post", color="#dd8452")
    ax.set_xlabel("time since the first pod was queued (s)")
    ax.set_ylabel("pending pods")


def _save(fig: Figure, path: Path) -> None:
    # no Software metadata: it carries a URL, and the report names none
    fig.savefig(path, format="png", metadata={"Software": None})


def new_figure(rows: int = 1, height: float = FIGSIZE[1]) -> tuple[Figure, list[Axes]]:
    """A blank chart of the report's size on its own Agg canvas (compare's overlays)."""
    return _figure(rows, height)


def save_png(fig: Figure, path: Path) -> None:
    _save(fig, path)


def write_plots(
    out_dir: Path, series: RunSeries, usage: NodeUsage, reasons: Mapping[str, int]
) -> list[Chart]:
    """Draw every chart into ``out_dir`` (created) and return them in report order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    Draw = Callable[[Figure, list[Axes]], None]
    specs: list[tuple[str, str, int, float, Draw]] = [
        ("throughput", "Throughput over time", 1, 4.0, lambda f, a: _throughput(f, a, series)),
        (
            "latency_cdf",
            "Queued → bound latency (CDF)",
            1,
            4.0,
            lambda f, a: _latency_cdf(f, a, series),
        ),
        (
            "attempt_latency",
            "Scheduling attempt latency",
            1,
            4.0,
            lambda f, a: _attempt_histogram(f, a, series),
        ),
        (
            "node_utilisation",
            "Node utilisation (cpu, memory, pods)",
            3,
            6.0,
            lambda f, a: _utilisation_histogram(f, a, usage),
        ),
        (
            "node_utilisation_heatmap",
            "Node utilisation by zone",
            3,
            6.0,
            lambda f, a: _utilisation_heatmap(f, a, usage),
        ),
        (
            "unschedulable_reasons",
            "Unschedulable reasons",
            1,
            4.0,
            lambda f, a: _reasons(f, a, reasons),
        ),
    ]
    if series.spans_time:
        specs.append(
            (
                "utilisation_over_time",
                "Cluster utilisation over time",
                1,
                4.0,
                lambda f, a: _utilisation_over_time(f, a, series),
            )
        )
        specs.append(
            (
                "pending_over_time",
                "Pending pods over time",
                1,
                4.0,
                lambda f, a: _pending_over_time(f, a, series),
            )
        )
    charts: list[Chart] = []
    for name, title, rows, height, draw in specs:
        fig, axes = _figure(rows, height)
        fig.suptitle(title)
        draw(fig, axes)
        path = out_dir / f"{name}.png"
        _save(fig, path)
        charts.append(Chart(name, title, path))
    return charts
