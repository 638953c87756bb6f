"""Every piece of a NodeTable's state, for tests comparing two ways of reaching it."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.nodetable.table import NodeTable


def table_state(t: NodeTable) -> dict[str, Any]:
    """Every numpy column, the pods per row (and their order), the interners, the pod
    versions and the pod index."""
    out: dict[str, Any] = {}
    for name, value in vars(t).items():
        if isinstance(value, np.ndarray):
            out[name] = value.tolist()
    out["row_pods"] = [list(d.items()) for d in t.row_pods]
    out["resources"] = list(t.resources.values)
    out["ports"] = list(t.ports.values)
    out["pod_version"] = t.pod_version
    out["amount_bound_ceiling"] = t.amount_bound_ceiling
    out["index"] = [t.pod_index.pods_on(r) for r in range(t.size)]
    return out
