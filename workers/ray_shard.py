"""Node shards as Ray actors: ``ShardCore`` behind msgpack bytes.

``ShardActor`` is a thin adapter: every method takes and returns msgpack bytes (built
with ``cluster_sched.framework.state_codec``, never pickle), decodes them and calls the
plain ``ShardCore`` (cluster_sched/scheduler/shards/core.py), where all the logic is and is unit-tested without
Ray. ``ray.remote(ShardActor).options(...)`` happens in one place, ``_start_actor``.

Round trips per scheduling cycle, with ``n`` shards: one Filter fan-out per evaluation
window — usually exactly one window, as the first window asks for as many nodes as the
cycle needs (numFeasibleNodesToFind) and only grows when too few pass — and one Score
fan-out when more than one node is feasible — unless the shards scored the rows that
passed with their Filter answer (``filter_score``) and ``shards.speculation`` finds those
scores exact, which makes it one fan-out per window. A fan-out is one actor call to each shard
owning rows of the request, all in flight together; the coordinator waits for the
slowest. PreFilter, PreScore, NormalizeScore, host selection and assume stay on the
coordinator (its replica of the node columns answers them without a round trip), so a
call carries everything the shard needs:

- the shard's pending **deltas** (nodes and pods as their raw manifests, ``Node.raw`` /
  ``Pod.raw``; an assumed pod's manifest lacks ``spec.nodeName``, the delta names the
  node), applied in order before the call;
- the **pod** (raw manifest) and the profile name;
- the **CycleState** after PreFilter (Filter) or PreScore (Score), via ``encode_state``;
- the shard **rows** to evaluate, int64 bytes, in the coordinator's evaluation order;
- the cluster-wide **facts** plugins read from ``handle.snapshot``: the node
  count and, for the pod's images, (size, nodes holding it), installed in the shard's
  ``ShardSnapshot`` before the plugins run;
- the trace context of the coordinator's current span, if any (a ``shardRun`` span).

Replies are msgpack too: Filter's codes (int8), reason ids (int32), reason tuples and the
failing plugin index (int16) per row; Score's int64 scores per plugin.

Faults: every Ray failure of a call (the actor's process died, the actor is unreachable,
the call raised half-way through applying deltas) becomes ``ShardLostError``;
``ShardedSource`` (cluster_sched/scheduler/shards/source.py) then calls ``rebuild``, which
kills what is left of the actor, starts a new one and replays the replica's full state
into it, and repeats the call once.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.state_codec import (
    StateCodecError,
    decode_state,
    decode_value,
    encode_value,
)
from cluster_sched.kernels import warm_up
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.source import Delta, ShardLostError
from cluster_sched.scheduler.shards.window import warm_up as warm_up_window
from cluster_sched.telemetry.spans import ATTR_SHARD_ID, ATTR_SHARD_NODES, SHARD_RUN
from cluster_sched.telemetry.tracing import resolve_endpoint
from workers.ray_relay import ShardRelay
from workers.ray_runtime import config_document, ensure_ray, worker_tracing
from workers.shard_pending import (
    RayPending,
    UnknownShard,
    decode_reduce,
    one_line,
    result_or_loss,
)
from workers.shard_wire import (
    decode_filter_outcome,
    decode_filter_score,
    decode_scores,
    encode_batch_request,
    encode_deltas,
    encode_filter_outcome,
    encode_filter_score,
    encode_request,
    snapshot_facts,
)

__all__ = [
    "ACTOR_NAME_PREFIX",
    "DEFAULT_SHARD_CPUS",
    "INLINE_PAYLOAD",
    "SHARD_RESOURCE_ENV",
    "RayShardClient",
    "ShardActor",
    "ray_shard_clients",
]

ACTOR_NAME_PREFIX: Final = "cluster-sched-shard-"
"""Shard actors are named ``<prefix><run>-<shard>-<generation>`` (ray.util.list_named_actors)."""
DEFAULT_SHARD_CPUS: Final = 0.0
"""Logical CPUs a shard actor reserves: none, so shards never wait for binding tasks."""
INLINE_PAYLOAD: Final = 32 * 1024
"""A reduced-protocol chunk up to this size travels inside each shard's call (``share``)."""
SHARD_RESOURCE_ENV: Final = "CLUSTER_SCHED_SHARD_RESOURCE"
"""A custom Ray resource shard actors require (a little of, so several fit a node): the
nodes started with it (``ray start --resources '{"cluster-sched-shard": 8}'``) hold the
shards, e.g. every node but the coordinator's. Unset: any node (SPREAD)."""


