"""A deposed leader for the fencing tests: a real election, a real takeover.

``depose(client, store)`` makes ``store`` (and the queue scripts of ``client``, which
share its fence) the writes of a leader that won the lease and then stopped renewing it,
as a process paused by SIGSTOP or a long GC does: its token stays the one it won. A
standby on its own store waits the (short) lease out and takes over, so every write
the old one still attempts carries a token that is no longer the lease's. Nothing is
simulated: the lease is ``lease.lua``'s, the refusals ``_fence.lua``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from cluster_sched.config.types import LeaderElectionConfiguration
from cluster_sched.scheduler.leader import LeaderElector, share_fence
from cluster_sched.store.store import Store

__all__ = ["PAUSABLE", "Takeover", "depose", "lead", "redis_state"]

#: A lease short enough that a takeover costs a test a fraction of a second of waiting.
PAUSABLE = LeaderElectionConfiguration(lease_duration=0.15, renew_deadline=0.1, retry_period=0.02)


@dataclass(slots=True)
class Takeover:
    """The paused leader's elector and the standby that took the lease from it."""

    old: LeaderElector
    new: LeaderElector
    new_store: Store

    def close(self) -> None:
        self.new.close()
        self.old.close()


def lead(client: redis.Redis, store: Store, identity: str = "old") -> LeaderElector:
    """``store`` (and ``client``'s queue scripts) writing as the lease's holder; the
    elector never renews by itself (no renew thread: the process may 'pause' at will)."""
    share_fence(store, client)
    elector = LeaderElector(client, store, PAUSABLE, identity=identity)
    if not elector.try_acquire_or_renew():
        raise RuntimeError(f"lease {elector.lease_key} is held: cannot lead")
    return elector


def depose(old: LeaderElector, client: redis.Redis) -> Takeover:
    """A standby (its own Store and fence) waits until ``old``'s lease expired and takes
    it; ``old`` keeps its token, now stale."""
    new_store = Store(client)
    new = LeaderElector(client, new_store, PAUSABLE, identity="standby")
    if not new.acquire():
        raise RuntimeError("the standby never took the lease over")
    if new.token <= old.token:
        raise RuntimeError(f"takeover did not advance the token ({old.token} -> {new.token})")
    return Takeover(old, new, new_store)


def redis_state(client: redis.Redis) -> dict[bytes, Any]:
    """Every key but the lease with its content: equal before and after a refused write
    means the refusal wrote nothing (the small databases of tests only: KEYS)."""
    out: dict[bytes, Any] = {}
    keys: Any = client.keys("*")
    for key in sorted(keys):
        if b"lease" in key:
            continue
        kind = client.type(key)
        if kind == b"hash":
            out[key] = client.hgetall(key)
        elif kind == b"zset":
            out[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"stream":
            out[key] = client.xrange(key)
        else:
            out[key] = client.dump(key)
    return out
