"""Surviving a Redis outage: the serve loop waits for the store instead of dying.

Why at the loop level: every part of the coordinator (informer, queue, binder, nominator)
talks to Redis, and an outage can strike inside any of them half-way through a cycle. No
per-call retry can leave the coordinator's in-memory state (cache, assumed pods, informer
view) consistent with what Redis kept (with AOF ``everysec`` the last second of writes
may be gone). So :func:`serve_until` treats an outage as "this coordinator is over":
it closes the coordinator, waits for Redis with exponential backoff (tenacity), checks the
store is still the one it was scheduling from, and builds a fresh coordinator, which
does what a restarted coordinator does: requeues pods left in flight, reloads the
nominations, relists every object and resumes.

The store's identity is a run id (:data:`RUN_ID_SUFFIX` under the store prefix) written
at the first start against a store. Redis that comes back without it (restarted with no
persistence) or with another one (restored from another deployment's data) is reported
as :class:`StoreLostError` (exit code 3, see ``cli.py``) and never scheduled from.

A coordinator started while Redis is down (or restarting) waits the same way before it
starts (:func:`first_contact`), leader and standby alike, instead of exiting: one policy
for every wait (:func:`wait_for_redis`). A wrong password is not an outage: it fails
at once.

While Redis is down, one warning line is logged (and one again every
:data:`REPEAT_LOG_INTERVAL` seconds) and the ``cluster_sched_store_unavailable`` gauge
is 1. The wait lasts ``--store-outage-timeout`` seconds (default: forever); past it, the
command ends with the usual one-line Redis error (exit 2).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
import uuid
from collections.abc import Callable
from typing import Protocol, TypeVar

import redis
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_delay,
    stop_never,
    wait_exponential,
)
from tenacity.stop import stop_base

from cluster_sched.errors import StoreError, StoreLostError
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.workload.option_types import seconds

__all__ = [
    "DEFAULT_MAX_BACKOFF",
    "ENV_OUTAGE_TIMEOUT",
    "RUN_ID_SUFFIX",
    "StoreGuard",
    "add_outage_option",
    "ensure_run_id",
    "first_contact",
    "is_outage",
    "outage_timeout",
    "serve_until",
    "wait_for_redis",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Key (under the store prefix) holding the id of the run that first used this store.
RUN_ID_SUFFIX = "run_id"
#: Environment variable for ``--store-outage-timeout`` (seconds; empty or 0: forever).
ENV_OUTAGE_TIMEOUT = "CLUSTER_SCHED_STORE_OUTAGE_TIMEOUT"
#: Cap on one backoff step between two reconnection attempts, in seconds.
DEFAULT_MAX_BACKOFF = 2.0
#: While Redis stays down, the warning is repeated this often (seconds).
REPEAT_LOG_INTERVAL = 30.0

_TRANSIENT = (redis.ConnectionError, redis.TimeoutError, ConnectionError, TimeoutError)


def is_outage(exc: BaseException) -> bool:
    """True if ``exc`` (or an exception it was raised from) says Redis is unreachable.

    ``redis.BusyLoadingError`` (Redis replaying its AOF) is a ConnectionError: a wait too.
    """
    seen: BaseException | None = exc
    depth = 0
    while seen is not None and depth < 16:
        if isinstance(seen, redis.AuthenticationError):
            return False  # a wrong password is a configuration error: waiting won't fix it
        if isinstance(seen, _TRANSIENT):
            return True
        seen = seen.__cause__ or seen.__context__
        depth += 1
    return False


def _run_id_key(prefix: str) -> str:
    return f"{prefix}:{RUN_ID_SUFFIX}"


def ensure_run_id(client: redis.Redis, prefix: str) -> str:
    """The store's run id, written now if this is the first start against this store."""
    key = _run_id_key(prefix)
    client.set(key, uuid.uuid4().hex, nx=True)
    value = client.get(key)
    if value is None:  # pragma: no cover - only if someone deletes it in between
        raise StoreLostError(f"the store's run id {key} vanished right after it was written")
    return value.decode() if isinstance(value, bytes) else str(value)


