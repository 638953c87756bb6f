"""The inputs of bind's over-commit check: node allocatable and per-node requested sums.

bind.lua refuses a binding the node cannot hold (see its header). It reads two hashes the
store keeps itself, so the check costs O(resources) inside the script and never a scan:

- ``{cs}:alloc``: node -> allocatable, recorded by ``apply`` (here) and dropped by delete;
- ``{cs}:noderequested`` / ``{cs}:podrequested``: the requests of the pods bound to each
  node, added by bind.lua (and here for pods created already bound), subtracted by
  delete.lua. The requests are the scheduler's own (``Pod.requests``: containers, init
  containers, overhead), so the store and NodeResourcesFit count the same amounts.

Unparseable manifests are skipped: the scheduler reports them, and no check is better
than a wrong one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgpack
import redis

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Node, Pod
from cluster_sched.store.kinds import StoreKeys
from cluster_sched.store.objects import pack_args, text
from cluster_sched.store.results import ApplyAction, ApplyResult
from cluster_sched.store.scripts import Scripts

__all__ = ["account_applied", "bound_by_store", "pod_requests", "requested_by_node"]


def pod_requests(doc: Mapping[str, Any] | bytes | None) -> dict[str, int]:
    """The effective requests of a pod manifest, or of its stored bytes ({} if it cannot
    be parsed: bind then reports the stored pod as unreadable)."""
    if not doc:
        return {}
    try:
        if isinstance(doc, bytes):
            doc = msgpack.unpackb(doc, raw=False, strict_map_key=False)
        pod = parse_object(dict(doc))  # type: ignore[arg-type]
    except Exception:
        return {}
    return dict(pod.requests) if isinstance(pod, Pod) else {}


def _allocatable(doc: Mapping[str, Any]) -> dict[str, int] | None:
    try:
        node = parse_object(dict(doc))
    except Exception:
        return None
    return dict(node.allocatable) if isinstance(node, Node) else None


def account_applied(scripts: Scripts, keys: StoreKeys, results: Iterable[ApplyResult]) -> int:
    """Record the allocatable of written Nodes and count written Pods that are bound
    (once each: see account.lua). Returns how many pods were counted."""
    nodes: list[tuple[str, dict[str, int]]] = []
    pods: list[tuple[str, str, dict[str, int]]] = []
    for r in results:
        if r.action is ApplyAction.UNCHANGED or r.obj is None:
            continue
        if r.kind == "Node":
            alloc = _allocatable(r.obj)
            if alloc is not None:
                nodes.append((r.key, alloc))
        elif r.kind == "Pod":
            node = (r.obj.get("spec") or {}).get("nodeName")
            if isinstance(node, str) and node:
                pods.append((r.key, node, pod_requests(r.obj)))
    if not nodes and not pods:
        return 0
    reply = scripts.account(
        keys=[keys.allocatable, keys.node_requested, keys.pod_requested, keys.obj("Pod")],
        args=[pack_args(nodes), pack_args(pods)],
    )
    return int(reply)


def requested_by_node(
    client: redis.Redis, keys: StoreKeys
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """``(allocatable, requested)`` by node name, as bind.lua sees them (diagnostics and
    the store checks of the chaos suite)."""

    def read(key: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for name, raw in client.hscan_iter(key, count=1000):
            value = msgpack.unpackb(raw, raw=False, strict_map_key=False)
            out[text(name)] = dict(value) if isinstance(value, Mapping) else {}
        return out

    return read(keys.allocatable), read(keys.node_requested)


def bound_by_store(client: redis.Redis, keys: StoreKeys, pod_keys: Sequence[str]) -> list[str]:
    """Per pod, the node bind.lua (or apply) counted it on, "" if none: whether the
    store's own bind wrote it (and so its Scheduled Event)."""
    if not pod_keys:
        return []
    raw: Any = client.hmget(keys.pod_requested, list(pod_keys))
    out = []
    for value in raw:
        held = msgpack.unpackb(value, raw=False, strict_map_key=False) if value else None
        out.append(str(held[0]) if isinstance(held, list) and held else "")
    return out
