"""Where redis-py errors become the project's StoreError.

Every public Store method runs inside :func:`redis_boundary`, so callers handle one error
type with a readable one-line message, and the redis-py exception stays reachable through
``__cause__`` for debugging.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

from cluster_sched.errors import StoreError

__all__ = ["redis_boundary"]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


@contextmanager
def redis_boundary(operation: str) -> Iterator[None]:
    """Translate redis-py failures during ``operation`` into StoreError (chained)."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise StoreError(f"redis unreachable during {operation}: {_first_line(exc)}") from exc
    except redis.RedisError as exc:
        raise StoreError(f"redis rejected {operation}: {_first_line(exc)}") from exc
