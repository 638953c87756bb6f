"""Redis failures become :class:`StoreError` at the queue's boundary.

Callers (the coordinator, the CLI) handle one project error with a readable message;
a redis-py traceback never escapes the queue. The original exception stays chained.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import redis

from cluster_sched.errors import StoreError

__all__ = ["translate_redis_errors"]

P = ParamSpec("P")
R = TypeVar("R")


def translate_redis_errors(operation: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: re-raise ``redis.RedisError`` as ``StoreError("cannot <operation>: ...")``."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except redis.RedisError as exc:
                reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
                raise StoreError(f"cannot {operation} in Redis: {reason}") from exc

        return wrapper

    return decorate
