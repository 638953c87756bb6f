"""``cluster-sched get``, ``describe`` and ``delete``: read (and prune) a store as
kubectl does a cluster.

    cluster-sched get KIND [NAME...] [-n NS | -A] [-o json|yaml|wide] --redis URL
    cluster-sched describe pod|node|KIND NAME --redis URL     (NS/NAME, or NAME -n NS)
    cluster-sched delete KIND NAME... [-n NS] --redis URL

KIND is any kind the store holds, spelled as kubectl spells it (``pods``, ``pod``,
``po``; ``inspect_kinds``). ``get`` and ``describe`` list the store's hashes and its
Event stream and never write; ``delete`` deletes through the store, so the scheduler's
watch sees the DELETED event as it sees any other. Output is kubectl's (see
``inspect_render``, ``describe_node``); ``-o json|yaml`` prints the object for one
NAME, else a v1 ``List``. Errors (no store, an object not found, an unreadable
object) are one line, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import yaml

from cluster_sched.errors import UsageError
from cluster_sched.workload.cli_args import EXIT_FAILED, EXIT_OK, EXIT_USAGE, add_redis_option
from cluster_sched.workload.describe_generic import render_describe_generic
from cluster_sched.workload.describe_node import pods_on_node, render_describe_node
from cluster_sched.workload.inspect_dra import DRA_RESOURCES, dra_rows
from cluster_sched.workload.inspect_kinds import (
    EVENTS,
    Resource,
    generic_rows,
    resource,
    resource_names,
)
from cluster_sched.workload.inspect_render import (
    event_object,
    event_rows,
    node_rows,
    now_utc,
    pod_rows,
    render_describe_pod,
    tabwrite,
    v1_list,
)

__all__ = ["register_inspect_commands"]

Register = Callable[[Any], None]

#: The DRA kinds, which ``get`` shows with kubectl's columns (``inspect_dra``).
DRA_KINDS = frozenset(DRA_RESOURCES.values())

#: The namespace ``get`` and ``describe`` use without ``-n`` (as kubectl's default context).
DEFAULT_NAMESPACE = "default"


def _add_namespace_options(p: argparse.ArgumentParser, *, all_namespaces: bool) -> None:
    p.add_argument(
        "-n", "--namespace", default=None, help=f"namespace (default {DEFAULT_NAMESPACE})"
    )
    if all_namespaces:
        p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def _register_get(sub: Any) -> None:
    p = sub.add_parser("get", help="list objects of a store (any kind it holds), as kubectl get")
    p.add_argument("resource", metavar="KIND", help=f"one of {', '.join(resource_names())}")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these objects")
    _add_namespace_options(p, all_namespaces=True)
    p.add_argument("-o", "--output", choices=("json", "yaml", "wide"), default=None)
    add_redis_option(p, private_fallback=False)
    p.set_defaults(func=_cmd_get)


def _register_describe(sub: Any) -> None:
    p = sub.add_parser("describe", help="show one object in detail, as kubectl describe")
    p.add_argument("resource", metavar="KIND", help="pod, node, or any kind the store holds")
    p.add_argument("name", help="NAMESPACE/NAME, or NAME with -n (NAME for cluster kinds)")
    _add_namespace_options(p, all_namespaces=False)
    add_redis_option(p, private_fallback=False)
    p.set_defaults(func=_cmd_describe)


def _register_delete(sub: Any) -> None:
    p = sub.add_parser("delete", help="delete objects from a store, as kubectl delete")
    p.add_argument("resource", metavar="KIND", help="any kind the store holds")
    p.add_argument("names", nargs="+", metavar="NAME", help="NAMESPACE/NAME, or NAME with -n")
    _add_namespace_options(p, all_namespaces=False)
    add_redis_option(p, private_fallback=False)
    p.set_defaults(func=_cmd_delete)


def _register_check(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="check a store's invariants (each pod bound once or pending, one Scheduled "
        "event per bound pod, no node over-committed): the chaos suite's check",
    )
    p.add_argument("--output", choices=("text", "json"), default="text")
    add_redis_option(p, private_fallback=False)
    p.set_defaults(func=_cmd_check)


def register_inspect_commands() -> list[Register]:
    return [_register_get, _register_describe, _register_delete, _register_check]


def _cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 when every invariant holds, 1 (one line per problem) when one does not."""
    from cluster_sched.store.check import check_store

    report = check_store(_open_store(args))
    problems = report.problems()
    if args.output == "json":
        print(
            json.dumps(
                {"bound": len(report.bound), "pending": len(report.pending), "problems": problems}
            )
        )
    else:
        print(f"bound {len(report.bound)}, pending {len(report.pending)}, problems {len(problems)}")
        for line in problems:
            print(line)
    return EXIT_FAILED if problems else EXIT_OK


def _open_store(args: argparse.Namespace) -> Any:
    from cluster_sched.redis_server import connect, resolve_url
    from cluster_sched.store.store import Store

    url = resolve_url(args.redis)
    if url is None:
        raise UsageError(
            f"{args.command} needs a store: pass --redis URL or set CLUSTER_SCHED_REDIS_URL"
        )
    return Store(connect(url))


def _in_namespace(namespace: str | None) -> Callable[[str], bool]:
    return (lambda ns: True) if namespace is None else (lambda ns: ns == namespace)


def _kubectl_order(doc: Any) -> Any:
    """apiVersion, kind, metadata first, as kubectl prints a typed object."""
    if not isinstance(doc, dict):
        return doc
    head = {k: doc[k] for k in ("apiVersion", "kind", "metadata") if k in doc}
    return {**head, **{k: v for k, v in doc.items() if k not in head}}


