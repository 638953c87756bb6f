"""Leader election with fencing, as upstream's ``leaderelection`` with a Lease lock.

Several ``serve`` processes may run against one store; one leads (runs the coordinator),
the others stand by. The lease is one Redis hash (``store/lua/lease.lua``: holder,
acquire/renew times from the Redis server's clock, and a fencing token incremented on
every change of holder). The elector follows upstream's LeaderElector:

- ``acquire`` blocks, trying every ``retryPeriod``, until the lease is free or expired
  (``leaseDuration`` after its last renewal), then takes it: OnStartedLeading.
- A thread renews it every ``retryPeriod``; when no renewal succeeded for
  ``renewDeadline``, or another holder took it, leadership is lost: OnStoppedLeading,
  which for kube-scheduler is fatal (the process exits and its supervisor restarts it
  as a candidate). ``serve`` exits with status 1.
- ``close`` releases the lease (ReleaseOnCancel), so a clean restart does not wait out
  the lease, and logs the writes Redis refused as FENCED (``Fence.refused``).

Elections alone cannot stop a paused or partitioned ex-leader from writing after its
lease expired (its renew thread was paused too). Fencing does: every write of the
coordinator, store and queue alike, carries the token (``store/fence.py``) and Redis
refuses the whole script unless it is the lease's current one. On loss the local token
becomes -1, so this process's writes are refused even before anyone else took over.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import redis

from cluster_sched.config.types import LeaderElectionConfiguration, SchedulerConfiguration
from cluster_sched.queue.scripts import scripts_for
from cluster_sched.store.fence import Fence
from cluster_sched.store.store import Store

__all__ = ["LOST_TOKEN", "LeaderElector", "default_identity", "share_fence", "standby"]

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

#: The token a process writes with once it lost the lease: never a lease's token.
LOST_TOKEN = -1


@cache
def _lease_source() -> str:
    return (resources.files("cluster_sched.store") / "lua" / "lease.lua").read_text("utf-8")


def default_identity() -> str:
    """Upstream's identity: hostname, "_", a fresh UUID (unique per process start)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def share_fence(store: Store, queue_client: redis.Redis) -> Fence:
    """Make the queue's scripts on ``queue_client`` write with the store's fence, so one
    token guards every write of the coordinator; returns that fence."""
    scripts_for(queue_client).fence = store.fence
    return store.fence


