"""The store's Lua scripts: loaded from ``lua/``, registered once per client.

Each operation is one file with a header listing KEYS, ARGV and the return value; the
shared msgpack walker (``_msgpack.lua``) is prepended to each when it is registered, so a
script stays one self-contained EVALSHA. Scripts never build key names and never SCAN:
every key arrives in KEYS under the store's hash-tagged prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import redis
from redis.commands.core import Script

__all__ = ["Scripts", "script_source"]

_PRELUDE = "_msgpack.lua"


@cache
def _read(name: str) -> str:
    return (resources.files("cluster_sched.store") / "lua" / name).read_text(encoding="utf-8")


def script_source(name: str) -> str:
    """The full text registered for operation ``name`` (prelude + ``lua/<name>.lua``)."""
    return _read(_PRELUDE) + "\n" + _read(f"{name}.lua")


@dataclass(frozen=True, slots=True)
class Scripts:
    """One registered Script per operation (redis-py loads them on first use and again
    after a SCRIPT FLUSH or a restarted server)."""

    apply: Script
    delete: Script
    bind: Script

    @classmethod
    def register(cls, client: redis.Redis) -> Scripts:
        return cls(
            apply=client.register_script(script_source("apply")),
            delete=client.register_script(script_source("delete")),
            bind=client.register_script(script_source("bind")),
        )
