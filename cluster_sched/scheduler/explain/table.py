"""The human view of ``explain``: nodes and their filter verdicts, the score breakdown
of the best nodes, and each plugin's result at the other extension points.

Readable at 80 columns: the node table has three columns (node, filter, final); scores
get their own table with one row per plugin and one column per node, as many nodes as
the console's width holds (at least one, ``--all`` or ``--top`` never cut a header:
long cells fold). Every piece of text from the cluster or a plugin is a ``rich.Text``,
never markup, so reasons such as ``waiting for scheduling gates: [example.com/gate]``
print as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cluster_sched.api.objects import Pod
from cluster_sched.scheduler.explain.decision import Explanation

#: Width a score column needs ("300 = 100x3" and a border).
SCORE_COLUMN_WIDTH = 15
#: Width kept for the plugin column of the score table.
PLUGIN_COLUMN_WIDTH = 24


def _rows(data: dict[str, Any]) -> list[str]:
    """Selected node first, then feasible by final score, then failing nodes by name."""
    final = data["finalScores"]
    feasible = [n for n, f in data["filter"].items() if f["code"] == "Success"]
    feasible.sort(key=lambda n: (n != data["selectedNode"], -final.get(n, 0), n))
    failing = sorted(n for n, f in data["filter"].items() if f["code"] != "Success")
    return feasible + failing


def _extender_line(entry: dict[str, Any]) -> str:
    """One extender's answers: kept and failed nodes, scores, errors."""
    parts = []
    if entry.get("interested") is False:
        parts.append("not interested in the pod")
    for step in ("filter", "prioritize", "preempt"):
        sec = entry.get(step)
        if sec is None:
            continue
        if "error" in sec:
            ignored = " (ignored)" if sec.get("ignored") else ""
            parts.append(f"{step}: error{ignored}: {sec['error']}")
        elif step == "filter":
            failed = {**sec["failedNodes"], **sec["failedAndUnresolvableNodes"]}
            why = "; ".join(f"{n}: {r}" for n, r in sorted(failed.items()))
            parts.append(
                f"filter kept {', '.join(sec['nodes']) or '-'}"
                + (f" (failed {why})" if why else "")
            )
        elif step == "prioritize":
            scores = ", ".join(f"{n}={v}" for n, v in sorted(sec["finalScores"].items()))
            parts.append(f"prioritize (weight {sec['weight']}): {scores or '-'}")
        else:
            kept = ", ".join(sorted(sec["nodeNameToVictims"]))
            parts.append(f"preempt kept {kept or '-'}")
    return f"extender {entry['urlPrefix']}: " + ("; ".join(parts) or "not called")


def _verdict(data: dict[str, Any], name: str) -> Text:
    """The attempt's verdict (first failure wins), then what the display-only pass saw:
    how many plugins passed, and the other plugins that would have failed too."""
    f = data["filter"][name]
    passed = data.get("passedPlugins", {}).get(name)
    per_plugin: Mapping[str, Any] = data.get("pluginResults", {}).get("filter", {}).get(name, {})
    if f["code"] == "Success":
        if passed is None:
            return Text("✓")
        skipped = sum(1 for st in per_plugin.values() if st["code"] == "Skip")
        return Text(f"✓ {len(passed)} passed" + (f", {skipped} skipped" if skipped else ""))
    plugin = f"{f['plugin']}: " if f.get("plugin") else ""  # absent nodes name none
    text = Text(f"{plugin}{', '.join(f['reasons'])} ({f['code']})")
    others = [
        p
        for p, st in per_plugin.items()
        if st["code"] not in ("Success", "Skip") and p != f.get("plugin")
    ]
    if others:
        text.append(f"\nalso failing: {', '.join(others)}")
    return text