class LeaderElector:
    """One candidate for the lease ``config.lease_name`` (see the module docstring).

    ``on_stopped_leading`` runs once, on the renew thread, when leadership is lost
    (never after a ``close``)."""

    def __init__(
        self,
        client: redis.Redis,
        store: Store,
        config: LeaderElectionConfiguration,
        *,
        identity: str | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.identity = identity or default_identity()
        self.lease_key = store.keys.lease(config.lease_name)
        self.fence = store.fence
        self.fence.key = self.lease_key
        self.fence.token = LOST_TOKEN  # no write before the lease is ours
        self._client = client
        self._script = client.register_script(_lease_source())
        self._on_stopped = on_stopped_leading
        self._lost = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_renew = 0.0

    # ------------------------------------------------------------------ state

    @property
    def token(self) -> int:
        """The fencing token of the current term (LOST_TOKEN when not leading)."""
        return self.fence.token

    @property
    def is_leader(self) -> bool:
        return self.fence.token > 0 and not self._lost.is_set()

    @property
    def lost(self) -> bool:
        """Leadership was held and then lost (OnStoppedLeading ran or is running)."""
        return self._lost.is_set()

    def lease(self) -> dict[str, str]:
        """The lease record as Redis holds it (for logs, ``describe`` and tests)."""
        raw: Any = self._client.hgetall(self.lease_key)
        return {k.decode(): v.decode() for k, v in raw.items()}

    # ------------------------------------------------------------------ election

    def _call(self, op: str) -> tuple[int, str]:
        ms = int(self.config.lease_duration * 1000)
        token, holder = self._script(keys=[self.lease_key], args=[op, self.identity, ms])
        return int(token), holder.decode() if isinstance(holder, bytes) else str(holder)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this candidate holds the lease now."""
        token, holder = self._call("acquire")
        if token > 0:
            if self.fence.token != token:
                log.info("acquired lease %s (fencing token %d)", self.lease_key, token)
            self.fence.token = token
            self._last_renew = time.monotonic()
            return True
        log.debug("lease %s is held by %s", self.lease_key, holder)
        return False

    def acquire(self, should_stop: Callable[[], bool] = lambda: False) -> bool:
        """Block until the lease is ours (True), trying every retryPeriod, then start the
        renew thread; False if ``should_stop`` said so first (a signal while standing by).
        Redis errors while standing by are retried, as upstream's are, and logged once
        until an attempt gets an answer again (a standby waits out an outage quietly)."""
        failing = False
        while not should_stop():
            try:
                if self.try_acquire_or_renew():
                    self._start_renewing()
                    return True
                failing = False
            except redis.RedisError as exc:
                if not failing:
                    log.warning(
                        "acquiring lease %s failed: %s; retrying every %g s",
                        self.lease_key,
                        exc,
                        self.config.retry_period,
                    )
                failing = True
            deadline = time.monotonic() + self.config.retry_period
            while time.monotonic() < deadline and not should_stop():
                time.sleep(min(0.05, self.config.retry_period))
        return False

    def _start_renewing(self) -> None:
        self._thread = threading.Thread(target=self._renew_loop, name="lease-renew", daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        period = self.config.retry_period
        while not self._closed.wait(period):
            try:
                token, holder = self._call("renew")
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                # Redis unreachable: nobody can take the lease meanwhile (it lives
                # there), so an outage is a wait, not a loss; once Redis answers, the
                # renewal says whether the lease is still ours. A partitioned leader
                # that others can reach loses it then, and fencing refused its writes
                # all along. (Upstream gives up after renewDeadline.)
                log.warning("renewing lease %s failed: %s", self.lease_key, exc)
                continue
            except redis.RedisError as exc:
                log.warning("renewing lease %s failed: %s", self.lease_key, exc)
                token, holder = 0, ""
            if token > 0 and token == self.fence.token:
                self._last_renew = time.monotonic()
                continue
            if holder and holder != self.identity:
                self._stop_leading(f"lease taken over by {holder}")
                return
            if time.monotonic() - self._last_renew > self.config.renew_deadline:
                self._stop_leading(f"not renewed within {self.config.renew_deadline}s")
                return

    def _stop_leading(self, why: str) -> None:
        if self._closed.is_set():
            return
        self.fence.token = LOST_TOKEN
        self._lost.set()
        log.error("leaderelection lost: %s (lease %s)", why, self.lease_key)
        if self._on_stopped is not None:
            self._on_stopped()

    def close(self) -> None:
        """Stop renewing and release the lease if this candidate still holds it."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.fence.token > 0:
            try:
                self._call("release")
            except redis.RedisError as exc:
                log.warning("releasing lease %s failed: %s", self.lease_key, exc)
        self.fence.token = LOST_TOKEN
        refused = dict(self.fence.refused)
        if refused:  # the writes a paused or partitioned term still attempted
            log.warning(
                "fenced writes refused: %s (lease %s)",
                ", ".join(f"{op}={n}" for op, n in sorted(refused.items())),
                self.lease_key,
            )


def standby(
    store: Store,
    client: redis.Redis,
    config: SchedulerConfiguration,
    should_stop: Callable[[], bool],
) -> LeaderElector | None:
    """``serve``'s election: None when ``leaderElection.leaderElect`` is off (writes stay
    unfenced); else block as a standby until this process leads (or ``should_stop``),
    every write through ``store`` and ``client``'s queue scripts fenced by the lease's
    token (coordinators built on them later, e.g. after a Redis outage, share it). Standing by and leading are
    logged (INFO); who holds the lease is in Redis (``LeaderElector.lease``)."""
    le = config.leader_election
    if not le.leader_elect:
        return None
    share_fence(store, client)
    elector = LeaderElector(client, store, le)
    log.info("standing by for lease %s as %s", le.lease_name, elector.identity)
    if elector.acquire(should_stop):
        log.info("leading as %s (fencing token %d)", elector.identity, elector.token)
    return elector
