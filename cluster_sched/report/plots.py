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

from cluster_sched.report.plots_time import (
    draw_extended_over_time,
    draw_nodes_in_use,
    draw_pods_over_time,
    draw_utilisation_over_time,
    draw_waiting_reasons,
    time_label,
)
from cluster_sched.report.quality import RESOURCES, NodeUsage
from cluster_sched.report.series import RunSeries, time_unit
from cluster_sched.report.waiting import WaitingSeries

__all__ = ["Chart", "PlotContext", "new_figure", "save_png", "write_plots"]

#: Size (inches) and resolution of every chart.
FIGSIZE = (8.0, 4.5)
DPI = 100
#: Longest reason label drawn in the reasons chart (longer ones are cut with "...").
MAX_LABEL = 70
#: Most reasons drawn (the rest are in summary.json).
MAX_REASONS = 15


@dataclass(frozen=True, slots=True)
class PlotContext:
    """What the charts need beside the series and the node usage."""

    #: simulated time (``--clock virtual``): time axes and latencies are simulated, the
    #: attempt latency is simulation speed
    virtual: bool = False
    #: pending pods by the reason of their latest failure, over the run
    waiting: WaitingSeries | None = None
    #: failed attempts by main reason (the reasons chart when every pod ended bound)
    failed_by_reason: Mapping[str, int] | None = None
    #: nodes holding a pod, as a step function
    nodes_in_use: tuple[np.ndarray, np.ndarray] | None = None
    #: pods bound, as a step function
    running: tuple[np.ndarray, np.ndarray] | None = None
    #: pods that left their node so far, as a step function
    left: tuple[np.ndarray, np.ndarray] | None = None
    #: what the node usage charts show ("at the end of the run", "at peak cpu ...")
    usage_when: str = "at the end of the run"


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


def _throughput(fig: Figure, axes: list[Axes], series: RunSeries, ctx: PlotContext) -> None:
    ax = axes[0]
    starts, rate, width = series.throughput()
    if len(rate) == 0:
        _note(ax, "no pod was bound")
        return
    label, seconds = time_label(float(series.bind_times[-1]), ctx.virtual)
    unit, _ = time_unit(float(series.bind_times[-1]))
    ax.bar(starts / seconds, rate * seconds, width=width / seconds, align="edge", color="#4c72b0")
    ax.set_xlabel(label)
    per = "simulated " + unit if ctx.virtual else unit
    ax.set_ylabel(f"pods bound per {per}")


def _latency_cdf(fig: Figure, axes: list[Axes], series: RunSeries, ctx: PlotContext) -> None:
    ax = axes[0]
    lat = series.latency_ms
    if len(lat) == 0:
        _note(ax, "no pod was bound")
        return
    if ctx.virtual:
        # Scheduling takes no simulated time: the latency is how long a pod waited.
        waited = lat[lat > 0] / 1e3
        if len(waited) == 0:
            _note(ax, f"all {len(lat)} pods were bound the moment they arrived (no wait)")
            return
        unit, seconds = time_unit(float(waited[-1]))
        y = np.arange(1, len(waited) + 1) / len(waited)
        ax.step(waited / seconds, y, where="post", color="#4c72b0")
        if waited[-1] / waited[0] > 100:
            ax.set_xscale("log")
        ax.set_xlabel(f"pending time, simulated ({unit})")
        ax.set_ylabel("fraction of the pods that waited")
        ax.set_title(
            f"{len(waited)} of {len(lat)} pods waited; the others were bound on arrival",
            fontsize=9,
            loc="left",
        )
    else:
        y = np.arange(1, len(lat) + 1) / len(lat)
        ax.step(lat, y, where="post", color="#4c72b0")
        if lat[0] > 0 and lat[-1] / lat[0] > 100:
            ax.set_xscale("log")
        ax.set_xlabel("queued → bound latency (ms)")
        ax.set_ylabel("fraction of pods")
    for q in (0.5, 0.9, 0.99):
        ax.axhline(q, color="#bbb", linewidth=0.8, linestyle="--")
    ax.set_ylim(0, 1.02)


def _attempt_histogram(fig: Figure, axes: list[Axes], series: RunSeries, ctx: PlotContext) -> None:
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
    if ctx.virtual:
        ax.set_xlabel("scheduling attempt, wall clock (ms): simulation speed, not simulated time")
    else:
        ax.set_xlabel("scheduling attempt (ms)")
    ax.set_ylabel("attempts")


def _utilisation_histogram(fig: Figure, axes: list[Axes], usage: NodeUsage) -> None:
    util = usage.utilisation
    for j, (ax, resource) in enumerate(zip(axes, usage.resources, strict=True)):
        if len(util) == 0:
            _note(ax, "no node")
            continue
        ax.hist(util[:, j] * 100, bins=np.linspace(0, 100, 41).tolist(), color="#8172b3")
        ax.set_ylabel(f"nodes ({resource})", fontsize=8)
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
    for j, (ax, resource) in enumerate(zip(axes, usage.resources, strict=True)):
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


