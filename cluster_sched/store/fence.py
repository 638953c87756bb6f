"""Fencing tokens: every coordinator write carries the token of the lease it holds.

Leader election (``scheduler/leader.py``) alone cannot stop a paused or partitioned
ex-leader from writing after its lease expired; fencing does. Every Lua script a
coordinator runs (the store's bind/apply/delete/events, every queue script) is registered
with ``_fence.lua`` in front: the caller prepends the lease key to KEYS and the token to
ARGV, and the script refuses the whole call (a ``FENCED`` error, nothing written) unless
the token is the lease's current one. Token 0 is an unfenced write: single-process runs
without leader election pay one string comparison.

A ``Fence`` is mutable and shared: the store, its object writer and the queue's scripts
hold the same one, and the elector sets its token when it acquires the lease. It also
counts the calls Redis refused (``refused``, by operation: ``store.bind``,
``queue.requeue``, ``ray.bind`` for jobs a Ray binding task had refused, ...), so a
deposed leader's attempts are visible to its logs and to tests, not only to Redis.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.commands.core import Script

__all__ = [
    "FENCED",
    "Fence",
    "FencedScript",
    "fence_prelude",
    "is_fenced_error",
    "is_fenced_message",
]

#: Prefix of the error a script returns when the caller's token is not the lease's.
FENCED = "FENCED"
_REFUSAL = f"{FENCED} fencing token"


@dataclass(slots=True)
class Fence:
    """The lease key and the token this process writes with (0: unfenced), and how many
    calls Redis refused as FENCED, by operation."""

    key: str = ""
    token: int = 0
    refused: Counter[str] = field(default_factory=Counter, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def note_refused(self, operation: str, count: int = 1) -> None:
        """Count ``count`` writes of ``operation`` refused (binder threads count too)."""
        with self._lock:
            self.refused[operation] += count

    def refused_total(self) -> int:
        with self._lock:
            return sum(self.refused.values())

    def call(self, operation: str, run: Callable[[], Any]) -> Any:
        """``run()`` (a fenced script call); a FENCED refusal is counted, then raised."""
        try:
            return run()
        except redis.ResponseError as exc:
            if is_fenced_error(exc):
                self.note_refused(operation)
            raise

    def keys(self, keys: Sequence[Any]) -> list[Any]:
        # Unfenced (no lease key yet): any key of the call stands in, so every key of
        # the script still shares one Redis Cluster slot; token 0 never reads it.
        stand_in = keys[0] if keys else "-"
        return [self.key or stand_in, *keys]

    def args(self, args: Sequence[Any]) -> list[Any]:
        return [str(self.token), *args]


@cache
def fence_prelude() -> str:
    """The Lua text every fenced script starts with."""
    return (resources.files("cluster_sched.store") / "lua" / "_fence.lua").read_text("utf-8")


class FencedScript:
    """A registered script called with the fence's key and token in front."""

    __slots__ = ("fence", "operation", "script")

    def __init__(self, script: Script, fence: Fence, operation: str = "script") -> None:
        self.script = script
        self.fence = fence
        #: the name refusals are counted under (``store.bind``, ...)
        self.operation = operation

    @property
    def sha(self) -> str:
        return str(self.script.sha)

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        fence = self.fence
        keys_, args_ = fence.keys(keys), fence.args(args)
        return fence.call(self.operation, lambda: self.script(keys=keys_, args=args_))


def is_fenced_error(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a script's FENCED refusal
    (a redis ResponseError, or the StoreError the store's boundary made of it)."""
    while exc is not None:
        if is_fenced_message(str(exc)):
            return True
        exc = exc.__cause__
    return False


def is_fenced_message(text: str) -> bool:
    """Whether ``text`` (an error, or a binding Status's message that quotes one) is a
    FENCED refusal: how a Ray binding task's refusals reach the coordinator."""
    return _REFUSAL in text
