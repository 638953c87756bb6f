"""The shard protocol's wire format: msgpack bytes, never pickle (see ``ray_shard``).

Nodes and pods travel as their manifests, CycleStates through ``state_codec``, rows and
numpy results as raw bytes. Shared by the Ray actor and its client, and by tests that
speak the format to an in-process actor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import FilterOutcome
from cluster_sched.framework.state_codec import decode_value, encode_state, encode_value
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.images import normalized_image_name
from cluster_sched.scheduler.shards.source import Delta

__all__ = [
    "FilterScoreReply",
    "current_carrier",
    "decode_filter_outcome",
    "decode_filter_score",
    "decode_scores",
    "encode_batch_request",
    "encode_deltas",
    "encode_filter_outcome",
    "encode_filter_score",
    "encode_request",
    "snapshot_facts",
    "wire_deltas",
]


def _wire_object(obj: Any) -> Any:
    """A Node/Pod as its manifest when it has one (the common case), else the object
    (state_codec carries it as a dataclass)."""
    raw = getattr(obj, "raw", None)
    return raw if raw is not None else obj


def wire_deltas(deltas: Sequence[Delta]) -> list[Delta]:
    out: list[Delta] = []
    for d in deltas:
        op = d[0]
        if op == "node":
            out.append(["node", _wire_object(d[1]), *d[2:]])
        elif op == "nodes":
            out.append(["nodes", [_wire_object(n) for n in d[1]], d[2], d[3]])
        elif op in ("pod+", "pod="):
            out.append([op, d[1], _wire_object(d[2])])
        else:
            out.append(list(d))
    return out


def snapshot_facts(snapshot: Any, pod: Pod) -> list[Any]:
    """``[num_nodes, {image: [size, nodes]}]`` for the pod's images, as the coordinator
    sees them (what ImageLocality reads from the snapshot)."""
    if snapshot is None:
        return [-1, {}]
    images: dict[str, list[int]] = {}
    for c in (*pod.init_containers, *pod.containers):
        name = normalized_image_name(c.image)
        st = snapshot.image_state(name)
        if st is not None:
            images[name] = [int(st[0]), int(st[1])]
    return [int(snapshot.num_nodes), images]


def encode_deltas(deltas: Sequence[Delta]) -> bytes:
    return encode_value(wire_deltas(deltas))


def encode_request(
    deltas: Sequence[Delta] | bytes,
    profile: str,
    pod: Pod,
    state: CycleState,
    rows: np.ndarray,
    snapshot: Any = None,
    trace: Mapping[str, str] | None = None,
) -> bytes:
    """One Filter/Score request (see the module docstring); ``deltas`` may come
    encoded already (``encode_deltas``); ``trace`` defaults to the current span's context."""
    return encode_value(
        {
            "deltas": deltas if isinstance(deltas, bytes) else encode_deltas(deltas),
            "profile": profile,
            "pod": _wire_object(pod),
            "state": encode_state(state),
            "rows": np.ascontiguousarray(rows, dtype=np.int64).tobytes(),
            "facts": snapshot_facts(snapshot, pod),
            "trace": dict(trace) if trace is not None else current_carrier(),
        }
    )


def encode_batch_request(
    deltas: bytes, asks: Sequence[tuple[str, Pod, CycleState, np.ndarray]], snapshot: Any = None
) -> bytes:
    """A batch's questions for ``filter_score_many``: deltas once, then per pod what a
    Filter request carries (``encode_request``) but the deltas."""
    return encode_value(
        {
            "deltas": deltas,
            "asks": [
                {
                    "profile": profile,
                    "pod": _wire_object(pod),
                    "state": encode_state(state),
                    "rows": np.ascontiguousarray(rows, dtype=np.int64).tobytes(),
                    "facts": snapshot_facts(snapshot, pod),
                }
                for profile, pod, state, rows in asks
            ],
            "trace": current_carrier(),
        }
    )


def encode_filter_outcome(out: FilterOutcome) -> bytes:
    v = out.verdicts
    return encode_value([v.codes, v.reason_ids, [tuple(r) for r in v.reasons], out.plugin_idx])


def decode_filter_outcome(data: bytes) -> FilterOutcome:
    codes, reason_ids, reasons, plugin_idx = decode_value(data)
    return FilterOutcome(NodeVerdicts(codes, reason_ids, [tuple(r) for r in reasons]), plugin_idx)


def decode_scores(data: bytes) -> dict[str, np.ndarray]:
    return _scores_of(decode_value(data))


def _scores_of(scores: Mapping[Any, Any]) -> dict[str, np.ndarray]:
    return {str(k): np.asarray(v, dtype=np.int64) for k, v in scores.items()}


FilterScoreReply = tuple[FilterOutcome, np.ndarray, dict[str, np.ndarray] | None, frozenset[str]]


def encode_filter_score(reply: FilterScoreReply) -> bytes:
    out, passing, scores, skipped = reply
    v = out.verdicts
    return encode_value(
        [
            [v.codes, v.reason_ids, [tuple(r) for r in v.reasons], out.plugin_idx],
            np.ascontiguousarray(passing, dtype=np.int64),
            scores,
            sorted(skipped),
        ]
    )


def decode_filter_score(data: bytes) -> FilterScoreReply:
    (codes, reason_ids, reasons, plugin_idx), passing, scores, skipped = decode_value(data)
    outcome = FilterOutcome(
        NodeVerdicts(codes, reason_ids, [tuple(r) for r in reasons]), plugin_idx
    )
    return (
        outcome,
        np.asarray(passing, dtype=np.int64),
        None if scores is None else _scores_of(scores),
        frozenset(map(str, skipped)),
    )


def current_carrier() -> dict[str, str]:
    """The W3C context of the coordinator's current span ({} when there is none)."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not trace.get_current_span().get_span_context().is_valid:
        return {}
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier
