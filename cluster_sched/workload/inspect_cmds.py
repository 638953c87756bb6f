"""``cluster-sched get`` and ``cluster-sched describe``: read a store as kubectl reads a
cluster.

    cluster-sched get pods|nodes|events [-n NS | -A] [-o json|yaml|wide] --redis URL
    cluster-sched describe pod NS/NAME --redis URL      (or NAME -n NS)

Read-only: they list the store's hashes and its Event stream and never write. Output is
kubectl's (see ``inspect_render``); ``-o json|yaml`` prints a v1 ``List``. Errors
(no store, unknown pod, unreadable object) are one line, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import yaml

from cluster_sched.errors import UsageError
from cluster_sched.workload.cli_args import EXIT_FAILED, EXIT_OK, add_redis_option
from cluster_sched.workload.inspect_dra import DRA_RESOURCES, NAMESPACED, dra_rows
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

#: kubectl's names for the resources ``get`` knows (plural, singular, short).
#: The DRA kinds ``get`` lists.
DRA_KINDS = frozenset(DRA_RESOURCES.values())
RESOURCES = {
    "pods": "pods",
    "pod": "pods",
    "po": "pods",
    "nodes": "nodes",
    "node": "nodes",
    "no": "nodes",
    "events": "events",
    "event": "events",
    "ev": "events",
    **DRA_RESOURCES,
}
#: The namespace ``get`` and ``describe`` use without ``-n`` (as kubectl's default context).
DEFAULT_NAMESPACE = "default"


def _add_namespace_options(p: argparse.ArgumentParser, *, all_namespaces: bool) -> None:
    p.add_argument(
        "-n", "--namespace", default=None, help=f"namespace (default {DEFAULT_NAMESPACE})"
    )
    if all_namespaces:
        p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def _register_get(sub: Any) -> None:
    p = sub.add_parser("get", help="list pods, nodes or events of a store, as kubectl get")
    p.add_argument(
        "resource",
        choices=sorted(RESOURCES),
        metavar="pods|nodes|events|resourceclaims|resourceslices|deviceclasses|resourceclaimtemplates",
    )
    _add_namespace_options(p, all_namespaces=True)
    p.add_argument("-o", "--output", choices=("json", "yaml", "wide"), default=None)
    add_redis_option(p, private_fallback=False)
    p.set_defaults(func=_cmd_get)


def _register_describe(sub: Any) -> None:
    p = sub.add_parser("describe", help="show one pod in detail, as kubectl describe")
    p.add_argument("resource", choices=("pod", "pods", "po"), metavar="pod")
    p.add_argument("name", help="NAMESPACE/NAME, or NAME with -n")
    _add_namespace_options(p, all_namespaces=False)
    add_redis_option(p, private_fallback=False)
    p.set_defaults(func=_cmd_describe)


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
    return [_register_get, _register_describe, _register_check]


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


def _cmd_get(args: argparse.Namespace) -> int:
    resource = RESOURCES[args.resource]
    if args.all_namespaces and args.namespace:
        raise UsageError("-n and -A cannot be used together")
    namespace = None if args.all_namespaces else (args.namespace or DEFAULT_NAMESPACE)
    keep = _in_namespace(namespace)
    store = _open_store(args)
    now = now_utc()
    items: list[Any]
    try:
        if resource == "pods":
            items = [d for d in store.list("Pod") if keep(d["metadata"].get("namespace", ""))]
            rows = pod_rows(items, now, wide=args.output == "wide", namespaces=namespace is None)
        elif resource == "nodes":
            items = store.list("Node")
            rows = node_rows(items, now, wide=args.output == "wide")
        elif resource in DRA_KINDS:
            items = [
                d
                for d in store.list(resource)
                if resource not in NAMESPACED or keep(d["metadata"].get("namespace", ""))
            ]
            rows = dra_rows(resource, items, now, namespaces=namespace is None)
        else:
            items = [event_object(r) for r in store.events()]
            items = [e for e in items if keep(e["metadata"]["namespace"])]
            rows = event_rows(items, now, namespaces=namespace is None)
    finally:
        store.close()
    if args.output in ("json", "yaml"):
        _print_objects(items, args.output)
        return 0
    if not items:
        scoped = resource == "nodes" or resource in ("ResourceSlice", "DeviceClass")
        where = "" if scoped or namespace is None else f" in {namespace} namespace"
        print(f"No resources found{where}.", file=sys.stderr)
        return 0
    print(tabwrite(rows))
    return 0


def _cmd_describe(args: argparse.Namespace) -> int:
    namespace, sep, name = args.name.rpartition("/")
    if not sep:
        namespace = args.namespace or DEFAULT_NAMESPACE
    elif args.namespace and args.namespace != namespace:
        raise UsageError(f"{args.name}: names namespace {namespace}, but -n says {args.namespace}")
    if not name or not namespace:
        raise UsageError(f"{args.name}: expected NAMESPACE/NAME or NAME")
    key = f"{namespace}/{name}"
    store = _open_store(args)
    try:
        doc = store.get("Pod", key)
        if doc is None:
            raise UsageError(f'pods "{name}" not found in namespace {namespace}')
        events = [event_object(r) for r in store.events(key=key, kind="Pod")]
    finally:
        store.close()
    print(render_describe_pod(doc, events, now_utc()), end="")
    return 0
