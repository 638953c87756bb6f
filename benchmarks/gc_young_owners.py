"""Which large containers the collector's young collections walk, and who owns them.

A young (generation 0 or 1) collection costs what its generations hold, and a container
is walked whole (every key and value) when it is in them. A long-lived dict keyed by pod
or node should sit frozen (``gc_policy``) or untracked, never young; one that is young
again and again makes every young collection O(bound pods). This runs
``shard_cpu_parts.child`` (one evaluation in-process, its figures) with a collector
callback that, at the start of each young collection, lists the containers of at least
``--min-len`` items in the generations about to be walked and names each one's owner
once (``gc.get_referrers``: the object holding it, and its attribute), and times every
collection. Printed at the end, one JSON line: shard_cpu_parts' figures, and under
"gc" the owners (walks, largest length), per ``--window`` pods bound the pods/s and the
young and full collections' count and seconds, and totals per generation. The
callback lists the walked generations at each collection (its own cost, a few ms a
collection, is outside the timed collection but inside the window's pods/s).

A benchmark helper: it measures, asserts nothing.

usage: gc_young_owners.py WORKLOAD [--min-len N] [--window PODS] [run options, e.g.\n       --executor ray --shards 2]
"""

from __future__ import annotations

import gc
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["owner_of", "watch"]


def owner_of(obj: Any, skip: set[int]) -> str:
    """``Type.attribute`` of the first object found holding ``obj`` (or the referrer's
    type alone); ``skip``: ids of the frames and lists of this search."""
    for ref in gc.get_referrers(obj):
        if id(ref) in skip:
            continue
        if isinstance(ref, dict):  # an instance's __dict__: find the instance
            for holder in gc.get_referrers(ref):
                if getattr(holder, "__dict__", None) is ref:
                    key = next((k for k, v in ref.items() if v is obj), "?")
                    return f"{type(holder).__module__}.{type(holder).__qualname__}.{key}"
            key = next((k for k, v in ref.items() if v is obj), "?")
            return f"dict[{key!r}]"
        for slot in getattr(type(ref), "__slots__", ()):
            if getattr(ref, slot, None) is obj:
                return f"{type(ref).__module__}.{type(ref).__qualname__}.{slot}"
        if not isinstance(ref, type(sys._getframe())):
            return f"{type(ref).__module__}.{type(ref).__qualname__}"
    return "?"


def _items(obj: Any) -> str:
    """What a container holds, by the types of its first hundred items (a list of
    ``(pod key, node)`` tuples is told from a list of node names)."""
    first = list(obj)[:100] if not isinstance(obj, dict) else list(obj.values())[:100]
    kinds = sorted({type(item).__name__ for item in first})
    return f"{type(obj).__name__}[{'|'.join(kinds)}]"


def watch(min_len: int) -> dict[str, Any]:
    """Install the callback; the returned map fills as the run goes: ``owners`` (per
    owner of a large container walked by a young collection: walks, type, largest
    length) and ``collections`` ([seconds since installed, generation, seconds taken,
    objects in the generations walked] of every collection)."""
    seen: dict[int, str] = {}  # id -> owner (ids of live containers only)
    found: dict[str, dict[str, Any]] = {}
    log: list[list[float]] = []
    t0 = time.time()
    started = [0.0, 0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        generation = info.get("generation", 2)
        if phase == "stop":
            took = time.perf_counter() - started[0]
            log.append([round(time.time() - t0, 3), generation, round(took, 5), started[1]])
            return
        large, count = [], 0
        for g in range(generation + 1):
            # gc.get_objects' list is made young before it is filled, so it holds itself:
            # cleared, or that cycle outlives the callback and the next young collection
            # walks it (a million-item list "owned by a list", this script's own)
            objects = gc.get_objects(generation=g)
            count += len(objects) - 1
            large += [
                o
                for o in objects
                if o is not objects and isinstance(o, dict | list | set) and len(o) >= min_len
            ]
            objects.clear()
        started[1] = count
        if generation < 2:
            for obj in large:
                name = seen.get(id(obj))
                if name is None:
                    name = seen[id(obj)] = f"{owner_of(obj, {id(large)})} of {_items(obj)}"
                entry = found.setdefault(
                    name, {"type": type(obj).__name__, "walks": 0, "max_len": 0}
                )
                entry["walks"] += 1
                entry["max_len"] = max(entry["max_len"], len(obj))
        large.clear()
        started[0] = time.perf_counter()

    gc.callbacks.append(callback)
    return {"owners": found, "collections": log}


def _by_window(got: dict[str, Any], progress: list[list[float]], size: int) -> list[Any]:
    """Per ``size`` pods bound: pods/s, and the young and full collections' count and
    seconds meanwhile (``progress``: [seconds, pods bound] as shard_cpu_parts notes)."""
    out = []
    edges = [progress[0]]
    for t, bound in progress:
        if bound >= edges[-1][1] + size:
            edges.append([t, bound])
    for (ta, ba), (tb, bb) in itertools.pairwise(edges):
        row: dict[str, Any] = {"bound": [ba, bb], "pods_per_s": round((bb - ba) / (tb - ta), 1)}
        for name, gens in (("young", (0, 1)), ("full", (2,))):
            inside = [c for c in got["collections"] if ta <= c[0] < tb and c[1] in gens]
            row[name] = [len(inside), round(sum(c[2] for c in inside), 2)]
            row[f"{name}_objects_max"] = max((c[3] for c in inside), default=0)
        out.append(row)
    return out


def main(argv: list[str]) -> None:
    """``shard_cpu_parts.child``'s run (its figures included) with the callback on."""
    sys.path.insert(0, str(Path(__file__).parent))
    from shard_cpu_parts import child

    workload, rest = argv[0], argv[1:]
    min_len, window = 5000, 50_000
    for flag in ("--min-len", "--window"):
        if flag in rest:
            i = rest.index(flag)
            if flag == "--min-len":
                min_len = int(rest[i + 1])
            else:
                window = int(rest[i + 1])
            del rest[i : i + 2]
    got = watch(min_len)
    figures = child(workload, rest)
    gc.callbacks.clear()
    got["windows"] = _by_window(got, figures.get("bound_over_time") or [[0.0, 0]], window)
    got["collections_total"] = {
        f"gen{g}": [
            sum(1 for c in got["collections"] if c[1] == g),
            round(sum(c[2] for c in got["collections"] if c[1] == g), 2),
        ]
        for g in range(3)
    }
    del got["collections"]
    print(json.dumps({**figures, "gc": got}))


if __name__ == "__main__":
    main(sys.argv[1:])
