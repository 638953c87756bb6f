"""Typed Python wrappers around the queue's Lua scripts, one per script.

The ``.lua`` files under ``lua/`` are read once per process; queue scripts get
``lua/_lib.lua`` prepended (shared helpers, still one atomic script each). Scripts are
registered once per client (``register_script`` uses EVALSHA and reloads on NOSCRIPT).
Wrappers turn Python values into ARGV strings and Redis replies back into Python
values; the scripts' headers are the contract for both sides.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

import msgpack  # type: ignore[import-untyped]
import redis
from redis.commands.core import Script

from cluster_sched.queue.keys import NominatorKeys, QueueKeys
from cluster_sched.queue.types import Location
from cluster_sched.store.batch import ScriptBatch
from cluster_sched.store.fence import Fence, fence_prelude

__all__ = [
    "Placement",
    "PopReply",
    "QueueScripts",
    "as_text",
    "num_arg",
    "scripts_for",
    "unschedulable_replies",
]

_QUEUE_SCRIPTS = (
    "add",
    "pop_many",
    "unpop",
    "done",
    "add_unschedulable",
    "requeue",
    "flush_backoff",
    "delete",
    "quarantine",
)
_PLAIN_SCRIPTS = ("nominate",)


@cache
def _source(name: str) -> str:
    text = resources.files("cluster_sched.queue").joinpath("lua", f"{name}.lua").read_text()
    if name == "_lib":
        return text
    # The fencing check goes first: it strips the lease key and token from KEYS/ARGV.
    lib = _source("_lib") + "\n" if name in _QUEUE_SCRIPTS else ""
    return fence_prelude() + "\n" + lib + text


def num_arg(value: float | int | None) -> str:
    """A number as an ARGV string ("" for None)."""
    # repr round-trips a double exactly; Redis and Lua parse it with strtod.
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def as_text(value: Any) -> str:
    """A Redis reply element as str (replies are bytes: clients run without decoding)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _packed_args(args: Sequence[str | bytes]) -> bytes:
    """A script's per-pod strings as one msgpack array (add.lua's ARGV[1], pop_many.lua's
    ARGV[4]): one argument for the client to encode instead of one or more per pod (the
    client's encoding and framing cost ~1 us per argument in Python; msgpack packs the
    array in C). Each element reaches the script as the same Lua string its own argument
    would: packed as msgpack raw strings (``use_bin_type=False``; Redis' cmsgpack reads
    no bin type), str as its UTF-8 bytes, as the client would send it."""
    return msgpack.packb(list(args), use_bin_type=False)  # type: ignore[no-any-return]


_ADD_CODES = {"a": "active", "u": "unschedulable", "-": ""}
_ADD_LOCATIONS = {"a": Location.ACTIVE, "u": Location.UNSCHEDULABLE, "-": None}


class Placement(NamedTuple):
    """Where one pod goes and what is recorded about it (one ARGV group). A tuple: one
    is built per pod added or moved, in a third of a frozen dataclass's time."""

    pod_key: str
    #: Location value: active, backoff, unschedulable (inflight: rewrite the record only)
    dest: str
    #: backoff expiry or unschedulable timestamp; unused for active/inflight
    score: float | None = None
    #: the pod's activeQ entry; None keeps the recorded one
    sort_score: float | None = None
    sort_member: str = ""
    #: msgpack QueuedPodInfo; None keeps the stored one
    info: bytes | None = None
    attempts: int | None = None
    #: revision the decision was based on ("" = the pod must not be queued)
    expected_rev: str = ""


class PopReply(NamedTuple):
    pod_key: str
    info: bytes
    attempts: int
    cycle: int
    #: popped from backoffQ (SchedulerPopFromBackoffQ) rather than activeQ
    from_backoff: bool = False


