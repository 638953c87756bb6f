"""The human view of ``explain``: nodes by plugins, best nodes first."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from cluster_sched.api.objects import Pod
from cluster_sched.scheduler.explain import Explanation


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
    plugins = sorted({p for scores in data["scores"].values() for p in scores})
    table = Table(title=f"pod {pod.key}: selected node {data['selectedNode'] or '-'}")
    table.add_column("node")
    table.add_column("filter")
    for p in plugins:
        table.add_column(p, justify="right")
    table.add_column("final", justify="right")
    names = _rows(data)
    shown = names if show_all else names[:top]
    for name in shown:
        f = data["filter"][name]
        plugin = f"{f['plugin']}: " if f.get("plugin") else ""  # absent nodes name none
        verdict = (
            "✓" if f["code"] == "Success" else f"{plugin}{', '.join(f['reasons'])} ({f['code']})"
        )
        cells = [name + (" *" if name == data["selectedNode"] else ""), verdict]
        for p in plugins:
            raw = data["rawScores"].get(name, {}).get(p)
            norm = data["scores"].get(name, {}).get(p)
            cells.append("" if norm is None else (f"{norm}" if raw == norm else f"{norm} ({raw})"))
        final = data["finalScores"].get(name)
        cells.append("" if final is None else str(final))
        table.add_row(*cells)
    console.print(table)
    hidden = len(names) - len(shown)
    if hidden:
        console.print(f"... {hidden} more nodes (use --all)")
    console.print(
        f"feasible {data['feasibleNodes']} of {data['evaluatedNodes']} evaluated nodes; scores shown as normalised (raw)"
    )
    if data.get("message"):
        console.print(f"[bold red]{data['message']}[/]")
    for entry in data.get("extenders", ()):
        console.print(_extender_line(entry))
    if "preemption" in data:
        pre = data["preemption"]
        console.print(
            f"preemption: nominated node {pre['nominatedNode'] or '-'}; victims: {', '.join(pre['victims']) or '-'}"
        )
