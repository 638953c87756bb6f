"""The reprieve loop of SelectVictimsOnNode on resource arrays, for many nodes at once.

When NodeResourcesFit is the only active Filter whose verdict depends on the pods of a
node (``fitonly``), putting a victim back "passes every filter" exactly when the node
keeps room for one more pod and, per checked resource, free capacity >= the request:

    for each node i, for its victims v in reprieve order:
        trial = free[i] - req[v];  trial_room = room[i] - 1
        if trial_room >= 1 and all(trial >= amount)            # Filter without nominees
           and nom_room[i] - 1 >= 1 and all(nom_free[i] - req[v] >= amount):  # with them
            reprieved: free[i], room[i], nom_free[i], nom_room[i] take the pod
        else: v stays a victim

``nom_*`` hold the same node with its nominated pods of equal or higher priority added
(RunFilterPluginsWithNominatedPods' first pass); for a node without any they equal the
plain arrays, so the second test repeats the first.

Shapes: ``free``/``nom_free`` int64[k, m] (m checked resources), ``room``/``nom_room``
int64[k], ``amount`` int64[m], ``offsets`` int64[k + 1] (node i's victims are
``offsets[i]:offsets[i+1]``), ``req`` int64[V, m]. Answer: bool[V], True = reprieved.
The caller keeps every value within about +-2**62 (``fitonly`` declines rows whose pods'
or nominees' amounts reach 2**61), so no sum or difference here can wrap.

``reprieve`` is the numba kernel (node by node, one pass); ``reprieve_reference`` the
numpy reference (all nodes' j-th victims per step), which the tests compare it with.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["reprieve", "reprieve_reference", "warm_up"]


@njit(cache=True, nogil=True)
def _reprieve_kernel(free, room, nom_free, nom_room, amount, offsets, req, out):  # type: ignore[no-untyped-def]
    k, m = free.shape
    for i in range(k):
        r = room[i]
        rn = nom_room[i]
        for v in range(offsets[i], offsets[i + 1]):
            ok = r - 1 >= 1 and rn - 1 >= 1
            if ok:
                for c in range(m):
                    if free[i, c] - req[v, c] < amount[c] or nom_free[i, c] - req[v, c] < amount[c]:
                        ok = False
                        break
            if ok:
                for c in range(m):
                    free[i, c] -= req[v, c]
                    nom_free[i, c] -= req[v, c]
                r -= 1
                rn -= 1
            out[v] = ok


def reprieve(
    free: np.ndarray,
    room: np.ndarray,
    nom_free: np.ndarray,
    nom_room: np.ndarray,
    amount: np.ndarray,
    offsets: np.ndarray,
    req: np.ndarray,
) -> np.ndarray:
    """bool[V]: which victims are reprieved (the inputs are not modified)."""
    out = np.zeros(req.shape[0], dtype=np.bool_)
    _reprieve_kernel(
        np.array(free, dtype=np.int64, order="C"),
        np.array(room, dtype=np.int64),
        np.array(nom_free, dtype=np.int64, order="C"),
        np.array(nom_room, dtype=np.int64),
        np.ascontiguousarray(amount, dtype=np.int64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(req, dtype=np.int64).reshape(req.shape[0], free.shape[1]),
        out,
    )
    return out


def reprieve_reference(
    free: np.ndarray,
    room: np.ndarray,
    nom_free: np.ndarray,
    nom_room: np.ndarray,
    amount: np.ndarray,
    offsets: np.ndarray,
    req: np.ndarray,
) -> np.ndarray:
    """``reprieve`` in numpy: step j tries every node's j-th victim at once."""
    free, room = free.astype(np.int64), room.astype(np.int64)
    nom_free, nom_room = nom_free.astype(np.int64), nom_room.astype(np.int64)
    counts = np.diff(offsets)
    out = np.zeros(req.shape[0], dtype=np.bool_)
    for j in range(int(counts.max()) if len(counts) else 0):
        nodes = np.flatnonzero(counts > j)
        v = offsets[nodes] + j
        trial, trial_room = free[nodes] - req[v], room[nodes] - 1
        trial_nom, trial_nom_room = nom_free[nodes] - req[v], nom_room[nodes] - 1
        ok = (trial_room >= 1) & (trial >= amount).all(axis=1)
        ok &= (trial_nom_room >= 1) & (trial_nom >= amount).all(axis=1)
        take = nodes[ok]
        free[take], room[take] = trial[ok], trial_room[ok]
        nom_free[take], nom_room[take] = trial_nom[ok], trial_nom_room[ok]
        out[v[ok]] = True
    return out


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel before the first preemption."""
    one = np.zeros((1, 1), dtype=np.int64)
    reprieve(
        one, np.ones(1, np.int64), one, np.ones(1, np.int64), one[0], np.zeros(2, np.int64), one
    )
