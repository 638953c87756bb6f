"""The compare report's overlays: an axes no run put a value on says so in words
instead of drawing matplotlib's bare -0.04..0.04 range."""

from __future__ import annotations

from cluster_sched.report.compare_render import finish_overlay_axes
from cluster_sched.report.plots import new_figure


def test_an_overlay_without_points_says_so() -> None:
    _, (ax,) = new_figure()
    ax.plot([], [], label="a: no pod waited")
    assert finish_overlay_axes(ax, "no pod waited in any run") == "empty"
    assert [t.get_text() for t in ax.texts] == ["no pod waited in any run"]
    assert ax.get_ylim() == (0.0, 1.0)
    assert list(ax.get_yticks()) == []


def test_a_flat_zero_line_starts_at_zero() -> None:
    _, (ax,) = new_figure()
    ax.step([0.0, 5.0, 9.0], [0, 0, 0], where="post")
    assert finish_overlay_axes(ax, "no pod was pending in any run") == "zero"
    assert ax.get_ylim() == (0.0, 1.0)
    assert len(ax.texts) == 0


def test_data_keeps_matplotlib_limits() -> None:
    _, (ax,) = new_figure()
    ax.step([0.0, 5.0, 9.0], [0, 3, 1], where="post")
    before = tuple(float(v) for v in ax.get_ylim())
    assert finish_overlay_axes(ax, "unused") == "data"
    assert tuple(float(v) for v in ax.get_ylim()) == before
    assert len(ax.texts) == 0