def _print_objects(items: list[Any], output: str) -> None:
    envelope = v1_list([_kubectl_order(i) for i in items])
    if output == "json":
        print(json.dumps(envelope, indent=4))
    else:
        print(yaml.safe_dump(envelope, sort_keys=False, default_flow_style=False), end="")


def _object_key(res: Resource, name: str, namespace: str | None) -> tuple[str, str]:
    """``(key, namespace)`` of ``name`` (``NS/NAME`` or ``NAME`` in ``namespace``)."""
    if not res.namespaced:
        if "/" in name or not name:
            raise UsageError(f"{name}: {res.plural} are cluster-scoped: give NAME alone")
        return name, ""
    ns, sep, short = name.rpartition("/")
    if not sep:
        ns = namespace or DEFAULT_NAMESPACE
    elif namespace and namespace != ns:
        raise UsageError(f"{name}: names namespace {ns}, but -n says {namespace}")
    if not short or not ns:
        raise UsageError(f"{name}: expected NAMESPACE/NAME or NAME")
    return f"{ns}/{short}", ns


def _not_found(res: Resource, key: str) -> str:
    ns, _, name = key.rpartition("/")
    return f'{res.plural} "{name}" not found' + (f" in namespace {ns}" if ns else "")


def _listed(store: Any, res: Resource, namespace: str | None) -> list[Any]:
    if res.kind == EVENTS:
        items = [event_object(r) for r in store.events()]
    else:
        items = store.list(res.kind)
    if not res.namespaced or namespace is None:
        return items
    return [d for d in items if (d.get("metadata") or {}).get("namespace", "") == namespace]


def _named(items: list[Any], res: Resource, names: list[str], namespace: str | None) -> list[Any]:
    """``items`` with the keys ``names`` give, in that order; UsageError for a missing one."""
    by_key = {}
    for doc in items:
        meta = doc.get("metadata") or {}
        name = meta.get("name", "")
        by_key[f"{meta.get('namespace', '')}/{name}" if res.namespaced else name] = doc
    out = []
    for name in names:
        key, _ = _object_key(res, name, namespace)
        if key not in by_key:
            raise UsageError(_not_found(res, key))
        out.append(by_key[key])
    return out


def _cmd_get(args: argparse.Namespace) -> int:
    res = resource(args.resource)
    if args.all_namespaces and args.namespace:
        raise UsageError("-n and -A cannot be used together")
    namespace = None if args.all_namespaces else (args.namespace or DEFAULT_NAMESPACE)
    store = _open_store(args)
    now = now_utc()
    try:
        items = _listed(store, res, None if args.names else namespace)
    finally:
        store.close()
    if args.names:
        items = _named(items, res, args.names, args.namespace)
    namespaces = namespace is None and res.namespaced
    wide = args.output == "wide"
    if args.output in ("json", "yaml"):
        if len(args.names) == 1:
            _print_object(_kubectl_order(items[0]), args.output)
        else:
            _print_objects(items, args.output)
        return 0
    if not items:
        where = "" if not res.namespaced or namespace is None else f" in {namespace} namespace"
        print(f"No resources found{where}.", file=sys.stderr)
        return 0
    if res.kind == "Pod":
        rows = pod_rows(items, now, wide=wide, namespaces=namespaces)
    elif res.kind == "Node":
        rows = node_rows(items, now, wide=wide)
    elif res.kind == EVENTS:
        rows = event_rows(items, now, namespaces=namespaces)
    elif res.kind in DRA_KINDS:
        rows = dra_rows(res.kind, items, now, namespaces=namespace is None)
    else:
        rows = generic_rows(items, now, namespaces=namespaces)
    print(tabwrite(rows))
    return 0


def _print_object(doc: Any, output: str) -> None:
    if output == "json":
        print(json.dumps(doc, indent=4))
    else:
        print(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False), end="")


def _cmd_describe(args: argparse.Namespace) -> int:
    res = resource(args.resource)
    if res.kind == EVENTS:
        raise UsageError("describe events is not supported: use get events")
    key, _ = _object_key(res, args.name, args.namespace)
    store = _open_store(args)
    now = now_utc()
    try:
        doc = store.get(res.kind, key)
        if doc is None:
            raise UsageError(_not_found(res, key))
        events = [event_object(r) for r in store.events(key=key, kind=res.kind)]
        pods = pods_on_node(store.list("Pod"), key) if res.kind == "Node" else []
    finally:
        store.close()
    if res.kind == "Pod":
        print(render_describe_pod(doc, events, now), end="")
    elif res.kind == "Node":
        print(render_describe_node(doc, pods, events, now), end="")
    else:
        print(render_describe_generic(doc, events, now), end="")
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    """Delete each NAME; one line per deletion, one error line per object not found
    (exit 2 if any was not found, after deleting the others)."""
    res = resource(args.resource)
    if res.kind == EVENTS:
        raise UsageError("events are a stream in this store: they cannot be deleted")
    keys = [_object_key(res, name, args.namespace)[0] for name in args.names]
    store = _open_store(args)
    try:
        existed = store.delete_many([(res.kind, key) for key in keys])
    finally:
        store.close()
    missing = 0
    for key, found in zip(keys, existed, strict=True):
        if found:
            print(f'{res.singular} "{key.rpartition("/")[2]}" deleted')
        else:
            missing += 1
            print(f"error: {_not_found(res, key)}", file=sys.stderr)
    return EXIT_USAGE if missing else EXIT_OK
