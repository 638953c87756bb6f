"""Upstream's nodeTree order: nodes interleaved round-robin across zones.

kube-scheduler lists nodes zone by zone in turn (first node of zone A, first of zone B,
..., second of zone A, ...), zones in the order they first appeared and nodes within a
zone in the order they were added. That order decides which nodes a cycle evaluates when
``numFeasibleNodesToFind`` stops early, so placements depend on it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
LEGACY_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


def zone_key(labels: Mapping[str, str]) -> str:
    """Upstream GetZoneKey: region and zone joined by ``:\\x00:``; "" when neither is set."""
    get = labels.get
    region = get(REGION_LABEL) or get(LEGACY_REGION_LABEL) or ""
    zone = get(ZONE_LABEL) or get(LEGACY_ZONE_LABEL) or ""
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def zone_interleaved_order(
    rows: np.ndarray, zone_codes: np.ndarray, seqs: np.ndarray, zone_ranks: np.ndarray | None = None
) -> np.ndarray:
    """Order ``rows`` (int64[n]) as the nodeTree lists them.

    ``zone_codes``/``seqs`` are full columns indexed by row: the interned zone key and the
    insertion sequence number. ``zone_ranks`` (int64[n_zone_codes]) orders the zones: the
    nodeTree keeps a zone's place while it has nodes, so a table passes when each zone
    last gained its first node. Without it, zones are ranked by their earliest node.
    """
    if len(rows) == 0:
        return rows.astype(np.int64)
    z = zone_codes[rows]
    s = seqs[rows]
    by_zone = np.lexsort((s, z))
    rows_z = rows[by_zone]
    z_sorted = z[by_zone]
    starts = np.r_[0, np.flatnonzero(np.diff(z_sorted)) + 1]
    counts = np.diff(np.r_[starts, len(z_sorted)])
    rank_in_zone = np.arange(len(z_sorted)) - np.repeat(starts, counts)
    first_seq = s[by_zone][starts] if zone_ranks is None else zone_ranks[z_sorted[starts]]
    zone_rank = np.empty(len(starts), dtype=np.int64)
    zone_rank[np.argsort(first_seq, kind="stable")] = np.arange(len(starts))
    final = np.lexsort((np.repeat(zone_rank, counts), rank_in_zone))
    return rows_z[final].astype(np.int64)


class ZoneList:
    """The nodeTree's zone list: alive nodes per zone code, and each zone's rank (when it
    (re)gained its first node). A zone keeps its place while it has nodes and is dropped
    with its last one, so a zone that empties and refills moves to the end."""

    def __init__(self) -> None:
        self._members: dict[int, int] = {}
        self._rank: dict[int, int] = {}
        self._next_rank = 0

    def add(self, code: int) -> None:
        n = self._members.get(code, 0)
        if n == 0:
            self._rank[code] = self._next_rank
            self._next_rank += 1
        self._members[code] = n + 1

    def remove(self, code: int) -> None:
        n = self._members[code] - 1
        if n:
            self._members[code] = n
        else:
            del self._members[code]
            del self._rank[code]

    def ranks(self, n_codes: int) -> np.ndarray:
        """int64[n_codes]: each live zone's rank (0 for codes with no node), the
        ``zone_ranks`` argument of ``zone_interleaved_order``."""
        out = np.zeros(n_codes, dtype=np.int64)
        for code, rank in self._rank.items():
            out[code] = rank
        return out

    def copy(self) -> ZoneList:
        out = ZoneList()
        out._members = dict(self._members)
        out._rank = dict(self._rank)
        out._next_rank = self._next_rank
        return out

    def add_many(self, codes: np.ndarray) -> None:
        """``add(c)`` for each code in order (new nodes only, no removal between)."""
        if not len(codes):
            return
        uniq, first, counts = np.unique(codes, return_index=True, return_counts=True)
        members, rank = self._members, self._rank
        for i in np.argsort(first, kind="stable").tolist():
            code = int(uniq[i])
            n = members.get(code, 0)
            if n == 0:
                rank[code] = self._next_rank
                self._next_rank += 1
            members[code] = n + int(counts[i])
