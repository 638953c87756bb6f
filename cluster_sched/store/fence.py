"""Fencing tokens: every coordinator write carries the token of the lease it holds.

Leader election (``scheduler/leader.py``) alone cannot stop a paused or partitioned
ex-leader from writing after its lease expired; fencing does. Every Lua script a
coordinator runs (the store's bind/apply/delete/events, every queue script) is registered
with ``_fence.lua`` in front: the caller prepends the lease key to KEYS and the token to
ARGV, and the script refuses the whole call (a ``FENCED`` error, nothing written) unless
the token is the lease's current one. Token 0 is an unfenced write: single-process runs
without leader election pay one string comparison.

A ``Fence`` is mutable and shared: the store, its object writer and the queue's scripts
hold the same one, and the elector sets its token when it acquires the lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from redis.commands.core import Script

__all__ = ["FENCED", "Fence", "FencedScript", "fence_prelude", "is_fenced_error"]

#: Prefix of the error a script returns when the caller's token is not the lease's.
FENCED = "FENCED"


@dataclass(slots=True)
class Fence:
    """The lease key and the token this process writes with (0: unfenced)."""

    key: str = ""
    token: int = 0

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

    __slots__ = ("fence", "script")

    def __init__(self, script: Script, fence: Fence) -> None:
        self.script = script
        self.fence = fence

    @property
    def sha(self) -> str:
        return str(self.script.sha)

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        return self.script(keys=self.fence.keys(keys), args=self.fence.args(args))


def is_fenced_error(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a script's FENCED refusal
    (a redis ResponseError, or the StoreError the store's boundary made of it)."""
    while exc is not None:
        if f"{FENCED} fencing token" in str(exc):
            return True
        exc = exc.__cause__
    return False