def check_run_id(client: redis.Redis, prefix: str, expected: str) -> None:
    """Raise StoreLostError unless the store still holds ``expected`` as its run id."""
    key = _run_id_key(prefix)
    value = client.get(key)
    if value is None:
        raise StoreLostError(
            f"Redis came back without its data ({key} is gone): refusing to schedule "
            "from an empty store; restart the coordinator to start a new run"
        )
    got = value.decode() if isinstance(value, bytes) else str(value)
    if got != expected:
        raise StoreLostError(
            f"Redis came back holding another run's data ({key} is {got}, "
            f"this coordinator's run is {expected}): refusing to schedule from it"
        )


def outage_timeout(value: str | float | None) -> float | None:
    """Seconds to wait for Redis, or None for forever (None, '', 0 or negative)."""
    if value is None or value == "":
        return None
    seconds = float(value)
    return seconds if seconds > 0 else None


def add_outage_option(p: argparse.ArgumentParser) -> None:
    """``--store-outage-timeout SECONDS`` (default ``$CLUSTER_SCHED_STORE_OUTAGE_TIMEOUT``,
    else forever)."""
    p.add_argument(
        "--store-outage-timeout",
        type=seconds(zero=True),
        default=None,
        metavar="SECONDS",
        help="how long to wait for Redis when it goes away before giving up (exit 2); "
        f"default ${ENV_OUTAGE_TIMEOUT}, else forever",
    )


