"""Redis key names of the queue and the nominator, all built here in Python.

Every key starts with one hash-tagged prefix (default ``{cs}``) so that a Redis Cluster
keeps them in one slot and a Lua script may touch them all; scripts receive every key
through KEYS and never build a name themselves. A different prefix is a different,
fully independent queue (tests and concurrent processes namespace this way).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_PREFIX", "NominatorKeys", "QueueKeys", "validate_prefix"]

#: Key prefix of the production queue; the braces are the Redis Cluster hash tag.
DEFAULT_PREFIX = "{cs}"


def validate_prefix(prefix: str) -> str:
    """A prefix must carry a non-empty ``{hash tag}`` so every key shares a slot."""
    open_at = prefix.find("{")
    close_at = prefix.find("}", open_at + 1)
    if open_at < 0 or close_at <= open_at + 1:
        raise ValueError(f"key prefix {prefix!r} needs a non-empty hash tag such as '{{cs}}'")
    return prefix


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The scheduling queue's keys. ``core`` is the KEYS array every queue script takes,
    in the order the scripts' headers document."""

    #: ZSET pod member (sort tiebreak NUL pod key) -> QueueSort score
    active: str
    #: ZSET pod key -> backoff expiry (seconds since epoch)
    backoff: str
    #: ZSET pod key -> timestamp the pod entered the unschedulable pool
    unschedulable: str
    #: ZSET pod key -> time it was popped
    in_flight: str
    #: HASH pod key -> msgpack QueuedPodInfo
    info: str
    #: HASH pod key -> attempts (authoritative: pop increments it in Lua)
    attempts: str
    #: HASH pod key -> "<score>\n<member>" of the pod's activeQ entry
    sort_key: str
    #: HASH pod key -> Location value
    where: str
    #: HASH pod key -> revision, changed by every write (guards read-decide-write)
    rev: str
    #: STRING scheduling cycle, incremented per pop
    cycle: str
    #: STRING scheduling cycle of the last move request (-1 if none)
    move_cycle: str
    #: LIST wake-up tokens for blocked pops
    wake: str
    #: STRING source of revisions, never reset (no ABA when a pod key is reused)
    seq: str
    #: HASH pod key -> the queue record that failed to decode (moved aside, not core)
    dead_letter: str

    @classmethod
    def for_prefix(cls, prefix: str) -> QueueKeys:
        base = f"{validate_prefix(prefix)}:q:"
        return cls(
            active=base + "active",
            backoff=base + "backoff",
            unschedulable=base + "unschedulable",
            in_flight=base + "inflight",
            info=base + "info",
            attempts=base + "attempts",
            sort_key=base + "sortkey",
            where=base + "where",
            rev=base + "rev",
            cycle=base + "cycle",
            move_cycle=base + "move_cycle",
            wake=base + "wake",
            seq=base + "seq",
            dead_letter=base + "deadletter",
        )

    @property
    def core(self) -> tuple[str, ...]:
        return (
            self.active,
            self.backoff,
            self.unschedulable,
            self.in_flight,
            self.info,
            self.attempts,
            self.sort_key,
            self.where,
            self.rev,
            self.cycle,
            self.move_cycle,
            self.wake,
            self.seq,
        )

    def closing(self, token: str) -> str:
        """LIST one SchedulingQueue instance pushes to wake its own blocked pops on close."""
        return f"{self.wake}:closing:{token}"


@dataclass(frozen=True, slots=True)
class NominatorKeys:
    """The nominator's keys; one ZSET per node holds the pods nominated to it."""

    #: HASH pod key -> nominated node name
    node_of: str
    #: HASH pod key -> pod priority
    priority: str
    #: STRING insertion counter (scores of the per-node ZSETs: upstream keeps order)
    seq: str
    node_prefix: str

    @classmethod
    def for_prefix(cls, prefix: str) -> NominatorKeys:
        base = f"{validate_prefix(prefix)}:n:"
        return cls(
            node_of=base + "node_of",
            priority=base + "priority",
            seq=base + "seq",
            node_prefix=base + "node:",
        )

    def node(self, node_name: str) -> str:
        """ZSET pod key -> insertion order, of the pods nominated to ``node_name``."""
        return self.node_prefix + node_name
