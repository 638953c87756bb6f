"""The nominator: which pods preemption nominated to which node (upstream PodNominator).

A nominated pod is not bound yet, but the node it preempted for must keep room for it:
filters add nominated pods of equal or higher priority to a node before checking it.
Nominations live in Redis next to the queue (same hash-tagged prefix) so every process
sees them: ``node_of`` maps pod -> node, one ZSET per node lists its pods in insertion
order (upstream returns them in the order they were nominated), and ``priority`` keeps
each pod's priority so callers can filter without loading pods.

Every change is one ``nominate.lua`` call guarded by the node the caller believes is
current (first this process's view, which is right unless another process changed it;
then what it reads from Redis); a concurrent change makes the call refuse and retry, so
two processes never leave a pod listed under two nodes.

The Nominator is also the one in-memory view Filter reads (node -> nominated pods): every
change this process makes goes through ``_set``, which updates Redis and then the view,
so no path (pod deleted, bound, updated, preempted away) can leave a stale reservation
behind. Redis stays the source of truth: ``load`` rebuilds the view after a restart.
Pod objects are not copied into the view: ``pod_lookup`` (the informer's current pods)
resolves keys when the view is read, so the view always holds the pod as it is now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import redis

from cluster_sched.errors import StoreError
from cluster_sched.queue.keys import DEFAULT_PREFIX, NominatorKeys
from cluster_sched.queue.nominees import AtLeast, NomineeIndex
from cluster_sched.queue.scripts import as_text, scripts_for
from cluster_sched.queue.store_errors import translate_redis_errors
from cluster_sched.store.batch import ScriptBatch

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from cluster_sched.api.objects import Pod

__all__ = ["NominatedPodsView", "Nominator"]

#: pod key -> the pod as the process currently knows it (None: unknown or deleted)
PodLookup = Callable[[str], "Pod | None"]

# Optimistic retries before declaring the nomination contended beyond reason.
_MAX_RETRIES = 16


class Nominator:
    """Nominated pods per node, shared through Redis."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        pod_lookup: PodLookup | None = None,
    ) -> None:
        self._client = client
        self._keys = NominatorKeys.for_prefix(prefix)
        self._scripts = scripts_for(client)
        self.pod_lookup: PodLookup = pod_lookup or (lambda _key: None)
        #: node -> pod keys nominated there, in nomination order (dict as ordered set)
        self._by_node: dict[str, dict[str, None]] = {}
        self._node_of: dict[str, str] = {}
        #: the priority each nomination was last written with (unknown after ``load``)
        self._priority_of: dict[str, int] = {}
        #: per priority threshold, the nominees per node, kept up to date on read
        self._index = NomineeIndex(self._by_node, self._node_of, self.pod_lookup)

    # ------------------------------------------------------------------ in-memory view

    def _remember(self, pod_key: str, node_name: str, priority: int | None = None) -> None:
        old = self._node_of.pop(pod_key, None)
        self._index.moved(pod_key, old, node_name)
        if node_name and priority is not None:
            self._priority_of[pod_key] = priority
        else:
            self._priority_of.pop(pod_key, None)
        if old is not None:
            keys = self._by_node.get(old)
            if keys is not None:
                keys.pop(pod_key, None)
                if not keys:
                    del self._by_node[old]
        if node_name:
            self._node_of[pod_key] = node_name
            self._by_node.setdefault(node_name, {})[pod_key] = None

    @translate_redis_errors("load nominations")
    def load(self) -> int:
        """Rebuild the in-memory view from Redis (after a restart); returns how many
        nominations it holds."""
        self._by_node.clear()
        self._node_of.clear()
        self._priority_of.clear()
        self._index.reset(self.pod_lookup)
        node_of: dict[str, str] = {}
        for k, v in self._client.hgetall(self._keys.node_of).items():
            try:
                node_of[as_text(k)] = as_text(v)
            except UnicodeDecodeError:  # written by something else: not a nomination
                log.warning("skipping an unreadable nomination record %r", k)
        for node in sorted(set(node_of.values())):
            for key in self.nominated_pods_for_node(node):
                if node_of.get(key) == node:
                    self._remember(key, node)
        return len(self._node_of)

    def has_nomination(self, pod_key: str) -> bool:
        """Whether this process's view holds a nomination for ``pod_key``."""
        return pod_key in self._node_of

    def nominated_pods(self) -> NominatedPodsView:
        """node -> nominated pods (as they are now), a live view for Filter."""
        return NominatedPodsView(self._by_node, self.pod_lookup, self.at_least)

    def at_least(self, priority: int) -> AtLeast:
        """Per node, the nominated pods (as they are now) of ``priority`` or more, with
        their request sums (``nominees``); kept between calls, so reading it does not
        walk every nomination's pod again."""
        if self._index.lookup is not self.pod_lookup:  # replaced since: start afresh
            self._index.reset(self.pod_lookup)
        return self._index.at_least(priority)

    def pods_nominated_to(self, node_name: str) -> list[Pod]:
        """The pods nominated to ``node_name`` in nomination order, from the view."""
        return self.nominated_pods().get(node_name, [])  # type: ignore[return-value]

    @property
    def keys(self) -> NominatorKeys:
        return self._keys

    def _current(self, pod_key: str) -> tuple[str, int]:
        pipe = self._client.pipeline(transaction=False)
        pipe.hget(self._keys.node_of, pod_key)
        pipe.hget(self._keys.priority, pod_key)
        node, priority = pipe.execute()
        return (as_text(node) if node else "", int(priority) if priority else 0)

    def _unchanged(self, pod_key: str, node_name: str, priority: int) -> bool:
        """Nominating the pod to the node it is already the last nominee of, with the
        priority it was written with: the script would leave node, priority and order
        as they are (upstream's delete-then-append of the last pod), so it is not run.
        The informer's echo of the failure handler's own nomination is one."""
        if not node_name or self._node_of.get(pod_key) != node_name:
            return False
        keys = self._by_node.get(node_name)
        return (
            self._priority_of.get(pod_key) == priority
            and next(reversed(keys or {}), None) == pod_key
        )

    def _set(self, pod_key: str, node_name: str, priority: int | None) -> None:
        if priority is not None and self._unchanged(pod_key, node_name, priority):
            return
        if priority is not None:
            # First try this process's view as the current node: one round trip when
            # no other process changed it (the script checks, and refuses otherwise).
            guess = self._node_of.get(pod_key, "")
            if self._scripts.nominate(
                self._keys, pod_key, current_node=guess, node=node_name, priority=priority
            ):
                self._remember(pod_key, node_name, priority)
                return
        for _ in range(_MAX_RETRIES):
            current, current_priority = self._current(pod_key)
            applied = self._scripts.nominate(
                self._keys,
                pod_key,
                current_node=current,
                node=node_name,
                priority=current_priority if priority is None else priority,
            )
            if applied:
                self._remember(
                    pod_key, node_name, current_priority if priority is None else priority
                )
                return
        raise StoreError(f"nomination of pod {pod_key} kept changing under concurrent writers")

    @translate_redis_errors("add a nominated pod")
    def add_nominated_pod(self, pod_key: str, node_name: str, priority: int = 0) -> None:
        """Nominate ``pod_key`` to ``node_name``, replacing any earlier nomination.

        An empty ``node_name`` only removes the old nomination (upstream: a pod with no
        nominated node is not kept).
        """
        self._set(pod_key, node_name, priority)

    def add_nominated_pod_in(
        self, batch: ScriptBatch, pod_key: str, node_name: str, priority: int
    ) -> Callable[[], None]:
        """:meth:`add_nominated_pod` as a call of ``batch`` (this process's view as the
        current node, as ``_set`` first tries); the returned function, called after the
        batch ran, records it, or, if another process changed the nomination meanwhile,
        sets it again the usual way (the refused call wrote nothing)."""
        if self._unchanged(pod_key, node_name, priority):
            return lambda: None
        guess = self._node_of.get(pod_key, "")
        index = self._scripts.nominate_in(
            batch, self._keys, pod_key, current_node=guess, node=node_name, priority=priority
        )

        @translate_redis_errors("add a nominated pod")
        def finish() -> None:
            if batch.reply(index):
                self._remember(pod_key, node_name, priority)
            else:
                self._set(pod_key, node_name, priority)

        return finish

    @translate_redis_errors("delete a nominated pod")
    def delete_nominated_pod_if_exists(self, pod_key: str) -> None:
        """Forget ``pod_key``'s nomination; a no-op if it has none."""
        if pod_key in self._node_of or self._client.hexists(self._keys.node_of, pod_key):
            self._set(pod_key, "", 0)
        else:
            self._remember(pod_key, "")

    @translate_redis_errors("update a nominated pod")
    def update_nominated_pod(
        self,
        old_key: str,
        new_key: str,
        node_name: str,
        *,
        old_node_name: str = "",
        priority: int | None = None,
    ) -> None:
        """Carry a nomination over a pod update (upstream UpdateNominatedPod).

        ``node_name`` / ``old_node_name`` are the new / old pod's
        ``status.nominatedNodeName``. When both are empty the node reserved in memory is
        kept: an update without the field often arrives just after preemption nominated
        the pod, before the status write. Otherwise the new pod's value wins (set,
        changed or removed). ``priority`` None keeps the recorded one.
        """
        if old_key == new_key and priority is not None and (node_name or old_node_name):
            self._set(new_key, node_name, priority)  # nothing here depends on the current node
            return
        current, current_priority = self._current(old_key)
        node = current if not node_name and not old_node_name else node_name
        if priority is None:
            priority = current_priority
        if old_key != new_key:
            self._set(old_key, "", 0)
        self._set(new_key, node, priority)

    @translate_redis_errors("read nominated pods")
    def nominated_pods_for_node(self, node_name: str) -> list[str]:
        """Pod keys nominated to ``node_name``, in the order they were nominated."""
        return [as_text(m) for m in self._client.zrange(self._keys.node(node_name), 0, -1)]

    @translate_redis_errors("read nominated pods")
    def nominated_pods_with_priority(self, node_name: str) -> list[tuple[str, int]]:
        """``(pod key, priority)`` of the pods nominated to ``node_name``, in nomination
        order; filters use the priority to skip lower-priority nominees."""
        pods = self.nominated_pods_for_node(node_name)
        if not pods:
            return []
        priorities = self._client.hmget(self._keys.priority, pods)
        return [
            (pod, int(p) if p is not None else 0) for pod, p in zip(pods, priorities, strict=True)
        ]

    @translate_redis_errors("read a nominated node")
    def nominated_node_for_pod(self, pod_key: str) -> str | None:
        """The node ``pod_key`` is nominated to, or None."""
        node = self._client.hget(self._keys.node_of, pod_key)
        return as_text(node) if node else None


