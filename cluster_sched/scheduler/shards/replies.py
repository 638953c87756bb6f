"""The shards' reductions of one chunk as columns, merged across shards at once.

A shard answers a chunk of a batch (``reduce``) with one ``ChunkReduction``: per pod
its status, best total, maxima and PreScore skip set as arrays, and which of its rows of
the pod's window hold the best total as bits (one per row, every pod's in one array
with offsets: 1/32 of the bytes of int32 positions; the coordinator knows where each
shard's rows sit in the window, ``merge``). The coordinator decodes each shard's reply
once per chunk (a handful of ``np.frombuffer``, no object per pod per shard) and
stacks the shards' columns (``MergedChunk``): whether every shard holding rows of a
pod's window answered OK, the best total over the shards, whether their maxima agree,
which shards hold the best — each one numpy operation over shards x pods. Reading S
shards costs the coordinator S decodes per chunk, not S x pods objects, so its cost
per pod hardly grows with the shard count (README "Distributed execution").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.scheduler.shards.reduce import DEFAULT_NORMALIZED, OK, STALE, PodReduction
from cluster_sched.scheduler.shards.ties import TieBits, rows_agree

__all__ = ["NORMALIZED_NAMES", "ChunkReduction", "MergedChunk"]

#: the DefaultNormalizeScore plugins' maxima columns, in this order
NORMALIZED_NAMES: tuple[str, ...] = tuple(sorted(DEFAULT_NORMALIZED))
#: a merged pod's verdict: answered, a row failed (or no shard holds rows), a shard stale
ANSWERED, FILTER, STALE_VERDICT = range(3)
_NO_BITS = np.zeros(0, dtype=np.uint8)


@dataclass(slots=True)
class ChunkReduction:
    """One shard's answers for one chunk's pods, as columns (module docstring)."""

    status: np.ndarray  # int8 per pod (``reduce``: OK, FAILED, ...)
    best: np.ndarray  # int64 per pod: -1 when the shard holds no row of the window
    rows: np.ndarray  # int64 per pod: the shard's rows of the window
    offsets: np.ndarray  # int64, pods + 1: pod i's tie bits are bits[offsets[i]:offsets[i+1]]
    bits: np.ndarray  # uint8: packed, one bit per row of the window, in window order
    maxima: np.ndarray  # int64, pods x NORMALIZED_NAMES: -1 where not reported
    skip_of: np.ndarray  # int32 per pod: its PreScore skip set in ``skips``
    skips: list[frozenset[str]]

    @classmethod
    def pack(cls, pods: Sequence[PodReduction]) -> ChunkReduction:
        n = len(pods)
        rows = np.array(
            [p.rows if p.bits is not None else 0 if p.ties is None else len(p.ties) for p in pods],
            dtype=np.int64,
        )
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum((rows + 7) // 8, out=offsets[1:])
        bits = []
        for p in pods:
            if p.bits is not None:
                if p.rows:
                    bits.append(p.bits)
            elif p.ties is not None and len(p.ties):
                bits.append(np.packbits(p.ties))
        maxima = np.full((n, len(NORMALIZED_NAMES)), -1, dtype=np.int64)
        skips: dict[frozenset[str], int] = {}
        skip_of = np.zeros(n, dtype=np.int32)
        for i, p in enumerate(pods):
            for j, name in enumerate(NORMALIZED_NAMES):
                m = (p.maxima or {}).get(name)
                if m is not None:
                    maxima[i, j] = m
            skip_of[i] = skips.setdefault(p.skipped, len(skips))
        return cls(
            np.array([p.status for p in pods], dtype=np.int8),
            np.array([p.best for p in pods], dtype=np.int64),
            rows,
            offsets,
            np.concatenate(bits) if bits else np.zeros(0, dtype=np.uint8),
            maxima,
            skip_of,
            list(skips),
        )

    @classmethod
    def stale(cls, n: int) -> ChunkReduction:
        """``n`` pods a lost shard did not answer."""
        return cls.pack([PodReduction(STALE)] * n)

    def wire(self) -> dict[str, Any]:
        return {
            "status": self.status.tobytes(),
            "best": self.best.tobytes(),
            "rows": self.rows.tobytes(),
            "offsets": self.offsets.tobytes(),
            "bits": self.bits.tobytes(),
            "maxima": self.maxima.tobytes(),
            "skip_of": self.skip_of.tobytes(),
            "skips": [sorted(s) for s in self.skips],
        }

    @classmethod
    def of_wire(cls, doc: Mapping[str, Any]) -> ChunkReduction:
        status = np.frombuffer(doc["status"], dtype=np.int8)
        return cls(
            status,
            np.frombuffer(doc["best"], dtype=np.int64),
            np.frombuffer(doc["rows"], dtype=np.int64),
            np.frombuffer(doc["offsets"], dtype=np.int64),
            np.frombuffer(doc["bits"], dtype=np.uint8),
            np.frombuffer(doc["maxima"], dtype=np.int64).reshape(len(status), -1),
            np.frombuffer(doc["skip_of"], dtype=np.int32),
            [frozenset(map(str, s)) for s in doc["skips"]],
        )

    def __len__(self) -> int:
        return len(self.status)


class MergedChunk:
    """Every shard's ``ChunkReduction`` of one chunk, stacked shards x pods."""

    def __init__(self, replies: Sequence[ChunkReduction], n: int) -> None:
        self.replies = [r if len(r) == n else ChunkReduction.stale(n) for r in replies]
        status = np.stack([r.status for r in self.replies])
        best = np.stack([r.best for r in self.replies])
        #: the shards whose answer counts for a pod: a status other than OK, or rows
        self.relevant = (status != OK) | (best >= 0)
        bad = self.relevant & (status != OK)
        failed = bad.any(axis=0) | ~self.relevant.any(axis=0)
        stale = (self.relevant & (status == STALE)).any(axis=0)
        self.verdict = np.where(failed, np.where(stale, STALE_VERDICT, FILTER), ANSWERED)
        self.any_stale = bool((status == STALE).any())
        self.best = np.where(self.relevant, best, -1).max(axis=0)
        self.winners = self.relevant & (best == self.best)
        maxima = np.stack([r.maxima for r in self.replies])  # shards x pods x plugins
        shown = self.relevant[:, :, None] & (maxima >= 0)
        #: the maxima over the shards holding rows (-1: none reported)
        self.maxima = np.where(shown, maxima, -1).max(axis=0)
        low = np.where(shown, maxima, np.iinfo(np.int64).max).min(axis=0)
        #: whether some shard's maximum differs from another's
        self.conflict = ((self.maxima >= 0) & (low != self.maxima)).any(axis=1)
        self._maxima_rows: list[list[int]] | None = None
        # what ``tie_bits`` and ``skips_agree`` read per pod, made once per chunk as
        # columns, so a pod's read costs the same whatever the shard count: every
        # shard's tie bits in one array, and per pod and shard where its bits start
        # there (-1 unless it holds the pod's best) and its rows of the window
        sizes = [len(r.bits) for r in self.replies]
        self._bits = np.concatenate([r.bits for r in self.replies]) if sum(sizes) else _NO_BITS
        base = np.zeros(len(sizes), dtype=np.int64)
        np.cumsum(sizes[:-1], out=base[1:])
        offsets = np.stack([r.offsets[:n] for r in self.replies]) + base[:, None]
        self._byte_off = np.ascontiguousarray(np.where(self.winners, offsets, -1).T)
        rows = np.stack([r.rows for r in self.replies])
        self._rows = np.ascontiguousarray(np.where(self.winners, rows, 0).T)
        # each pod's PreScore skip set if every shard holding rows reported the same
        # one (its index in ``_skip_sets``; -1: no such shard), else -2
        ids: dict[frozenset[str], int] = {}
        gids = np.stack(
            [
                np.array([ids.setdefault(k, len(ids)) for k in r.skips], dtype=np.int64)[r.skip_of]
                if len(r.skips)
                else np.zeros(n, dtype=np.int64)
                for r in self.replies
            ]
        )
        high = np.where(self.relevant, gids, -1).max(axis=0)
        low = np.where(self.relevant, gids, len(ids)).min(axis=0)
        self._skip_of: list[int] = np.where((high == low) | (high < 0), high, -2).tolist()
        self._skip_sets = list(ids)

    def skipped(self, i: int) -> list[frozenset[str]]:
        """The PreScore skip sets of the shards holding rows of pod ``i``'s window."""
        return [
            r.skips[int(r.skip_of[i])] for s, r in enumerate(self.replies) if self.relevant[s, i]
        ]

    def maxima_of(self, i: int) -> dict[str, int]:
        if self._maxima_rows is None:  # once per chunk: numpy scalars per pod cost more
            self._maxima_rows = self.maxima.tolist()
        return {
            name: m
            for name, m in zip(NORMALIZED_NAMES, self._maxima_rows[i], strict=True)
            if m >= 0
        }

    def skips_agree(self, i: int, skip: frozenset[str]) -> bool:
        """Whether every shard holding rows of pod ``i``'s window skipped exactly
        ``skip`` in PreScore: ``all(s == skip for s in skipped(i))``, in O(1)."""
        got = self._skip_of[i]
        return got == -1 or (got >= 0 and self._skip_sets[got] == skip)

    def tie_bits(
        self, i: int, positions: np.ndarray, pos_off: np.ndarray, width: int
    ) -> TieBits | None:
        """Pod ``i``'s tie set over its window (``width`` long) from the shards holding
        its best total (``ties``); ``positions[pos_off[s]:pos_off[s + 1]]``: where shard
        ``s``'s rows of the window sit in it, in order. None when a shard's row count is
        not the coordinator's (never trusted then). No copy of the bits: every shard's
        are read where the chunk's merge put them."""
        byte_off, rows = self._byte_off[i], self._rows[i]
        if not rows_agree(byte_off, rows, pos_off):
            return None
        return TieBits(self._bits, byte_off, rows, positions, pos_off, width)
