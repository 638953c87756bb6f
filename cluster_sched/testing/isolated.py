"""Explain one pod with only some plugins enabled: how plugin tests read a plugin's
verdicts and scores without the rest of the default profile mixing in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.testing.builders import make_namespace


def explain_with_only(
    plugins: Sequence[str],
    objects: Sequence[Any],
    pod: Pod,
    args: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = 1,
) -> dict[str, Any]:
    """``explain``'s JSON for ``pod`` over ``objects`` (plus namespace "default") with a
    profile of PrioritySort, ``plugins`` and DefaultBinder; ``args`` by plugin name."""
    cache = Cache()
    cache.load([make_namespace("default"), *objects])
    profile: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {
                "enabled": [{"name": n} for n in ("PrioritySort", *plugins, "DefaultBinder")],
                "disabled": [{"name": "*"}],
            }
        },
    }
    if args:
        profile["pluginConfig"] = [{"name": name, "args": dict(a)} for name, a in args.items()]
    cfg = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [profile],
        }
    )
    return explain(cache, pod, cfg, seed=seed).json
