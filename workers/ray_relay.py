"""The shard relay: one Ray actor fanning each reduced-protocol chunk out to every shard.

Without it the coordinator makes one Ray actor call per shard per chunk (``ReducedCalls``,
``RayShardClient.submit_reduce``): ~360 µs of its process's CPU per call (Ray's
submission, its reply, its client threads), ~5.6 µs per pod per shard at 64 pods a
chunk, so its pods/s fall as shards are added (issue 22). Through the relay the
coordinator makes ONE call per chunk, carrying the shared payload once and every shard's
own pending deltas; the relay (``RelayActor``, a plain sync actor) calls the S shard
actors, waits for their replies and returns them as one msgpack list: each shard's
reply bytes exactly as the shard sent them, or the error that lost it. The coordinator
decodes and merges those as before (``MergedChunk``, unchanged: the merge stays where it
is exact and tested; it costs ~0.3 µs per pod per shard there, a second decode in the
relay would cost more than it saves). Its cost per extra shard is then the decode, the
column merge and the shard's deltas.

Order. A shard has no sequence numbers on its deltas: it must run every call in the
order the coordinator issued it. Ray orders an actor's calls per caller only, and with
the relay a shard has two callers, the relay (the reduced protocol's chunks) and the
coordinator (everything else: apply, rebuild, Filter/Score fan-outs, prefetch). So the
coordinator's calls form two lanes and ``ShardRelay`` is the gate between them: before
a direct call it waits until every relayed call it issued has completed (a relayed call
completes only once every shard has answered it or is lost), and before a relayed call
until every direct call it issued has completed. Within a lane Ray's per-caller order
holds: the coordinator is the relay's one caller, the relay is a sync actor (one call
at a time, in arrival order: an async or threaded actor would not guarantee that) and
its calls to each shard leave in that order. The reduced protocol rarely leaves its lane
(a rebuild, the idle sync), so the gate costs nothing in the common case.

Faults. A shard lost behind the relay comes back as its error: ``ShardLostError`` for
that shard, as for a direct call (stale replies; rebuilt before its next call). A lost
relay (its process died, ``ray.kill``) leaves unknown which shards took the deltas of
its outstanding calls, so every shard counts as lost (rebuilt from the replica before
its next call: exact, never a lost pod) and a new relay is started for the next chunk;
after ``MAX_RELAY_RESTARTS`` the coordinator goes back to direct calls. A relay that
cannot start at all (``wait_started``) is given up at once: direct calls.

Placement: the relay follows the shards' rules (``SHARD_RESOURCE_ENV``, no logical
CPUs, SPREAD), so in a cluster it sits on a shard node. Only msgpack crosses processes:
the shards are found by their actor names (``ray.get_actor``), not by pickled handles.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from cluster_sched.framework.state_codec import StateCodecError, decode_value, encode_value
from cluster_sched.scheduler.shards.source import Delta, ShardLostError
from workers.shard_pending import one_line
from workers.shard_wire import encode_deltas

__all__ = ["MAX_RELAY_RESTARTS", "RELAY_NAME_PREFIX", "RelayActor", "ShardRelay"]

RELAY_NAME_PREFIX: Final = "cluster-sched-relay-"
"""The relay actor is named ``<prefix><run>-<generation>``."""
MAX_RELAY_RESTARTS: Final = 3
"""Relays started after a lost one before the coordinator goes back to direct calls."""
_PRUNE_AT: Final = 64
"""Outstanding relayed calls kept before the completed ones are dropped from the gate."""
_NO_DELTAS: Final = encode_value([])


class RelayActor:
    """The relay's logic (module docstring); ``_start_relay`` makes it a Ray actor."""

    def __init__(self, inline_payload: int) -> None:
        self._inline = inline_payload
        self._handles: dict[str, Any] = {}
        #: the process's CPU seconds spent inside ``reduce`` calls (Ray's threads too)
        self._in_calls = 0.0

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        """The Ray node the relay runs on (tests check where it was placed)."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def cpu_seconds(self) -> bytes:
        """msgpack [this process's CPU time, the part of it inside ``reduce`` calls]
        (Ray's threads included): benchmarks read it around a run to charge the relay
        its own cost per pod; the whole process's also counts Ray's idle threads."""
        return encode_value([time.process_time(), self._in_calls])

    def reduce(self, plan: bytes, payload: bytes) -> bytes:
        """``plan``: msgpack ``[[shard actor name, its encoded deltas], ...]``; every
        shard gets ``reduce(deltas, payload)``. Returns msgpack ``[reply, error]`` with,
        per shard in plan order, its reply bytes or None and, then, the error that lost
        it (``ShardLostError``'s message) or None."""

        began = time.process_time()
        try:
            return self._reduce(plan, payload)
        finally:
            self._in_calls += time.process_time() - began

    def _reduce(self, plan: bytes, payload: bytes) -> bytes:
        import ray

        shards = decode_value(plan)
        shared: Any = payload if len(payload) <= self._inline else ray.put(payload)
        refs: list[Any] = []
        errors: list[str | None] = []
        for name, deltas in shards:
            try:
                handle = self._handle(str(name))
                refs.append(handle.reduce.remote(deltas, shared))
                errors.append(None)
            except Exception as exc:  # no such actor (killed, rebuilt): that shard only
                refs.append(None)
                errors.append(one_line(exc))
        replies: list[bytes | None] = [None] * len(refs)
        live = [i for i, r in enumerate(refs) if r is not None]
        try:
            got = ray.get([refs[i] for i in live])
            for i, reply in zip(live, got, strict=True):
                replies[i] = reply
        except ray.exceptions.RayError:  # which shard: each on its own
            for i in live:
                try:
                    replies[i] = ray.get(refs[i])
                except ray.exceptions.RayError as exc:
                    errors[i] = one_line(exc)
                    self._handles.pop(str(shards[i][0]), None)
        return encode_value([replies, errors])

    def _handle(self, name: str) -> Any:
        handle = self._handles.get(name)
        if handle is None:
            import ray

            handle = self._handles[name] = ray.get_actor(name)
            if len(self._handles) > 4 * 1024:  # old generations' names
                self._handles = {name: handle}
        return handle


_REMOTE: Any = None


def _start_relay(name: str, inline_payload: int, resource: str | None) -> Any:
    """The one place RelayActor becomes a Ray actor: the shards' placement rules, no
    restarts (a restarted relay would not know which calls it had forwarded: the
    coordinator starts a new one, ``ShardRelay``), one call at a time."""
    import ray

    global _REMOTE
    if _REMOTE is None:
        _REMOTE = ray.remote(RelayActor)
    return _REMOTE.options(
        name=name,
        num_cpus=0.0,
        resources={resource: 0.01} if resource else None,
        max_restarts=0,
        max_task_retries=0,
        max_concurrency=1,
        scheduling_strategy="SPREAD",
    ).remote(inline_payload)


class _Relayed:
    """One relayed chunk's reply, fetched and decoded once for all its shards."""

    __slots__ = ("_got", "generation", "ref", "relay")

    def __init__(self, relay: ShardRelay, ref: Any) -> None:
        self.relay = relay
        self.ref = ref
        self.generation = relay.generation
        self._got: tuple[list[Any], list[Any]] | None = None

    def fetch(self) -> tuple[list[Any], list[Any]]:
        """The relay's reply (waiting for it), once; a lost relay's is every shard's
        error, and the relay learns it lost calls (``ShardRelay.lost``)."""
        if self._got is None:
            import ray

            try:
                replies, errors = decode_value(ray.get(self.ref))
            except ray.exceptions.RayError as exc:  # the relay is gone
                self.relay.lost(self.generation)
                n = self.relay.shards
                replies, errors = [None] * n, [f"relay lost: {one_line(exc)}"] * n
            self._got = (replies, errors)
            self.relay.settled(self)
        return self._got

    def part(self, at: int) -> tuple[Any, Any]:
        """The reply bytes (or None) and error at plan position ``at``."""
        replies, errors = self.fetch()
        return replies[at], errors[at]


class RelayedPart:
    """A shard's share of a relayed chunk: a Pending whose ``result`` is what the
    direct call's would be (``decode`` of the shard's reply), or ShardLostError."""

    __slots__ = ("at", "decode", "group", "shard")

    #: ``pipeline._gather`` reads each part, not ``RayShardClient.gather``'s refs
    relayed = True

    def __init__(
        self, group: _Relayed, at: int, shard: int, decode: Callable[[bytes], Any]
    ) -> None:
        self.group = group
        self.at = at
        self.shard = shard
        self.decode = decode

    def result(self) -> Any:
        reply, error = self.group.part(self.at)
        if reply is None:
            raise ShardLostError(self.shard, str(error))
        return self.decode(reply)


class ShardRelay:
    """The coordinator's side: the relay actor, its restarts, and the gate between the
    relayed lane and the direct one (module docstring)."""

    def __init__(
        self, shards: int, run: str, inline_payload: int, resource: str | None = None
    ) -> None:
        self.shards = shards
        self._run = run
        self._inline = inline_payload
        self._resource = resource
        self.generation = 0
        self.restarts = 0
        #: False once given up (could not start, or lost too often): direct calls
        self.enabled = True
        #: chunks sent through the relay
        self.chunks = 0
        self._dead = False
        #: relayed calls whose replies are not known yet, by ``id``
        self._relayed: dict[int, _Relayed] = {}
        #: shards whose state is unknown since a relay was lost with calls to them in
        #: flight: a direct call to one fails as to a dead actor (``RayShardClient``),
        #: and its rebuild (from the replica) clears it
        self.unknown: set[int] = set()
        self._direct: list[Any] = []
        self.actor: Any = self._start()
        self.starting: Any = self.actor.pid.remote()

    @property
    def name(self) -> str:
        return f"{RELAY_NAME_PREFIX}{self._run}-{self.generation}"

    def _start(self) -> Any:
        return _start_relay(self.name, self._inline, self._resource)

    def wait_started(self) -> None:
        """Wait for the relay to be up; one that cannot start is given up (direct calls
        from now on: the relay is an optimisation, not a requirement)."""
        starting, self.starting = self.starting, None
        if starting is None:
            return
        import ray

        try:
            ray.get(starting)
        except ray.exceptions.RayError:
            self.enabled = False

    def before_direct(self) -> None:
        """Wait until every relayed call has completed (module docstring, Order), and
        learn from their replies whether the relay was lost with calls in flight."""
        for group in list(self._relayed.values()):
            group.fetch()

    def sent_direct(self, ref: Any) -> None:
        """A direct call to a shard left (``ref``: its reply); the completed ones are
        dropped now and then (paths that never relay, e.g. plugin by plugin)."""
        self._direct.append(ref)
        if len(self._direct) >= _PRUNE_AT:
            import ray

            _, self._direct = ray.wait(self._direct, num_returns=len(self._direct), timeout=0)

    def _before_relayed(self) -> None:
        if self._direct:
            import ray

            ray.wait(self._direct, num_returns=len(self._direct), fetch_local=False)
            self._direct.clear()

    def settled(self, group: _Relayed) -> None:
        """``group``'s reply is known (read, or waited for by the gate)."""
        self._relayed.pop(id(group), None)

    def usable(self) -> bool:
        """Whether the next chunk goes through the relay (restarting a lost one)."""
        if not self.enabled:
            return False
        if self._dead:
            if self.restarts >= MAX_RELAY_RESTARTS:
                self.enabled = False
                return False
            self.restarts += 1
            self.generation += 1
            self.close()  # whatever is left of the lost one
            try:
                self.actor = self._start()
            except Exception:  # no room for it: direct calls
                self.enabled = False
                return False
            self._dead = False
        return True

    def submit_chunk(
        self,
        clients: Sequence[Any],
        deltas: Sequence[list[Delta]],
        payload: bytes,
        decode: Callable[[bytes], Any],
    ) -> list[tuple[RelayedPart, int]]:
        """One chunk for every shard in one call (``clients[s].actor_name``: shard s's
        actor, ``deltas[s]`` its pending deltas): per shard a Pending and the bytes it is
        sent, in order. Deltas that cannot travel lose their shard only, as a direct
        call would: the others' calls leave, then ShardLostError names it."""
        encoded: list[bytes] = []
        failed: ShardLostError | None = None
        for client, ds in zip(clients, deltas, strict=True):
            try:
                encoded.append(encode_deltas(ds))
            except StateCodecError as exc:  # that shard is rebuilt before its next call
                failed = failed or ShardLostError(client.shard_id, f"deltas cannot travel: {exc}")
                encoded.append(_NO_DELTAS)
        parts = self.submit([c.actor_name for c in clients], encoded, payload, decode)
        if failed is not None:
            raise failed
        return [(p, len(payload) + len(e)) for p, e in zip(parts, encoded, strict=True)]

    def submit(
        self,
        names: Sequence[str],
        deltas: Sequence[bytes],
        payload: bytes,
        decode: Callable[[bytes], Any],
    ) -> list[RelayedPart]:
        """One call for every shard (``names[s]``: shard s's actor, ``deltas[s]`` its
        encoded deltas): one Pending per shard, in order."""
        self._before_relayed()
        plan = encode_value([[n, d] for n, d in zip(names, deltas, strict=True)])
        if len(self._relayed) >= _PRUNE_AT:  # retired flights' replies, never read
            import ray

            groups = list(self._relayed.values())
            ready, _ = ray.wait([g.ref for g in groups], num_returns=len(groups), timeout=0)
            done = set(ready)
            for g in groups:
                if g.ref in done:
                    g.fetch()
        group = _Relayed(self, self.actor.reduce.remote(plan, payload))
        self._relayed[id(group)] = group
        self.chunks += 1
        return [RelayedPart(group, s, s, decode) for s in range(len(names))]

    def lost(self, generation: int) -> None:
        """The relay of ``generation`` died with calls in flight: which shards took
        their deltas is unknown, so every shard is (rebuilt before its next call), and
        a new relay takes the next chunk."""
        if generation == self.generation:
            self._dead = True
        self.unknown.update(range(self.shards))

    def cpu_seconds(self) -> tuple[float, float]:
        """The relay process's CPU time so far, and the part inside its calls
        (benchmarks)."""
        import ray

        whole, in_calls = decode_value(ray.get(self.actor.cpu_seconds.remote()))
        return float(whole), float(in_calls)

    def close(self) -> None:
        import ray

        with contextlib.suppress(Exception):
            ray.kill(self.actor, no_restart=True)
