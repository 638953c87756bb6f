"""The host of a pod answered by the shards: the tie at a drawn rank in window order,
found from the shards' tie bits without a bool per window row.

Each shard holding the best total sends one bit per row of the window it holds, in
window order (``replies``); where its rows sit in the window is known here (``merge``:
``positions``, every shard's concatenated, ``pos_off`` their bounds). Rows changed since
the question was sent were scored again on the replica (``rescore``): they leave the
tie set (``changed``) and those holding the best total come back (``added``). So the
tie set is ``(shard ties - changed) + added`` and the host is its ``r``-th member in
window order, ``r`` drawn by the caller as ``select_host`` draws.

A window of 50,000 rows (1,000,000 nodes) made that a 50,000-bool mask per pod
(unpack, scatter, flatnonzero: ~0.1-0.3 ms). Here the count is a popcount of the bytes,
and the ``r``-th member a binary search over window positions whose counts come from
each shard's prefix popcounts of this pod's bytes only (the chunk's array holds every
pod's): O(bytes + log(width) * shards * log(rows)) per pod.
``TieBits.mask`` is the bool mask the search stands for (the reference of the tests).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["TieBits", "rows_agree"]

_JIT = njit(cache=True, nogil=True)


#: set bits of each byte value: the prefix popcounts read one entry per byte of the
#: window's bits (6,250 bytes at 1,000,000 nodes, per pod) instead of a bit twiddle each
_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)


#: bytes per stored prefix popcount (``tie_count``): one count per 8 bytes of a holder's
#: bits, so the pass over them keeps its sum in a register and stores an eighth as often
_BLOCK = 8


@_JIT
def _prefix(bits, byte_off, cum, cum_off, s, i):  # type: ignore[no-untyped-def]
    """Ties among shard ``s``'s first ``i`` rows (``cum[cum_off[s] + k]``: the popcount
    of its first ``k * _BLOCK`` bytes; the bytes after the block's start counted here)."""
    b0, full = byte_off[s], i >> 3
    block = full // _BLOCK
    got = cum[cum_off[s] + block]
    for k in range(b0 + block * _BLOCK, b0 + full):
        got += _POPCOUNT[bits[k]]
    if i & 7:
        got += _POPCOUNT[(np.int64(bits[b0 + full]) >> (8 - (i & 7))) & 0xFF]
    return got


@_JIT
def _before(bits, byte_off, positions, pos_off, cum, cum_off, removed, added, p):  # type: ignore[no-untyped-def]
    """Members of the tie set at window positions < ``p``."""
    got = 0
    for s in range(byte_off.shape[0]):
        if byte_off[s] < 0:
            continue
        pos = positions[pos_off[s] : pos_off[s + 1]]
        got += _prefix(bits, byte_off, cum, cum_off, s, np.searchsorted(pos, p))
    # changed rows that were ties leave the set, the changed rows holding the best join
    return got - np.searchsorted(removed, p) + np.searchsorted(added, p)


@_JIT
def _is_tie(bits, byte_off, positions, pos_off, q):  # type: ignore[no-untyped-def]
    for s in range(byte_off.shape[0]):
        if byte_off[s] < 0:
            continue
        pos = positions[pos_off[s] : pos_off[s + 1]]
        j = np.searchsorted(pos, q)
        if j < pos.shape[0] and pos[j] == q:
            return (bits[byte_off[s] + (j >> 3)] >> (7 - (j & 7))) & 1 == 1
    return False


@_JIT
def rows_agree(byte_off, rows, pos_off):  # type: ignore[no-untyped-def]
    """Whether each shard holding ties (``byte_off[s] >= 0``) counts as many rows of the
    window as the coordinator places for it (``pos_off``): else its bits are not trusted."""
    for s in range(byte_off.shape[0]):
        if byte_off[s] >= 0 and rows[s] != pos_off[s + 1] - pos_off[s]:
            return False
    return True


