"""What a direct call to a shard actor gives back (``RayShardClient``), shared with the
relay (``workers.ray_relay``): a Pending over one Ray reply, Ray failures turned into
``ShardLostError`` (the shard is rebuilt from the replica), and the reduced protocol's
reply decoded into its columns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster_sched.framework.state_codec import decode_value
from cluster_sched.scheduler.shards.replies import ChunkReduction
from cluster_sched.scheduler.shards.source import ShardLostError

__all__ = ["RayPending", "UnknownShard", "decode_reduce", "one_line", "result_or_loss"]


class RayPending:
    __slots__ = ("client", "decode", "ref")

    def __init__(self, client: Any, ref: Any, decode: Callable[[bytes], Any]) -> None:
        self.client = client
        self.ref = ref
        self.decode = decode

    def result(self) -> Any:
        import ray

        try:
            reply = ray.get(self.ref)
        except ray.exceptions.RayError as exc:
            raise ShardLostError(self.client.shard_id, one_line(exc)) from exc
        return self.decode(reply)


def decode_reduce(data: bytes) -> tuple[float, int, ChunkReduction]:
    doc = decode_value(data)
    return float(doc["busy"]), len(data), ChunkReduction.of_wire(doc)


def result_or_loss(pending: RayPending) -> Any:
    try:
        return pending.result()
    except ShardLostError as exc:
        return exc


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".strip()


class UnknownShard:
    """A direct call not sent: the shard's state is unknown since its relay was lost
    (``ShardRelay.unknown``); it fails as a call to a dead actor would."""

    def __init__(self, shard: int) -> None:
        self.shard = shard

    def result(self) -> Any:
        raise ShardLostError(self.shard, "its relay was lost with calls to it in flight")