# ---------------------------------------------------------------------------- the actor


class ShardActor:
    """The Ray-facing side of one shard (wrapped by ``ray.remote`` in ``_start_actor``)."""

    def __init__(self, shard_id: int, config: bytes, seed: int, trace_endpoint: str = "") -> None:
        doc = decode_value(config) if config else None
        warm_up()  # the compiled kernels (numba's on-disk cache) now, not in the first call
        warm_up_window()
        self.core = ShardCore(shard_id, doc, seed=seed)
        self.shard_id = shard_id
        self._trace_endpoint = trace_endpoint or None
        self._pod_doc: Any = None
        self._pod: Pod | None = None

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        """The Ray node this shard runs on (tests check where shards were placed)."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def nodes(self) -> int:
        return self.core.table.n_nodes

    def apply(self, payload: bytes) -> int:
        """Apply encoded deltas (``encode_deltas``)."""
        return self.core.apply(decode_value(payload))

    def filter(self, payload: bytes) -> bytes:
        req = decode_value(payload)
        with self._span(req):
            profile, pod, state, rows = self._prepare(req)
            return encode_filter_outcome(self.core.filter(profile, pod, state, rows))

    def filter_score(self, payload: bytes) -> bytes:
        """Filter, then PreScore and Score of the rows that passed (``shards.speculation``)."""
        req = decode_value(payload)
        with self._span(req):
            profile, pod, state, rows = self._prepare(req)
            return encode_filter_score(self.core.filter_score(profile, pod, state, rows))

    def filter_score_many(self, payload: bytes) -> bytes:
        """A batch's questions (``shards.prefetch``): deltas once, then ``filter_score``
        for each pod, against the rows as they are after those deltas."""
        req = decode_value(payload)
        with self._span(req):
            self.core.apply(decode_value(req["deltas"]))
            out = []
            for ask in req["asks"]:
                profile, pod, state, rows = self._prepare({**ask, "deltas": _NO_DELTAS})
                out.append(encode_filter_score(self.core.filter_score(profile, pod, state, rows)))
            return encode_value(out)

    def reduce(self, deltas: bytes, payload: bytes) -> bytes:
        """The reduced protocol (``shards.reduce``): ``payload`` is the batch chunk every
        shard receives (one object in the object store), ``deltas`` this shard's own."""
        self.core.apply(decode_value(deltas))
        busy, chunk = self.core.reduce(payload)
        return encode_value({"busy": busy, **chunk.wire()})

    def score(self, payload: bytes) -> bytes:
        req = decode_value(payload)
        with self._span(req):
            profile, pod, state, rows = self._prepare(req)
            return encode_value(self.core.score(profile, pod, state, rows))

    def _prepare(self, req: Mapping[str, Any]) -> tuple[str, Pod, CycleState, np.ndarray]:
        self.core.apply(decode_value(req["deltas"]))
        num_nodes, images = req["facts"]
        self.core.set_snapshot(
            num_nodes if num_nodes >= 0 else self.core.table.n_nodes,
            {k: (int(v[0]), int(v[1])) for k, v in images.items()},
        )
        return (
            req["profile"],
            self._pod_of(req["pod"]),
            decode_state(req["state"]),
            np.frombuffer(req["rows"], dtype=np.int64),
        )

    def _pod_of(self, doc: Any) -> Pod:
        """The incoming pod; Filter and Score of one cycle send the same manifest."""
        if isinstance(doc, Pod):
            return doc
        if self._pod is None or doc != self._pod_doc:
            pod = ShardCore._pod_on(doc, (doc.get("spec") or {}).get("nodeName") or "")
            self._pod_doc, self._pod = doc, pod
        assert self._pod is not None
        return self._pod

    def _span(self, req: Mapping[str, Any]) -> Any:
        tracing = worker_tracing(self._trace_endpoint) if req.get("trace") else None
        if tracing is None or not tracing.enabled:
            return _NULL
        return tracing.span(
            SHARD_RUN,
            {ATTR_SHARD_ID: self.shard_id, ATTR_SHARD_NODES: self.core.table.n_nodes},
            parent=tracing.context_from_carrier(req["trace"]),
        )


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NULL: Final = _Null()
_NO_DELTAS: Final = encode_value([])
_REMOTE: Any = None