@_JIT
def tie_count(bits, byte_off, rows, positions, pos_off, changed, added, width):  # type: ignore[no-untyped-def]
    """The size of the tie set (module docstring), the holders' prefix popcounts (each
    holder's own run in ``cum`` from ``cum_off[s]``) and the changed positions that were
    ties. Only the holders' bytes of this pod are counted: ``bits`` is the whole chunk's
    (every pod's, every shard's: 64 x 6,250 bytes at 1,000,000 nodes), and counting all of
    it per pod made the pod's cost grow with the chunk times the window."""
    cum_off = np.full(byte_off.shape[0], -1, dtype=np.int64)
    total = 0
    for s in range(byte_off.shape[0]):
        if byte_off[s] >= 0:
            cum_off[s] = total
            total += ((rows[s] + 7) >> 3) // _BLOCK + 1
    cum = np.empty(total, dtype=np.int64)
    for s in range(byte_off.shape[0]):
        if byte_off[s] < 0:
            continue
        b0, c0 = byte_off[s], cum_off[s]
        acc = 0
        cum[c0] = 0
        for block in range(((rows[s] + 7) >> 3) // _BLOCK):
            k = b0 + block * _BLOCK
            for j in range(_BLOCK):
                acc += _POPCOUNT[bits[k + j]]
            cum[c0 + block + 1] = acc
    keep = np.zeros(changed.shape[0], dtype=np.bool_)
    for k in range(changed.shape[0]):
        keep[k] = _is_tie(bits, byte_off, positions, pos_off, changed[k])
    removed = changed[keep]
    count = _before(bits, byte_off, positions, pos_off, cum, cum_off, removed, added, width)
    return count, cum, cum_off, removed


@_JIT
def tie_select(bits, byte_off, positions, pos_off, cum, cum_off, removed, added, width, r):  # type: ignore[no-untyped-def]
    """The window position of the tie set's ``r``-th member (0-based, window order)."""
    lo, hi = 0, width - 1
    while lo < hi:  # the first p with more than r members at positions <= p
        mid = (lo + hi) >> 1
        if _before(bits, byte_off, positions, pos_off, cum, cum_off, removed, added, mid + 1) > r:
            hi = mid
        else:
            lo = mid + 1
    return lo


#: an empty position list (writable: the tie kernels take one array type)
_NONE = np.zeros(0, dtype=np.int64)


class TieBits:
    """One pod's tie bits from the shards holding its best total (module docstring):
    ``bits`` every such shard's bytes concatenated, ``byte_off[s]`` where shard ``s``'s
    start (-1: not a holder), ``rows[s]`` its rows of the window; ``positions`` /
    ``pos_off`` where each shard's rows sit in the window."""

    def __init__(
        self,
        bits: np.ndarray,
        byte_off: np.ndarray,
        rows: np.ndarray,
        positions: np.ndarray,
        pos_off: np.ndarray,
        width: int,
    ) -> None:
        self.bits = bits
        self.byte_off = byte_off
        self.rows = rows
        self.positions = positions
        self.pos_off = pos_off
        self.width = width
        # until ``settle``: no changed rows, nothing counted (shared, never written: a
        # pod's five small arrays cost more than its popcount)
        self._changed = self._added = self._removed = _NONE
        self._cum, self._cum_off = _NONE, _NONE
        self.count = 0

    def settle(self, changed: np.ndarray, added: np.ndarray, drop_shards: bool) -> int:
        """The tie set less ``changed`` (ascending window positions) plus ``added``
        (ascending, a subset of ``changed``); ``drop_shards``: the shards' ties no longer
        count (a changed row scored higher). Returns its size."""
        if drop_shards:
            self.byte_off = np.full_like(self.byte_off, -1)
        self._changed = np.ascontiguousarray(changed, dtype=np.int64)
        self._added = np.ascontiguousarray(added, dtype=np.int64)
        self.count, self._cum, self._cum_off, self._removed = tie_count(
            self.bits, self.byte_off, self.rows, self.positions, self.pos_off,
            self._changed, self._added, self.width,
        )  # fmt: skip
        return int(self.count)

    def select(self, r: int) -> int:
        """The window position of the ``r``-th member (after ``settle``)."""
        at = tie_select(
            self.bits, self.byte_off, self.positions, self.pos_off,
            self._cum, self._cum_off, self._removed, self._added, self.width, r,
        )  # fmt: skip
        return int(at)

    def mask(self) -> np.ndarray:
        """The tie set as a bool per window position (what ``select`` searches)."""
        out = np.zeros(self.width, dtype=np.bool_)
        for s in range(len(self.rows)):
            if self.byte_off[s] < 0:
                continue
            n = int(self.rows[s])
            b0 = int(self.byte_off[s])
            got = np.unpackbits(self.bits[b0 : b0 + (n + 7) // 8], count=n).view(np.bool_)
            out[self.positions[self.pos_off[s] : self.pos_off[s + 1]]] = got
        out[self._changed] = False
        out[self._added] = True
        return out