class QueueScripts:
    """The registered scripts of one client."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        #: The lease key and token every call carries (``store/fence.py``); the leader
        #: elector replaces it with the store's fence, shared with the store's writes.
        self.fence = Fence()
        self._scripts: dict[str, Script] = {
            name: client.register_script(_source(name)) for name in _QUEUE_SCRIPTS + _PLAIN_SCRIPTS
        }

    def sha(self, name: str) -> str:
        """The SHA1 of a registered script, for calls inside a caller's pipeline."""
        return str(self._scripts[name].sha)

    def _run(self, name: str, keys: Sequence[str], args: Sequence[str | bytes]) -> Any:
        fence = self.fence  # read once: the elector may swap it (share_fence)
        script, keys_, args_ = self._scripts[name], fence.keys(keys), fence.args(args)
        return fence.call(f"queue.{name}", lambda: script(keys=keys_, args=args_))

    def add(self, keys: QueueKeys, placements: Sequence[Placement]) -> list[str]:
        """Per placement, where the pod went, or "" if it was skipped."""
        args: list[str | bytes] = []
        for p in placements:
            args += [p.pod_key, p.dest, num_arg(p.score), num_arg(p.sort_score), p.sort_member]
            args += [p.info or b"", num_arg(p.attempts or 0)]
        codes = as_text(self._run("add", keys.core, [_packed_args(args)]))
        return [_ADD_CODES[c] for c in codes]

    def add_args(self, keys: QueueKeys, args: Sequence[str | bytes]) -> list[Location | None]:
        """``add`` for the arguments already built (7 per pod, as add.lua's header): per
        pod, where it went, or None if it was skipped."""
        codes = as_text(self._run("add", keys.core, [_packed_args(args)]))
        return [_ADD_LOCATIONS[c] for c in codes]

    def pop_many(
        self,
        keys: QueueKeys,
        now: float,
        max_pods: int,
        *,
        from_backoff: bool = False,
        finished: Sequence[str] = (),
    ) -> list[PopReply]:
        """Up to ``max_pods`` pods, in pop order, each with its own cycle; with
        ``from_backoff``, one backoffQ pod when activeQ is empty. ``finished``: pods
        whose cycle ended, done first (as :meth:`done_many`) in the same script run."""
        args = [
            num_arg(float(now)),
            str(max_pods),
            "1" if from_backoff else "0",
            _packed_args(finished),
        ]
        reply = self._run("pop_many", keys.core, args)
        return [
            PopReply(
                as_text(reply[i]),
                bytes(reply[i + 1]),
                int(reply[i + 2]),
                int(reply[i + 3]),
                as_text(reply[i + 4]) == "backoff",
            )
            for i in range(0, len(reply), 5)
        ]

    def unpop(self, keys: QueueKeys, last_cycle: int, pod_keys: Sequence[str]) -> int:
        """The pods of a popped batch that activeQ's head now precedes, back to activeQ
        (unpop.lua); how many of ``pod_keys`` stay popped, from the front."""
        return int(self._run("unpop", keys.core, [str(last_cycle), *pod_keys]))

    def done(self, keys: QueueKeys, pod_key: str) -> bool:
        return bool(self._run("done", keys.core, [pod_key]))

    def done_many(self, keys: QueueKeys, pod_keys: Sequence[str]) -> int:
        """done.lua once for the whole batch: one round trip, one script run."""
        return int(self._run("done", keys.core, list(pod_keys)))

    def add_unschedulable(
        self, keys: QueueKeys, placements: Sequence[Placement], *, wake_on_backoff: bool = False
    ) -> list[tuple[str, str]]:
        """Per pod, ``('present', location)`` or ``('added', destination)``."""
        args = _unschedulable_args(placements, wake_on_backoff)
        return unschedulable_replies(self._run("add_unschedulable", keys.core, args))

    def add_unschedulable_in(
        self, batch: ScriptBatch, keys: QueueKeys, placements: Sequence[Placement], wake: bool
    ) -> int:
        """:meth:`add_unschedulable` as a call of ``batch`` (its reply index; read it
        with ``unschedulable_replies``)."""
        args = _unschedulable_args(placements, wake)
        return batch.add(
            self._scripts["add_unschedulable"],
            self.fence,
            "queue.add_unschedulable",
            keys.core,
            args,
        )

    def requeue(
        self,
        keys: QueueKeys,
        placements: Sequence[Placement],
        *,
        wake_on_backoff: bool = False,
    ) -> list[str]:
        """Per placement, the location the pod is in now, or "" if its revision moved on."""
        args: list[str | bytes] = ["1" if wake_on_backoff else "0"]
        for p in placements:
            args += [p.pod_key, p.expected_rev, p.dest, num_arg(p.score)]
            args += [num_arg(p.sort_score), p.sort_member if p.sort_score is not None else ""]
            args += [p.info or b"", num_arg(p.attempts)]
        reply = self._run("requeue", keys.core, args)
        return [as_text(r) for r in reply]

    def flush_backoff(self, keys: QueueKeys, now: float, limit: int) -> list[str]:
        reply = self._run("flush_backoff", keys.core, [num_arg(float(now)), str(limit)])
        return [as_text(r) for r in reply]

    def delete(self, keys: QueueKeys, pod_key: str) -> str | None:
        reply = self._run("delete", keys.core, [pod_key])
        return as_text(reply) if reply else None

    def quarantine(self, keys: QueueKeys, pod_key: str, seen: bytes) -> bool:
        """Move the pod's record to the dead-letter hash if it still is ``seen``."""
        return bool(self._run("quarantine", [*keys.core, keys.dead_letter], [pod_key, seen]))

    def nominate(
        self,
        keys: NominatorKeys,
        pod_key: str,
        *,
        current_node: str,
        node: str,
        priority: int,
    ) -> bool:
        """Set ``pod_key``'s nomination to ``node`` ('' clears) if it is still
        ``current_node``; False means it changed meanwhile."""
        script_keys, args = _nominate_call(keys, pod_key, current_node, node, priority)
        return bool(self._run("nominate", script_keys, args))

    def nominate_in(
        self,
        batch: ScriptBatch,
        keys: NominatorKeys,
        pod_key: str,
        *,
        current_node: str,
        node: str,
        priority: int,
    ) -> int:
        """:meth:`nominate` as a call of ``batch``; returns its reply index (the reply:
        1 applied, 0 changed meanwhile)."""
        script_keys, args = _nominate_call(keys, pod_key, current_node, node, priority)
        return batch.add(self._scripts["nominate"], self.fence, "queue.nominate", script_keys, args)