class StoreGuard:
    """Waits for an unreachable Redis, and vouches that it came back as it left."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str,
        run_id: str,
        timeout: float | None = None,
        metrics: Metrics | None = None,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.run_id = run_id
        self.timeout = timeout
        self.metrics = metrics or Metrics.disabled()
        self.max_backoff = max_backoff
        #: how many outages this guard has waited through
        self.outages = 0

    def wait(self, cause: BaseException, stopped: Callable[[], bool] = lambda: False) -> bool:
        """Block until Redis answers again (True) or ``stopped()`` turns true (False).

        Raises StoreError after ``timeout`` seconds of outage, StoreLostError if Redis
        came back empty or from another run.
        """
        self.outages += 1
        back = wait_for_redis(
            self.client.ping,
            cause,
            stopped,
            timeout=self.timeout,
            metrics=self.metrics,
            max_backoff=self.max_backoff,
            waiting="scheduling paused",
        )
        if back is None:
            return False
        check_run_id(self.client, self.prefix, self.run_id)
        log.warning("Redis is back after %.1f s; relisting and resuming", back)
        return True

    def _ping(self) -> None:
        self.client.ping()


def wait_for_redis(
    attempt: Callable[[], object],
    cause: BaseException,
    stopped: Callable[[], bool],
    *,
    timeout: float | None,
    metrics: Metrics,
    max_backoff: float = DEFAULT_MAX_BACKOFF,
    waiting: str,
) -> float | None:
    """Call ``attempt`` until it stops failing with an outage: seconds it took, or None
    if ``stopped()`` turned true first. The one policy for every wait on Redis (at
    startup and during a run): exponential backoff capped at ``max_backoff``, one
    warning line (``waiting`` says what is held up) repeated every
    :data:`REPEAT_LOG_INTERVAL` s, the unavailable gauge at 1, StoreError past
    ``timeout`` seconds (None: forever)."""
    started = time.monotonic()
    last_log = started
    metrics.set_store_unavailable(True)
    log.warning(
        "Redis unavailable (%s); %s, retrying%s",
        _first_line(cause),
        waiting,
        f" for up to {timeout:g} s" if timeout else " until it is back",
    )

    def before_sleep(state: RetryCallState) -> None:
        nonlocal last_log
        if time.monotonic() - last_log >= REPEAT_LOG_INTERVAL:
            last_log = time.monotonic()
            log.warning("Redis still unavailable after %.0f s", last_log - started)

    stop = stop_after_delay(timeout) if timeout else stop_never
    retrying = Retrying(
        stop=stop | _StopWhen(stopped),
        wait=wait_exponential(multiplier=0.05, max=max_backoff),
        retry=retry_if_exception(is_outage),
        before_sleep=before_sleep,
        reraise=False,
    )
    try:
        retrying(attempt)
    except RetryError as exc:
        if stopped():
            return None
        last = exc.last_attempt.exception() or cause
        raise StoreError(
            f"Redis unreachable for {time.monotonic() - started:.0f} s "
            f"(--store-outage-timeout {timeout:g}): {_first_line(last)}"
        ) from last
    finally:
        metrics.set_store_unavailable(False)
    return time.monotonic() - started


def first_contact(
    attempt: Callable[[], _T],
    stopped: Callable[[], bool],
    *,
    timeout: float | None,
    metrics: Metrics | None = None,
    max_backoff: float = DEFAULT_MAX_BACKOFF,
) -> _T | None:
    """``attempt()``'s result once Redis answers: a coordinator (leader or standby)
    started during an outage waits it out under the same policy as a running one
    (:func:`wait_for_redis`), instead of exiting. None if ``stopped()`` first."""
    try:
        return attempt()
    except Exception as exc:
        if not is_outage(exc):
            raise
        cause: BaseException = exc
    result: list[_T] = []
    back = wait_for_redis(
        lambda: result.append(attempt()),
        cause,
        stopped,
        timeout=timeout,
        metrics=metrics or Metrics.disabled(),
        max_backoff=max_backoff,
        waiting="not serving yet",
    )
    if back is None:
        return None
    log.warning("Redis is up after %.1f s; starting", back)
    return result[-1]


class _StopWhen(stop_base):
    """Stop retrying once the command was asked to stop (SIGTERM during an outage)."""

    def __init__(self, stopped: Callable[[], bool]) -> None:
        self.stopped = stopped

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.stopped()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class Steppable(Protocol):
    """What the serve loop drives: a started coordinator."""

    def step(self, pop_timeout: float = ...) -> bool: ...

    def close(self) -> None: ...


def serve_until(
    start: Callable[[], Steppable],
    guard: StoreGuard,
    stopped: Callable[[], bool],
    *,
    pop_timeout: float = 0.2,
    on_started: Callable[[Steppable], None] = lambda coord: None,
) -> int:
    """Run ``start()``'s coordinator until ``stopped()``; on a Redis outage, close it,
    wait (``guard``), and start a fresh one. Returns how many coordinators ran.

    Anything that is not an outage propagates, as before.
    """
    coord: Steppable | None = None
    started = 0
    try:
        while not stopped():
            try:
                if coord is None:
                    coord = start()
                    started += 1
                    on_started(coord)
                coord.step(pop_timeout=pop_timeout)
            except Exception as exc:
                if not is_outage(exc):
                    raise
                old, coord = coord, None
                if old is not None:
                    _close_quietly(old)
                if not guard.wait(exc, stopped):
                    break
    finally:
        if coord is not None:
            coord.close()
    return started


def _close_quietly(coord: Steppable) -> None:
    """Close a coordinator whose Redis just went away: its threads must stop, but its
    attempts to say goodbye to Redis may fail and must not hide the outage."""
    try:
        coord.close()
    except Exception as exc:  # Redis is down: nothing more to tell it
        log.debug("closing the coordinator during an outage: %s", _first_line(exc))


def env_outage_timeout() -> float | None:
    """``$CLUSTER_SCHED_STORE_OUTAGE_TIMEOUT`` as :func:`outage_timeout` reads it."""
    try:
        return outage_timeout(os.environ.get(ENV_OUTAGE_TIMEOUT))
    except ValueError as exc:
        raise StoreError(f"{ENV_OUTAGE_TIMEOUT}: not a number of seconds") from exc