def _reasons(fig: Figure, axes: list[Axes], reasons: Mapping[str, int], ctx: PlotContext) -> None:
    ax = axes[0]
    failed = dict(ctx.failed_by_reason or {})
    if not reasons and not failed:
        _note(ax, "every pod was scheduled at its first attempt")
        return
    what = "unschedulable pods giving this reason (last attempt)"
    if not reasons:
        # every pod ended bound, but some waited: why their attempts failed
        reasons = failed
        what = "failed attempts giving this reason (every pod was bound in the end)"
    items = list(reasons.items())[:MAX_REASONS][::-1]
    labels = [r if len(r) <= MAX_LABEL else r[: MAX_LABEL - 3] + "..." for r, _ in items]
    ax.barh(range(len(items)), [c for _, c in items], height=0.6, color="#c44e52")
    ax.set_yticks(range(len(items)), labels, fontsize=8)
    ax.set_ylim(-0.7, max(len(items), 3) - 0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(what)


def _save(fig: Figure, path: Path) -> None:
    # no Software metadata: it carries a URL, and the report names none
    fig.savefig(path, format="png", metadata={"Software": None})


def new_figure(rows: int = 1, height: float = FIGSIZE[1]) -> tuple[Figure, list[Axes]]:
    """A blank chart of the report's size on its own Agg canvas (compare's overlays)."""
    return _figure(rows, height)


def save_png(fig: Figure, path: Path) -> None:
    _save(fig, path)


def write_plots(
    out_dir: Path,
    series: RunSeries,
    usage: NodeUsage,
    reasons: Mapping[str, int],
    ctx: PlotContext | None = None,
) -> list[Chart]:
    """Draw every chart into ``out_dir`` (created) and return them in report order."""
    ctx = ctx or PlotContext()
    out_dir.mkdir(parents=True, exist_ok=True)
    Draw = Callable[[Figure, list[Axes]], None]
    rows = len(usage.resources)
    extended = series.resources[len(RESOURCES) :]
    lat_title = "Pending time (simulated), CDF" if ctx.virtual else "Queued → bound latency (CDF)"
    specs: list[tuple[str, str, int, float, Draw]] = [
        (
            "throughput",
            "Throughput over time",
            1,
            4.0,
            lambda f, a: _throughput(f, a, series, ctx),
        ),
        ("latency_cdf", lat_title, 1, 4.0, lambda f, a: _latency_cdf(f, a, series, ctx)),
        (
            "attempt_latency",
            "Scheduling attempt latency" + (" (simulation speed)" if ctx.virtual else ""),
            1,
            4.0,
            lambda f, a: _attempt_histogram(f, a, series, ctx),
        ),
        (
            "node_utilisation",
            f"Node utilisation {ctx.usage_when} ({', '.join(usage.resources)})",
            rows,
            2.0 * rows,
            lambda f, a: _utilisation_histogram(f, a, usage),
        ),
        (
            "node_utilisation_heatmap",
            f"Node utilisation by zone {ctx.usage_when}",
            rows,
            2.0 * rows,
            lambda f, a: _utilisation_heatmap(f, a, usage),
        ),
        (
            "unschedulable_reasons",
            "Unschedulable reasons" if reasons or not ctx.failed_by_reason else "Why pods waited",
            1,
            4.0,
            lambda f, a: _reasons(f, a, reasons, ctx),
        ),
    ]
    if series.spans_time:
        specs.append(
            (
                "utilisation_over_time",
                "Cluster allocation over time",
                1,
                4.0,
                lambda f, a: draw_utilisation_over_time(f, a, series, ctx.virtual),
            )
        )
        if extended:
            specs.append(
                (
                    "extended_over_time",
                    "Extended resources (GPUs): allocated and fragmented over time",
                    len(extended),
                    3.0 * len(extended) + 1.0,
                    lambda f, a: draw_extended_over_time(f, a, series, ctx.virtual),
                )
            )
        specs.append(
            (
                "pending_over_time",
                "Pods pending, running and done over time",
                1,
                4.0,
                lambda f, a: draw_pods_over_time(
                    f,
                    a,
                    series,
                    ctx.virtual,
                    ctx.running or (np.zeros(0), np.zeros(0)),
                    ctx.left or (np.zeros(0), np.zeros(0)),
                ),
            )
        )
        if ctx.nodes_in_use is not None:
            used = ctx.nodes_in_use
            specs.append(
                (
                    "nodes_in_use",
                    "Nodes in use over time",
                    1,
                    4.0,
                    lambda f, a: draw_nodes_in_use(f, a, used, len(usage.names), ctx.virtual),
                )
            )
        if ctx.waiting is not None and ctx.waiting.reasons:
            waiting = ctx.waiting
            specs.append(
                (
                    "waiting_reasons_over_time",
                    "Why pods were pending, over time",
                    1,
                    4.5,
                    lambda f, a: draw_waiting_reasons(f, a, waiting, ctx.virtual),
                )
            )
    charts: list[Chart] = []
    for name, title, n_rows, height, draw in specs:
        fig, axes = _figure(n_rows, height)
        fig.suptitle(title)
        draw(fig, axes)
        path = out_dir / f"{name}.png"
        _save(fig, path)
        charts.append(Chart(name, title, path))
    return charts