def _nominate_call(
    keys: NominatorKeys, pod_key: str, current_node: str, node: str, priority: int
) -> tuple[list[str], list[str]]:
    script_keys = [
        keys.node_of,
        keys.priority,
        keys.seq,
        keys.node(current_node or node),
        keys.node(node or current_node),
    ]
    return script_keys, [pod_key, current_node, node, str(priority)]


def _unschedulable_args(
    placements: Sequence[Placement], wake_on_backoff: bool
) -> list[str | bytes]:
    args: list[str | bytes] = ["1" if wake_on_backoff else "0"]
    for p in placements:
        args += [p.pod_key, p.dest, num_arg(p.score)]
        args += [num_arg(p.sort_score), p.sort_member, p.info or b"", num_arg(p.attempts or 0)]
    return args


def unschedulable_replies(reply: Any) -> list[tuple[str, str]]:
    """add_unschedulable.lua's reply: per pod ``('present', location)`` or
    ``('added', destination)``."""
    return [(as_text(reply[i]), as_text(reply[i + 1])) for i in range(0, len(reply), 2)]


_registry_lock = threading.Lock()
# The scripts hang off the client itself: a registry keyed by client would keep every
# client alive (each Script holds its client), while this reference cycle is collected
# together with the client.
_ATTRIBUTE = "_cluster_sched_queue_scripts"


def scripts_for(client: redis.Redis) -> QueueScripts:
    """The scripts registered on ``client``, registering them on first use."""
    with _registry_lock:
        scripts = getattr(client, _ATTRIBUTE, None)
        if scripts is None:
            scripts = QueueScripts(client)
            setattr(client, _ATTRIBUTE, scripts)
        return scripts
