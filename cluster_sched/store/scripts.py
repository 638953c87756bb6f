"""The store's Lua scripts: loaded from ``lua/``, registered once per client.

Each operation is one file with a header listing KEYS, ARGV and the return value; the
shared msgpack walker (``_msgpack.lua``) is prepended to each when it is registered, so a
script stays one self-contained EVALSHA; in front of both goes the fencing check
(``_fence.lua``, see ``fence.py``), so every call carries the lease key and a token. Scripts never build key names and never SCAN:
every key arrives in KEYS under the store's hash-tagged prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import redis

from cluster_sched.store.fence import Fence, FencedScript, fence_prelude

__all__ = ["Scripts", "script_source"]

_PRELUDE = "_msgpack.lua"


@cache
def _read(name: str) -> str:
    return (resources.files("cluster_sched.store") / "lua" / name).read_text(encoding="utf-8")


def script_source(name: str) -> str:
    """The full text registered for operation ``name`` (prelude + ``lua/<name>.lua``)."""
    return fence_prelude() + "\n" + _read(_PRELUDE) + "\n" + _read(f"{name}.lua")


@dataclass(frozen=True, slots=True)
class Scripts:
    """One registered Script per operation (redis-py loads them on first use and again
    after a SCRIPT FLUSH or a restarted server), each called through ``fence``."""

    apply: FencedScript
    delete: FencedScript
    bind: FencedScript
    events: FencedScript
    account: FencedScript

    @classmethod
    def register(cls, client: redis.Redis, fence: Fence) -> Scripts:
        def one(name: str) -> FencedScript:
            return FencedScript(client.register_script(script_source(name)), fence, f"store.{name}")

        return cls(
            apply=one("apply"),
            delete=one("delete"),
            bind=one("bind"),
            events=one("events"),
            account=one("account"),
        )
