"""VolumeBinding's FindPodVolumes, vectorised over node rows.

PreFilter (on the coordinator, which has the listers) turns the pod's claims into a
``ClaimsState``: each bound claim's PV node affinity, and for each unbound
WaitForFirstConsumer claim the PVs that could bind it (everything FindMatchingVolume
checks that does not depend on the node) plus what dynamic provisioning would need.
``find_pod_volumes`` then answers for many rows at once, looping over claims and PVs,
never over nodes:

- bound claims in order: a PV whose affinity rejects the node stops the scan with
  "volume node affinity conflict"; a missing PV stops it with "non-existent pv(s)";
- a claim carrying the selected-node annotation for another node fails the node at once;
- the others, smallest request first, each take per node the PV pre-bound to them (whose
  affinity decides alone) or else the smallest matching PV not taken by an earlier claim
  on that node;
- claims left without a PV (and annotated ones) must be provisionable there: a real
  provisioner and the node inside the class's allowedTopologies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import NodeSelector
from cluster_sched.api.selectors import label_selector_matches
from cluster_sched.api.storage import (
    ANN_SELECTED_NODE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    NOT_SUPPORTED_PROVISIONER,
    PersistentVolume,
    PersistentVolumeClaim,
    TopologySelectorTerm,
)
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.volume_listers import VolumeListers
from cluster_sched.plugins._storage import pv_affinity_mask, topology_mask

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "REASONS",
    "BoundClaim",
    "Candidate",
    "ClaimsState",
    "Found",
    "UnboundClaim",
    "candidates_for",
    "find_pod_volumes",
    "is_delay_binding",
    "local_node_names",
]

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
#: bit -> reason, in the order upstream appends them
REASONS = (
    (1, ERR_REASON_NODE_CONFLICT),
    (2, ERR_REASON_BIND_CONFLICT),
    (4, ERR_REASON_NOT_ENOUGH_SPACE),
    (8, ERR_REASON_PV_NOT_EXIST),
)
_NODE, _BIND, _MISSING = 1, 2, 8
_HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class BoundClaim:
    claim: str
    pv_name: str
    found: bool
    affinity: NodeSelector | None


@dataclass(frozen=True, slots=True)
class Candidate:
    pv_name: str
    capacity: int
    affinity: NodeSelector | None
    #: the PV's claimRef names this claim (pre-bound, or assumed by an earlier pod)
    prebound: bool


@dataclass(frozen=True, slots=True)
class UnboundClaim:
    claim: str
    uid: str
    request: int
    class_name: str
    selected_node: str | None
    #: PVs that may bind it, smallest first (node affinity not checked yet)
    candidates: tuple[Candidate, ...]
    provisioner: str
    allowed_topologies: tuple[TopologySelectorTerm, ...]


@dataclass(frozen=True, slots=True)
class ClaimsState:
    bound: tuple[BoundClaim, ...]
    #: unbound WaitForFirstConsumer claims, in the pod's volume order
    unbound: tuple[UnboundClaim, ...]


@dataclass(frozen=True, slots=True)
class Found:
    """Per node (k rows): ``reasons`` int8[k] bit set (see REASONS); for unbound claim i,
    ``chosen[i]`` int32[k] the index of its candidate PV (-1: none) and
    ``provision[i]`` bool[k] whether it would be dynamically provisioned."""

    reasons: np.ndarray
    chosen: np.ndarray
    provision: np.ndarray


def is_delay_binding(listers: VolumeListers, pvc: PersistentVolumeClaim) -> bool:
    """volume.IsDelayBindingMode (an unknown or empty class binds immediately)."""
    class_name = pvc.class_name
    sc = listers.storage_class(class_name) if class_name else None
    return sc is not None and sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER


def _bound_to(pv: PersistentVolume, pvc: PersistentVolumeClaim, claim_ref: object) -> bool:
    """IsVolumeBoundToClaim, against ``claim_ref`` (the PV's, or the assumed one)."""
    ref = claim_ref
    if ref is None:
        return False
    if ref.name != pvc.name or ref.namespace != pvc.namespace:  # type: ignore[attr-defined]
        return False
    return not ref.uid or ref.uid == pvc.meta.uid  # type: ignore[attr-defined]


def candidates_for(
    listers: VolumeListers, pvc: PersistentVolumeClaim, assumed: dict[str, object]
) -> tuple[Candidate, ...]:
    """FindMatchingVolume's node-independent checks over the claim's class, in order.
    ``assumed`` maps PV names to the claimRef an earlier Reserve assumed for them."""
    out = []
    for pv in listers.pvs_of_class(pvc.class_name):
        ref = assumed.get(pv.name, pv.claim_ref)
        prebound = _bound_to(pv, pvc, ref)
        if ref is not None and not prebound:
            continue
        if pv.capacity < pvc.request or pv.volume_mode != pvc.volume_mode:
            continue
        if pv.meta.deletion_timestamp is not None:
            continue
        if not prebound:
            if pv.phase != "Available":
                continue
            if pvc.selector is not None and not label_selector_matches(
                pvc.selector, pv.meta.labels
            ):
                continue
            if not set(pvc.access_modes) <= set(pv.access_modes):
                continue
        out.append(Candidate(pv.name, pv.capacity, pv.node_affinity, prebound))
    return tuple(out)


def provisioner_of(listers: VolumeListers, pvc: PersistentVolumeClaim) -> tuple[str, tuple]:
    sc = listers.storage_class(pvc.class_name)
    if sc is None:
        return "", ()
    return sc.provisioner, sc.allowed_topologies


def selected_node(pvc: PersistentVolumeClaim) -> str | None:
    return pvc.meta.annotations.get(ANN_SELECTED_NODE)


def local_node_names(pv: PersistentVolume) -> set[str] | None:
    """util.GetLocalPersistentVolumeNodeNames: hostnames the PV's terms pin it to."""
    if pv.node_affinity is None:
        return None
    result: set[str] = set()
    for term in pv.node_affinity.terms:
        nodes: set[str] | None = None
        for req in term.match_expressions:
            if req.key == _HOSTNAME and req.operator == "In":
                vals = set(req.values)
                nodes = vals if nodes is None else nodes & vals
        result |= nodes or set()
    return result or None


def _unused(mask: np.ndarray, used: dict[str, np.ndarray], pv_name: str) -> np.ndarray:
    """``mask`` without the rows where an earlier claim of the pod took ``pv_name``."""
    taken = used.get(pv_name)
    return mask.copy() if taken is None else mask & ~taken


def find_pod_volumes(nodes: NodeSlice, s: ClaimsState) -> Found:
    """FindPodVolumes for every row of ``nodes`` (see the module docstring)."""
    table, k = nodes.table, len(nodes)
    reasons = np.zeros(k, dtype=np.int8)
    decided = np.zeros(k, dtype=bool)
    for b in s.bound:
        if not b.found:
            reasons[~decided] |= _MISSING
            break
        bad = ~nodes.take(pv_affinity_mask(table, b.affinity)) & ~decided
        reasons[bad] |= _NODE
        decided |= bad
    n = len(s.unbound)
    chosen = np.full((n, k), -1, dtype=np.int32)
    provision = np.zeros((n, k), dtype=bool)
    if not n:
        return Found(reasons, chosen, provision)
    live = np.ones(k, dtype=bool)
    for c in s.unbound:
        if c.selected_node is not None:
            row = table.index.get(c.selected_node, -1)
            live &= np.asarray(nodes.rows) == row
    reasons[~live] |= _BIND
    need = np.zeros((n, k), dtype=bool)
    used: dict[str, np.ndarray] = {}
    order = sorted(
        (i for i, c in enumerate(s.unbound) if c.selected_node is None),
        key=lambda i: s.unbound[i].request,
    )
    for i in range(n):
        if s.unbound[i].selected_node is not None:
            need[i] = live
    for i in order:
        c = s.unbound[i]
        pick = chosen[i]
        open_ = live.copy()
        for j, cand in enumerate(c.candidates):
            if cand.prebound and open_.any():
                here = _unused(open_, used, cand.pv_name)
                fits = nodes.take(pv_affinity_mask(table, cand.affinity))
                pick[here & fits] = j
                open_ &= ~here
        for j, cand in enumerate(c.candidates):
            if not open_.any():
                break
            if not cand.prebound:
                ok = _unused(open_, used, cand.pv_name)
                ok &= nodes.take(pv_affinity_mask(table, cand.affinity))
                pick[ok] = j
                open_ &= ~ok
        for j in np.unique(pick[pick >= 0]).tolist():
            name = c.candidates[j].pv_name
            used[name] = used.get(name, np.zeros(k, dtype=bool)) | (pick == j)
        need[i] = live & (pick < 0)
    for i, c in enumerate(s.unbound):
        if not need[i].any():
            continue
        if c.provisioner in ("", NOT_SUPPORTED_PROVISIONER):
            ok = np.zeros(k, dtype=bool)
        else:
            ok = nodes.take(topology_mask(table, c.allowed_topologies))
        reasons[need[i] & ~ok] |= _BIND
        provision[i] = need[i] & ok
    return Found(reasons, chosen, provision)
