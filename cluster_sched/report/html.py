"""report.html: one self-contained page, the charts embedded as base64 PNG.

The page references nothing outside itself (no script, stylesheet, font or image URL), so
it opens the same from a laptop, a CI artifact or an air-gapped machine. All text taken
from the run (pod names, messages, the configuration) is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from cluster_sched.report.plots import Chart

__all__ = ["figure_html", "page_style", "render_html", "table_html"]

#: Unschedulable pods listed in the page (all of them are in summary.json).
MAX_LISTED_PODS = 50

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(32em, 1fr)); gap: 1em; }
figure { margin: 0; } figure img { width: 100%; border: 1px solid #eee; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
.muted { color: #666; }
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _cell(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f'<td class="n">{_e(value)}</td>'
    return f"<td>{_e(value)}</td>"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table>{f'<tr>{head}</tr>' if head else ''}{body}</table>"


def table_html(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    classes: Sequence[Sequence[str]] | None = None,
) -> str:
    """A table (escaped); ``classes[i][j]`` adds CSS classes to cell (i, j)."""
    if classes is None:
        return _table(header, rows)
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{_e(c)}">{_e(v)}</td>' if c else _cell(v)
            for v, c in zip(row, cls, strict=True)
        )
        + "</tr>"
        for row, cls in zip(rows, classes, strict=True)
    )
    return f"<table>{f'<tr>{head}</tr>' if head else ''}{body}</table>"


def page_style() -> str:
    """The report's stylesheet (inlined: the pages reference nothing outside)."""
    return _STYLE


def figure_html(chart: Chart) -> str:
    """A chart embedded as a base64 PNG."""
    return _figure(chart)


def _overview(s: Mapping[str, Any]) -> str:
    lat, att = s["latency_ms"], s["attempt_latency_ms"]
    if s.get("clock") == "virtual":
        # scheduling takes no simulated time; wall-clock figures are simulation speed
        sim = s.get("simulation_speed") or {}
        vt = s.get("virtual_time") or {}
        timing = [
            ("throughput (pods per simulated s)", s["throughput"]),
            ("simulated (s)", s["duration_s"]),
            (
                "pending time p50 / p90 / p99 (simulated s)",
                f"{lat['p50'] / 1e3:g} / {lat['p90'] / 1e3:g} / {lat['p99'] / 1e3:g}",
            ),
            (
                "completed / running at the end",
                f"{vt.get('completions', '')} / {vt.get('running_at_end', '')}",
            ),
            (
                "simulation speed (wall clock)",
                f"{sim.get('pods_per_wall_second', '')} pods/s, attempt p50 {att['p50']} ms, "
                f"{sim.get('cpu_us_per_pod', '')} µs CPU per pod, "
                f"{sim.get('wall_seconds', '')} s",
            ),
        ]
    else:
        timing = [
            ("throughput (pods/s)", s["throughput"]),
            ("duration (s)", s["duration_s"]),
            ("queued → bound p50 / p90 / p99 (ms)", f"{lat['p50']} / {lat['p90']} / {lat['p99']}"),
            ("attempt p50 / p90 / p99 (ms)", f"{att['p50']} / {att['p90']} / {att['p99']}"),
        ]
    rows = [
        ("workload", s.get("workload", "")),
        ("nodes / pods", f"{s.get('nodes', '')} / {s.get('pods', '')}"),
        ("scheduled", s["scheduled"]),
        ("unschedulable", s["unschedulable"]),
        ("preempted", s["preempted"]),
        *timing,
        ("seed", s.get("seed")),
        ("config file", s.get("config_file") or "(defaults)"),
        ("cluster-sched version", s.get("version", "")),
    ]
    return _table((), rows)


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value / 1000:g} cores"
    return f"{value / 2**30:.2f} GiB"