def _score_table(data: dict[str, Any], nodes: list[str]) -> Table:
    weights: Mapping[str, int] = data.get("weights", {})
    scored = {p for per in data["scores"].values() for p in per}
    plugins = [p for p in weights if p in scored] + sorted(scored - set(weights))
    table = Table(title=Text("scores: weighted = normalised x weight"), title_justify="left")
    table.add_column("plugin", overflow="fold")
    for node in nodes:
        label = node + (" *" if node == data["selectedNode"] else "")
        table.add_column(Text(label), justify="right", overflow="fold")
    for p in plugins:
        cells: list[Text] = [Text(f"{p} x{weights.get(p, 1)}")]
        for node in nodes:
            norm = data["scores"].get(node, {}).get(p)
            raw = data["rawScores"].get(node, {}).get(p)
            if norm is None:
                cells.append(Text(""))
                continue
            weighted = data.get("weightedScores", {}).get(node, {}).get(p, norm)
            cell = f"{weighted} = {norm}x{weights.get(p, 1)}"
            cells.append(Text(cell if raw == norm else f"{cell}\nraw {raw}"))
        table.add_row(*cells)
    table.add_row(
        Text("final"), *(Text(str(data["finalScores"].get(n, ""))) for n in nodes), end_section=True
    )
    return table


def _point_line(point: str, results: Mapping[str, Any]) -> Text:
    """``PreFilter: passed A, B; skipped C; NodePorts: reason (Code)``."""
    passed = [p for p, st in results.items() if st["code"] == "Success"]
    skipped = [p for p, st in results.items() if st["code"] == "Skip"]
    parts = []
    if passed:
        parts.append("passed " + ", ".join(passed))
    if skipped:
        parts.append("skipped " + ", ".join(skipped))
    for p, st in results.items():
        if st["code"] in ("Success", "Skip"):
            continue
        reasons = ", ".join(st.get("reasons") or [])
        wait = f" {st['timeoutSeconds']:g}s" if "timeoutSeconds" in st else ""
        parts.append(f"{p}: {reasons + ' ' if reasons else ''}({st['code']}{wait})")
    return Text(f"{point}: " + ("; ".join(parts) or "no plugins"))


def render_table(
    result: Explanation,
    pod: Pod,
    *,
    show_all: bool = False,
    top: int = 20,
    console: Console | None = None,
) -> None:
    console = console or Console()
    data = result.json
    table = Table(title=Text(f"pod {pod.key}: selected node {data['selectedNode'] or '-'}"))
    table.add_column("node", overflow="fold")
    table.add_column("filter", overflow="fold")
    table.add_column("final", justify="right", no_wrap=True)
    names = _rows(data)
    shown = names if show_all else names[:top]
    for name in shown:
        final = data["finalScores"].get(name)
        label = name + (" *" if name == data["selectedNode"] else "")
        table.add_row(Text(label), _verdict(data, name), Text("" if final is None else str(final)))
    console.print(table)
    hidden = len(names) - len(shown)
    if hidden:
        console.print(Text(f"... {hidden} more nodes (use --all)"))
    console.print(
        Text(f"feasible {data['feasibleNodes']} of {data['evaluatedNodes']} evaluated nodes")
    )
    scored = [n for n in shown if n in data["scores"]]
    if scored:
        fit = max(1, (console.width - PLUGIN_COLUMN_WIDTH) // SCORE_COLUMN_WIDTH)
        console.print(_score_table(data, scored if show_all else scored[:fit]))
    plugin_results: Mapping[str, Any] = data.get("pluginResults", {})
    on = f" on {data['selectedNode']}" if data["selectedNode"] else ""
    for key, point in (
        ("preEnqueue", "PreEnqueue"),
        ("preFilter", "PreFilter"),
        ("preScore", "PreScore"),
        ("reserve", f"Reserve{on}"),
        ("permit", f"Permit{on}"),
    ):
        if key in plugin_results:
            console.print(_point_line(point, plugin_results[key]))
    if data.get("message"):
        console.print(Text(data["message"], style="bold red"))
    for entry in data.get("extenders", ()):
        console.print(Text(_extender_line(entry)))
    if "preemption" in data:
        pre = data["preemption"]
        console.print(
            Text(
                f"preemption: nominated node {pre['nominatedNode'] or '-'}; "
                f"victims: {', '.join(pre['victims']) or '-'}"
            )
        )
