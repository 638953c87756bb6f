"""Python's cyclic garbage collector, for a process that holds a cluster in memory.

A coordinator holds millions of long-lived objects (nodes, pods, their parsed specs,
queue entries), and every full (generation 2) collection walks all of them. Measured on
20,000 nodes and 20,000 pods (`benchmarks/gc_bench.py`): 14 full collections cost 5.3 s
of a 19-s run, the longest 1.0 s, a pause every queued pod waits out. Almost none of
those objects is ever freed by the collector: they live until the run ends, or reference
counting frees them (pods and nodes hold no cycles).

So while ``survivors_frozen`` is active, the survivors of each full collection are
frozen (``gc.freeze``: kept in a generation the collector never scans) and the next
full collection walks only what was created since. What that gives up: a cycle among
frozen objects that becomes garbage is freed only once they are unfrozen — when the
scope ends, or by ``collect_when_idle``, which a long-running loop calls when it has
nothing to do: at most every IDLE_FULL_INTERVAL seconds, and only once the loop has had
nothing to do for IDLE_QUIET seconds (``note_busy`` marks the turns that had work), it
unfreezes everything and runs one full collection, at a moment when nobody waits for it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

__all__ = [
    "IDLE_FULL_INTERVAL",
    "YOUNG_THRESHOLD",
    "collect_everything",
    "collect_when_idle",
    "freeze_started",
    "note_busy",
    "survivors_frozen",
]

IDLE_FULL_INTERVAL: Final = 300.0
"""Seconds between two full collections of everything, run only when the loop is idle."""

IDLE_QUIET: Final = 1.0
"""Seconds the loop must have had nothing to do before an idle full collection. A turn
that pops nothing is not yet idle: a loop waiting a few milliseconds for bindings to land
or pods to arrive has empty turns between busy ones, and a full collection there walks
the whole heap (seconds at 1,000,000 nodes: 8 % of the coordinator's samples in a
1,000,000-node / 30,000-pod run with Ray shards) while pods wait."""

YOUNG_THRESHOLD: Final = 20_000
"""Allocations between two young collections while the policy is on (CPython's default
is 700). The loop allocates a few hundred containers per pod (decoded manifests, parsed
pods, queue records), nearly all freed by reference counting or kept for the run, so
young collections found almost nothing: at 700, SchedulingBasic's loop (11,000 pods)
spent ~7 % of its CPU in ~450 of them; at 20,000, ~1.5 %. The memory this defers is at
most one young generation of containers."""

_active = 0
_last_full = 0.0
_busy_at = 0.0


def _freeze_after_full(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextmanager
def survivors_frozen() -> Iterator[None]:
    """Freeze the survivors of every full collection for the duration (nestable)."""
    global _active, _last_full
    threshold = gc.get_threshold()
    if _active == 0:
        gc.callbacks.append(_freeze_after_full)
        _last_full = time.monotonic()
        if threshold[0] < YOUNG_THRESHOLD:
            gc.set_threshold(YOUNG_THRESHOLD, *threshold[1:])
    _active += 1
    try:
        yield
    finally:
        _active -= 1
        if _active == 0:
            gc.callbacks.remove(_freeze_after_full)
            gc.set_threshold(*threshold)
            gc.unfreeze()


def freeze_started() -> bool:
    """Freeze everything alive now if the policy is active (True then): called once the
    cluster is loaded (listing, shards' preload), before the first scheduling turn.

    Start-up builds millions of long-lived objects while the collector is paused
    (``codec.gc_paused``) and runs no full collection after them, so they sat in the
    young generations: the first generation-1 collection of the scheduling loop walked
    them all (1.5 million objects, ~0.5 s, at 300,000 nodes: a third of the loop's
    collector time over 30,000 pods), and so would every full one until it froze them.
    Frozen now, no collection walks them; garbage cycles among them wait for
    ``collect_when_idle`` or the scope's end, as the survivors of full collections do."""
    if not _active:
        return False
    gc.freeze()
    return True


def note_busy() -> None:
    """The loop had work this turn: the next idle full collection waits IDLE_QUIET."""
    global _busy_at
    _busy_at = time.monotonic()


def collect_when_idle() -> bool:
    """Unfreeze and collect everything if the policy is active, the last such pass is
    IDLE_FULL_INTERVAL old and the loop has been idle IDLE_QUIET; True if it ran."""
    global _last_full
    now = time.monotonic()
    if not _active or now - _last_full < IDLE_FULL_INTERVAL or now - _busy_at < IDLE_QUIET:
        return False
    _last_full = now
    collect_everything()
    return True


def collect_everything() -> int:
    """Unfreeze and run one full collection (what a loop that just ended releases is
    freed now, cycles included); the survivors are frozen again if the policy is on."""
    gc.unfreeze()
    return gc.collect()