def _placement(p: Mapping[str, Any]) -> str:
    when = p.get("when", "end of the run")
    at = f", {p['at_seconds']:g} s simulated" if "at_seconds" in p else ""
    out = [
        f"<p>At the {_e(when)}{_e(at)}: {_e(p['nodes_used'])} of {_e(p['nodes_total'])} "
        "nodes used.</p>"
    ]
    rows = []
    for resource in p["utilisation"]:
        every, used = p["utilisation"][resource], p["utilisation_used_nodes"][resource]
        cells = [_pct(d[q]) for d in (every, used) for q in ("mean", "p50", "p90")]
        rows.append((resource, *cells, p["imbalance"][resource]))
    header = ("utilisation", "mean", "p50", "p90", "used nodes: mean", "p50", "p90")
    out.append(_table((*header, "imbalance (CV)"), rows))
    frag = p["fragmentation"]
    rows = [
        (r, _amount(r, frag[r]["free"]), _amount(r, frag[r]["stranded"]), _pct(frag[r]["fraction"]))
        for r in ("cpu", "memory")
    ]
    out.append(_table(("fragmentation", "free", "stranded", "stranded share"), rows))
    out.append(
        f'<p class="muted">Stranded: free capacity on nodes where none of the '
        f"{_e(frag['shapes'])} request shapes of {_e(frag['shapes_from'])} fits.</p>"
    )
    extended = p.get("extended") or {}
    if extended:
        out.append(
            _table(
                (
                    "extended resource",
                    "capacity",
                    "allocated",
                    "unallocated on partly used nodes",
                    "partly used nodes",
                ),
                [
                    (
                        r,
                        e["capacity"],
                        _pct(e["allocated"]),
                        _pct(e["unallocated_on_partly_used_nodes"]),
                        e["partly_used_nodes"],
                    )
                    for r, e in extended.items()
                ],
            )
        )
    spread = p["topology_spread"]
    if spread:
        out.append(
            _table(
                (
                    "namespace",
                    "topologyKey",
                    "selector",
                    "maxSkew",
                    "when",
                    "pods",
                    "domains",
                    "skew",
                ),
                [
                    (
                        r["namespace"],
                        r["topology_key"],
                        r["selector"],
                        r["max_skew"],
                        r["when_unsatisfiable"],
                        r["pods"],
                        r["domains"],
                        r["skew"],
                    )
                    for r in spread
                ],
            )
        )
    return "".join(out)


def _groups(groups: Mapping[str, Mapping[str, Any]]) -> str:
    # Virtual-time runs count the pods whose lifetime ended apart from other deletions.
    completed = any("completed" in g for g in groups.values())
    rows = [
        (
            name,
            g["pods"],
            g["scheduled"],
            g["unschedulable"],
            *((g.get("completed", 0),) if completed else ()),
            g["deleted"],
            g["latency_ms"]["p50"],
            g["latency_ms"]["p99"],
            g["attempts_per_pod"],
        )
        for name, g in groups.items()
    ]
    header: tuple[str, ...] = ("group", "pods", "scheduled", "unschedulable")
    header += ("completed",) if completed else ()
    header += ("deleted", "p50 ms", "p99 ms")
    return _table((*header, "attempts/pod"), rows)


def _unschedulable(s: Mapping[str, Any]) -> str:
    pods = s.get("unschedulable_pods") or []
    waiting = s.get("waiting") or {}
    if not pods and waiting.get("pods_waited"):
        pending = waiting["pending_seconds"]
        return (
            f"<p>Every pod was bound in the end, but {_e(waiting['pods_waited'])} pods "
            f"waited: {_e(waiting['failed_attempts'])} failed attempts (up to "
            f"{_e(waiting['max_attempts'])} for one pod); pending time p50 "
            f"{_e(pending['p50'])} s, p99 {_e(pending['p99'])} s, max {_e(pending['max'])} s.</p>"
            + _table(
                ("reason of a failed attempt", "attempts"),
                list(waiting["failed_attempts_by_reason"].items()),
            )
        )
    if not pods:
        return "<p>Every pod was scheduled at its first attempt.</p>"
    out = [_table(("reason", "pods"), list(s["unschedulable_reasons"].items()))]
    shown = pods[:MAX_LISTED_PODS]
    out.append(
        _table(
            ("pod", "group", "last FailedScheduling message"),
            [(p["pod"], p["group"], p["message"]) for p in shown],
        )
    )
    if len(pods) > len(shown):
        out.append(f'<p class="muted">{len(pods) - len(shown)} more in summary.json.</p>')
    return "".join(out)


def _figure(chart: Chart) -> str:
    data = base64.b64encode(chart.path.read_bytes()).decode("ascii")
    return (
        f'<figure id="{_e(chart.name)}"><img alt="{_e(chart.title)}" '
        f'src="data:image/png;base64,{data}"></figure>'
    )


def render_html(summary: Mapping[str, Any], charts: Sequence[Chart]) -> str:
    """The whole page for a run's summary (with the report's keys) and its charts."""
    title = f"cluster-sched run: {summary.get('workload', '')}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        "<h2>Run</h2>",
        _overview(summary),
        "<h2>Placement quality</h2>",
        _placement(summary["placement"]),
        "<h2>Pod groups</h2>",
        _groups(summary["groups"]),
        "<h2>Unschedulable pods</h2>",
        _unschedulable(summary),
        "<h2>Charts</h2>",
        '<div class="charts">',
        *(_figure(c) for c in charts),
        "</div>",
        "<h2>Configuration (as loaded)</h2>",
        f"<details><summary>KubeSchedulerConfiguration</summary><pre>"
        f"{_e(json.dumps(summary.get('config'), indent=1))}</pre></details>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
