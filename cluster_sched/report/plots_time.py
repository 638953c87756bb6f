"""The report's charts over time: allocation, GPU share and fragmentation, pods by state,
nodes in use, why pods waited.

Every time axis is in the unit that fits the run's span (``series.time_unit``: seconds
to days) and says which clock it is on: simulated time for ``--clock virtual`` runs, the
wall clock otherwise. Ratios are drawn in percent and labelled so. Each ``draw_*``
function draws onto the axes it is given, so a test can read back what a chart plots.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cluster_sched.report.quality import RESOURCES
from cluster_sched.report.series import RunSeries, time_unit
from cluster_sched.report.waiting import WaitingSeries

__all__ = [
    "draw_extended_over_time",
    "draw_nodes_in_use",
    "draw_pods_over_time",
    "draw_utilisation_over_time",
    "draw_waiting_reasons",
    "time_label",
]

#: Colours of the pods-by-state chart.
STATE_COLOURS = {"pending": "#dd8452", "running": "#4c72b0", "left": "#8c8c8c"}


def time_label(span: float, virtual: bool) -> tuple[str, float]:
    """The x label of a time axis spanning ``span`` seconds, and seconds per unit."""
    unit, seconds = time_unit(span)
    clock = "simulated time" if virtual else "time"
    return f"{clock} since the first pod was queued ({unit})", seconds


def _note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


def _span(t: np.ndarray) -> float:
    return float(t[-1]) if len(t) else 0.0


def draw_utilisation_over_time(
    fig: Figure, axes: list[Axes], series: RunSeries, virtual: bool
) -> None:
    """Cluster requested / allocatable of every resource, in percent."""
    ax = axes[0]
    if len(series.utilisation_t) == 0:
        _note(ax, "no pod was bound")
        return
    label, seconds = time_label(_span(series.utilisation_t), virtual)
    for j, resource in enumerate(series.resources):
        ax.step(
            series.utilisation_t / seconds,
            series.utilisation[:, j] * 100,
            where="post",
            label=resource,
        )
    ax.set_xlabel(label)
    ax.set_ylabel("cluster requested / allocatable (%)")
    ax.set_ylim(0, 100)
    ax.legend(loc="best", fontsize="small")


def draw_extended_over_time(
    fig: Figure, axes: list[Axes], series: RunSeries, virtual: bool
) -> None:
    """Per extended resource (GPUs, GPU shares): the share of the cluster's capacity
    allocated, and the share left unallocated on partly allocated nodes (fragmented:
    free, yet only on nodes another pod already uses part of)."""
    extended = series.resources[len(RESOURCES) :]
    label, seconds = time_label(_span(series.utilisation_t), virtual)
    t = series.utilisation_t / seconds
    for e, (ax, resource) in enumerate(zip(axes, extended, strict=False)):
        j = len(RESOURCES) + e
        ax.step(t, series.utilisation[:, j] * 100, where="post", label="allocated", color="#55a868")
        ax.step(
            t,
            series.fragmentation[:, e] * 100,
            where="post",
            label="unallocated on partly used nodes",
            color="#c44e52",
        )
        ax.set_ylabel("% of capacity")
        ax.set_ylim(0, 100)
        ax.set_title(resource, fontsize=9, loc="left")
        ax.legend(loc="best", fontsize="small")
    axes[-1].set_xlabel(label)


def draw_pods_over_time(
    fig: Figure,
    axes: list[Axes],
    series: RunSeries,
    virtual: bool,
    running: tuple[np.ndarray, np.ndarray],
    left: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0)),
) -> None:
    """Pods pending (queued, not bound), running (bound) and, cumulatively, those that
    left their node (completed, or deleted)."""
    ax = axes[0]
    if len(series.pending_t) == 0:
        _note(ax, "no pod was queued")
        return
    run_t, run_v = running
    span = max(_span(series.pending_t), _span(run_t))
    label, seconds = time_label(span, virtual)
    ax.step(
        series.pending_t / seconds,
        series.pending,
        where="post",
        color=STATE_COLOURS["pending"],
        label="pending",
    )
    if len(run_t):
        ax.step(
            run_t / seconds, run_v, where="post", color=STATE_COLOURS["running"], label="running"
        )
    if len(left[0]):
        ax.step(
            left[0] / seconds,
            left[1],
            where="post",
            color=STATE_COLOURS["left"],
            label="completed or deleted (cumulative)",
        )
    ax.set_xlabel(label)
    ax.set_ylabel("pods")
    ax.legend(loc="best", fontsize="small")


def draw_nodes_in_use(
    fig: Figure, axes: list[Axes], used: tuple[np.ndarray, np.ndarray], n_nodes: int, virtual: bool
) -> None:
    ax = axes[0]
    t, v = used
    if len(t) == 0:
        _note(ax, "no pod was bound")
        return
    label, seconds = time_label(_span(t), virtual)
    ax.step(t / seconds, v, where="post", color="#8172b3")
    ax.axhline(n_nodes, color="#bbb", linewidth=0.8, linestyle="--")
    ax.set_ylim(0, max(n_nodes, 1) * 1.05)
    ax.set_xlabel(label)
    ax.set_ylabel(f"nodes holding a pod (of {n_nodes})")


def draw_waiting_reasons(
    fig: Figure, axes: list[Axes], waiting: WaitingSeries, virtual: bool
) -> None:
    """Pending pods stacked by the main reason of their latest failed attempt."""
    ax = axes[0]
    if len(waiting.t) == 0 or not waiting.reasons:
        _note(ax, "no scheduling attempt failed")
        return
    label, seconds = time_label(_span(waiting.t), virtual)
    labels = [r if len(r) <= 60 else r[:57] + "..." for r in waiting.reasons]
    ax.stackplot(waiting.t / seconds, waiting.counts.T, labels=labels, step="post")
    ax.set_xlabel(label)
    ax.set_ylabel("pending pods, by latest failure")
    ax.legend(loc="upper right", fontsize="x-small")