def _start_actor(shard_id: int, config: bytes, seed: int, name: str, trace_endpoint: str) -> Any:
    """The one place ShardActor becomes a Ray actor. No restarts and no task retries:
    after a crash the coordinator rebuilds the shard itself, from its replica, because
    a restarted actor would come back empty."""
    import ray

    global _REMOTE
    if _REMOTE is None:
        _REMOTE = ray.remote(ShardActor)
    resource = os.environ.get(SHARD_RESOURCE_ENV)
    return _REMOTE.options(
        name=name,
        num_cpus=DEFAULT_SHARD_CPUS,
        resources={resource: 0.01} if resource else None,
        max_restarts=0,
        max_task_retries=0,
        max_concurrency=1,
        scheduling_strategy="SPREAD",
    ).remote(shard_id, config, seed, trace_endpoint)


# ---------------------------------------------------------------------------- the client


class RayShardClient:
    """ShardClient for one ShardActor (see the module docstring for the wire format).
    With a ``relay`` (``workers.ray_relay``) the reduced protocol's chunks go through it
    and every direct call passes its gate first (one order per shard)."""

    def __init__(
        self, shard_id: int, start: Callable[[int], Any], name: Callable[[int], str] = str
    ) -> None:
        """``start(generation)`` creates the actor (generation 0, then one per rebuild),
        named ``name(generation)``."""
        self.shard_id = shard_id
        self._start = start
        self._name = name
        self.generation = 0
        self.relay: ShardRelay | None = None
        self.actor = start(0)
        self.snapshot: Any = None
        #: the first call, answered once the actor is up (``ray_shard_clients(wait=False)``)
        self.starting: RayPending | UnknownShard | None = None

    def wait_started(self) -> None:
        """Wait until the actor is up, if its start was not waited for: raises the cause
        (ShardLostError) if it could not start."""
        pending, self.starting = self.starting, None
        if pending is not None:
            pending.result()
        if self.relay is not None:
            self.relay.wait_started()

    @property
    def actor_name(self) -> str:
        return self._name(self.generation)

    def _direct(self) -> bool:
        """The relay's gate before a direct call: False if this shard's state is unknown."""
        relay = self.relay
        if relay is None:
            return True
        relay.before_direct()
        return self.shard_id not in relay.unknown

    def _encode(self, deltas: list[Delta]) -> bytes:
        try:
            return encode_deltas(deltas)
        except StateCodecError as exc:  # the shard cannot be brought up to date
            raise ShardLostError(self.shard_id, f"deltas cannot travel: {exc}") from exc

    def _send(self, method: str, *args: Any) -> Any:
        ref = getattr(self.actor, method).remote(*args)
        if self.relay is not None:
            self.relay.sent_direct(ref)
        return ref

    def attach_snapshot(self, snapshot: Any) -> None:
        """The coordinator's cluster-wide view (its Cache) to read facts from per call."""
        self.snapshot = snapshot

    def _submit(
        self,
        method: str,
        decode: Callable[[bytes], Any],
        deltas: list[Delta],
        profile: str,
        pod: Pod,
        state: CycleState,
        rows: np.ndarray,
    ) -> RayPending | UnknownShard:
        """Send one request. The caller has handed ``deltas`` over for good: if the rest
        of the request cannot be encoded (a CycleState value that cannot travel), the
        deltas still go, alone, before the error is raised, so the shard never diverges
        from the replica."""
        if not self._direct():
            return UnknownShard(self.shard_id)
        encoded = self._encode(deltas)
        try:
            payload = encode_request(encoded, profile, pod, state, rows, self.snapshot)
        except Exception:
            if deltas:
                self._send("apply", encoded)  # ordered before any later call
            raise
        return RayPending(self, self._send(method, payload), decode)

    def submit_filter(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> RayPending | UnknownShard:
        return self._submit("filter", decode_filter_outcome, deltas, profile, pod, state, rows)

    def submit_score(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> RayPending | UnknownShard:
        return self._submit("score", decode_scores, deltas, profile, pod, state, rows)

    def submit_filter_score(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> RayPending | UnknownShard:
        return self._submit("filter_score", decode_filter_score, deltas, profile, pod, state, rows)

    def submit_filter_score_many(
        self, deltas: list[Delta], asks: list[tuple[str, Pod, CycleState, np.ndarray]]
    ) -> RayPending | UnknownShard:
        """One call for a batch's questions (``shards.prefetch``)."""
        if not self._direct():
            return UnknownShard(self.shard_id)
        encoded = self._encode(deltas)
        try:
            payload = encode_batch_request(encoded, asks, self.snapshot)
        except Exception:
            if deltas:
                self._send("apply", encoded)  # ordered before any later call
            raise
        return RayPending(
            self,
            self._send("filter_score_many", payload),
            lambda data: [decode_filter_score(b) for b in decode_value(data)],
        )

    @staticmethod
    def gather(pendings: list[RayPending]) -> list[Any]:
        """Every call's result (or its ShardLostError) in one ``ray.get``: the
        coordinator waits once per chunk, whatever the shard count."""
        import ray

        try:
            replies = ray.get([p.ref for p in pendings])
        except ray.exceptions.RayError:  # which shard: each call on its own
            return [result_or_loss(p) for p in pendings]
        return [p.decode(r) for p, r in zip(pendings, replies, strict=True)]

    @staticmethod
    def share(payload: bytes) -> Any:
        """What every shard's call carries, encoded once: a payload up to
        ``INLINE_PAYLOAD`` bytes as itself (Ray copies it into each call's message), a
        bigger one (a chunk carrying the node order) as one object in Ray's object store
        that every call refers to. A ``ray.put`` and the reference each call resolves
        cost the coordinator's process ~1 ms of CPU per chunk (Ray's client threads
        included), a copy per call of a chunk of compact asks (~3 KB for 64 pods of one
        shape) a few µs; past Ray's own inline limit (100 KB) Ray would store an
        argument once per call."""
        if len(payload) <= INLINE_PAYLOAD:
            return payload
        import ray

        return ray.put(payload)

    @staticmethod
    def facts(snapshot: Any, pod: Pod) -> list[Any]:
        return snapshot_facts(snapshot, pod)

    def submit_reduce(self, deltas: list[Delta], shared: Any, size: int) -> tuple[RayPending, int]:
        """One reduced-protocol call: ``shared`` from ``share``, sent by reference."""
        if not self._direct():
            raise ShardLostError(self.shard_id, "its relay was lost with calls to it in flight")
        encoded = self._encode(deltas)
        pending = RayPending(self, self._send("reduce", encoded, shared), decode_reduce)
        return pending, size + len(encoded)

    def submit_reduce_all(
        self, clients: list[RayShardClient], deltas: Callable[[int], list[Delta]], payload: bytes
    ) -> list[tuple[Any, int]] | None:
        """One chunk to every shard through the relay, in one call (``ray_relay``): per
        shard a Pending and the bytes it is sent; None when there is no relay to use
        (the caller makes the direct calls). ``deltas(s)``: shard s's, taken if sent."""
        relay = self.relay
        if relay is None or relay.unknown or not relay.usable():  # unknown: lost, rebuilt
            return None
        return relay.submit_chunk(clients, [deltas(c.shard_id) for c in clients], payload, decode_reduce)  # fmt: skip

    def submit_apply(self, deltas: list[Delta]) -> RayPending | UnknownShard:
        if not self._direct():
            return UnknownShard(self.shard_id)
        encoded = self._encode(deltas)
        return RayPending(self, self._send("apply", encoded), int)

    def pid(self) -> int:
        """The actor's worker process id (fault tests kill it)."""
        return int(RayPending(self, self.actor.pid.remote(), int).result())

    def rebuild(self, deltas: list[Delta]) -> None:
        """Replace the actor by a new one holding ``deltas`` (the replica's full state for
        this shard). Raises ShardLostError if the new actor fails too."""
        import ray

        if self.relay is not None:
            self.relay.before_direct()  # every relayed call to the old actor done
        with contextlib.suppress(Exception):  # already gone: nothing to clean up
            ray.kill(self.actor, no_restart=True)
        self.generation += 1
        try:
            self.actor = self._start(self.generation)
        except Exception as exc:  # e.g. the cluster has no room left
            raise ShardLostError(
                self.shard_id, f"cannot start a new actor: {one_line(exc)}"
            ) from exc
        if self.relay is not None:
            self.relay.unknown.discard(self.shard_id)
        self.submit_apply(deltas).result()

    def close(self) -> None:
        import ray

        with contextlib.suppress(Exception):
            ray.kill(self.actor, no_restart=True)
        if self.relay is not None:
            self.relay.close()


_RUNS = itertools.count()


def ray_shard_clients(
    n: int,
    *,
    config_path: str | None = None,
    seed: int = 0,
    address: str | None = None,
    wait: bool = True,
    relay: bool = False,
) -> list[RayShardClient]:
    """``n`` shard actors (joining Ray at ``address``, $RAY_ADDRESS, or a local instance),
    each building its Frameworks from the configuration file at ``config_path``.

    ``wait``: return once every actor is up (an actor that cannot start raises, with the
    cause). Otherwise return at once, each actor starting (a process, its imports, its
    kernels warmed) while the caller goes on, e.g. loads the store: a call waits for
    its actor anyway, and ``RayShardClient.wait_started`` raises what a failed start
    would have raised here. ``relay``: the reduced protocol's chunks go through one relay
    actor (``workers.ray_relay``), which all the clients share."""
    if n < 1:
        raise ValueError(f"need at least one shard, got {n}")
    ensure_ray(address)
    config = config_document(config_path)
    endpoint = resolve_endpoint(None) or ""
    run = f"{uuid.uuid4().hex[:8]}{next(_RUNS)}"

    def namer(shard: int) -> Callable[[int], str]:
        return lambda gen: f"{ACTOR_NAME_PREFIX}{run}-{shard}-{gen}"

    def starter(shard: int) -> Callable[[int], Any]:
        return lambda gen: _start_actor(shard, config, seed, namer(shard)(gen), endpoint)

    clients = [RayShardClient(i, starter(i), namer(i)) for i in range(n)]
    if relay:
        shared = ShardRelay(n, run, INLINE_PAYLOAD, os.environ.get(SHARD_RESOURCE_ENV))
        for c in clients:
            c.relay = shared
    for c in clients:
        c.starting = c.submit_apply([])
    if wait:  # fail now, with the cause, if an actor cannot start (bad config, no cluster)
        for c in clients:
            c.wait_started()
    return clients