class NominatedPodsView(Mapping[str, Sequence["Pod"]]):
    """node -> pods nominated there, over the Nominator's index without copying it.

    Only nodes with at least one nominated pod the process still knows are listed."""

    __slots__ = ("_at_least", "_by_node", "_lookup")

    def __init__(
        self,
        by_node: dict[str, dict[str, None]],
        lookup: PodLookup,
        at_least: Callable[[int], AtLeast] | None = None,
    ) -> None:
        self._by_node = by_node
        self._lookup = lookup
        self._at_least = at_least

    def at_least(self, priority: int) -> AtLeast | None:
        """The nominator's ``at_least`` answer, if the view has a nominator behind it."""
        return None if self._at_least is None else self._at_least(priority)

    def __getitem__(self, node: str) -> Sequence[Pod]:
        pods = [p for p in map(self._lookup, self._by_node[node]) if p is not None]
        if not pods:
            raise KeyError(node)
        return pods

    def __iter__(self) -> Iterator[str]:
        return (node for node in list(self._by_node) if node in self)

    def __contains__(self, node: object) -> bool:
        keys = self._by_node.get(node) if isinstance(node, str) else None
        return bool(keys) and any(self._lookup(k) is not None for k in keys)  # type: ignore[union-attr]

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def live_items(
        self, at_least: int | None = None, except_uid: str | None = None
    ) -> list[tuple[str, list[Pod]]]:
        """``(node, pods)`` for every node listed, each pod looked up once (``items()``
        looks each node's pods up twice: once to list the node, once to read it). With
        ``at_least``: only pods of that priority or more, other than ``except_uid``, and
        only nodes left with some (the pods Filter adds before checking a node), nodes
        in no particular order, from the nominator's ``at_least`` when there is one."""
        lookup = self._lookup
        out = []
        if at_least is None:
            for node, keys in list(self._by_node.items()):
                pods = [p for p in map(lookup, keys) if p is not None]
                if pods:
                    out.append((node, pods))
            return out
        if self._at_least is not None:
            return self._at_least(at_least).items(except_uid=except_uid)
        for node, keys in list(self._by_node.items()):
            pods = [
                p
                for p in map(lookup, keys)
                if p is not None and p.priority >= at_least and p.uid != except_uid
            ]
            if pods:
                out.append((node, pods))
        return out

    def __bool__(self) -> bool:
        """Any node with a live nomination: stops at the first (``if nominated:`` in
        every Filter call would otherwise count them all)."""
        return any(node in self for node in self._by_node)
