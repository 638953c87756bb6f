"""``cluster-sched get`` for the resource.k8s.io kinds, with kubectl's columns:
resourceclaims NAME STATE AGE (state ``pending``, ``allocated``, ``allocated,reserved``,
``deleted`` first when being deleted), resourceslices NAME NODE DRIVER POOL AGE,
deviceclasses and resourceclaimtemplates NAME AGE."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from cluster_sched.workload.inspect_render import _meta, _section, age

__all__ = ["DRA_RESOURCES", "dra_rows"]

#: kubectl's names (plural, singular, short) -> the kind
DRA_RESOURCES = {
    "resourceclaims": "ResourceClaim",
    "resourceclaim": "ResourceClaim",
    "resourceslices": "ResourceSlice",
    "resourceslice": "ResourceSlice",
    "deviceclasses": "DeviceClass",
    "deviceclass": "DeviceClass",
    "resourceclaimtemplates": "ResourceClaimTemplate",
    "resourceclaimtemplate": "ResourceClaimTemplate",
}
NAMESPACED = frozenset({"ResourceClaim", "ResourceClaimTemplate"})


def _claim_state(doc: Mapping[str, Any]) -> str:
    status = _section(doc, "status")
    states = []
    if _meta(doc).get("deletionTimestamp"):
        states.append("deleted")
    if status.get("allocation"):
        states.append("allocated")
    if status.get("reservedFor"):
        states.append("reserved")
    return ",".join(states) or "pending"


def dra_rows(
    kind: str, docs: Sequence[Mapping[str, Any]], now: datetime, *, namespaces: bool
) -> list[list[str]]:
    header = ["NAME"]
    if kind == "ResourceClaim":
        header += ["STATE"]
    elif kind == "ResourceSlice":
        header += ["NODE", "DRIVER", "POOL"]
    header += ["AGE"]
    show_ns = namespaces and kind in NAMESPACED
    rows = [["NAMESPACE", *header] if show_ns else header]
    for doc in docs:
        meta = _meta(doc)
        row = [str(meta.get("namespace", ""))] if show_ns else []
        row.append(str(meta.get("name", "")))
        if kind == "ResourceClaim":
            row.append(_claim_state(doc))
        elif kind == "ResourceSlice":
            spec = _section(doc, "spec")
            row += [
                str(spec.get("nodeName") or "<none>"),
                str(spec.get("driver", "")),
                str(_section(spec, "pool").get("name", "")),
            ]
        row.append(age(meta.get("creationTimestamp"), now))
        rows.append(row)
    return rows
