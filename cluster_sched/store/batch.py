"""Several fenced script calls in one round trip.

The failure handler writes four things per failed attempt (the queue's requeue, the
nomination, a FailedScheduling Event and the pod's status); each is one script, and one
after the other they cost four round trips. A :class:`ScriptBatch` collects such calls
and sends them in one pipeline (no MULTI: each script is atomic on its own, as when it is
called alone, and Redis runs them in the order they were added). Each caller then reads
its own reply, or the error its script returned, and finishes as it would have after its
own call.

A call whose script the server does not hold (NOSCRIPT: a restarted or flushed server)
ran nothing: it alone is sent again through its ``Script``, which loads it. Nothing else
is ever re-sent by this class, so a call is never run twice by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from cluster_sched.store.fence import Fence, is_fenced_error

__all__ = ["ScriptBatch"]


def _server(client: Any) -> tuple[Any, ...]:
    kwargs = client.connection_pool.connection_kwargs
    return (kwargs.get("host"), kwargs.get("port"), kwargs.get("path"), kwargs.get("db", 0))


class ScriptBatch:
    """Fenced script calls collected by ``add`` and sent by ``execute``: one pipeline per
    Redis server named by the scripts' clients (normally one)."""

    def __init__(self) -> None:
        self._calls: list[tuple[Script, Fence, str, list[Any], list[Any]]] = []
        self._replies: list[Any] = []

    def __len__(self) -> int:
        return len(self._calls)

    def add(
        self, script: Script, fence: Fence, operation: str, keys: Sequence[Any], args: Sequence[Any]
    ) -> int:
        """Queue ``script`` with ``fence``'s key and token in front (as ``FencedScript``
        and the queue's scripts call it); returns the index of its reply."""
        self._calls.append((script, fence, operation, fence.keys(keys), fence.args(args)))
        return len(self._calls) - 1

    def execute(self) -> None:
        """Send every call; a connection error (nothing or part of it ran) is raised."""
        replies: list[Any] = [None] * len(self._calls)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, (script, *_rest) in enumerate(self._calls):
            groups.setdefault(_server(script.registered_client), []).append(i)
        for indices in groups.values():
            client = self._calls[indices[0]][0].registered_client
            pipe = client.pipeline(transaction=False)
            for i in indices:
                script, _fence, _op, keys, args = self._calls[i]
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            for i, reply in zip(indices, pipe.execute(raise_on_error=False), strict=True):
                replies[i] = reply
        for i, (script, fence, operation, keys, args) in enumerate(self._calls):
            if isinstance(replies[i], NoScriptError):
                try:
                    replies[i] = script(keys=keys, args=args)
                except redis.RedisError as exc:
                    replies[i] = exc
            if isinstance(replies[i], redis.ResponseError) and is_fenced_error(replies[i]):
                fence.note_refused(operation)
        self._replies = replies

    def reply(self, index: int) -> Any:
        """The reply of call ``index``; the error its script returned is raised here."""
        reply = self._replies[index]
        if isinstance(reply, Exception):
            raise reply
        return reply
