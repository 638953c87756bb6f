"""``--api HOST:PORT``, ``--kubeconfig PATH``, ``--no-auth`` and ``--record-results
SELECTOR`` for ``serve`` and ``run``."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from cluster_sched.errors import UsageError
from cluster_sched.kubeapi.errors import ApiError
from cluster_sched.kubeapi.process import api_process
from cluster_sched.kubeapi.selectors import parse_label_selector
from cluster_sched.kubeapi.server import DEFAULT_API_HOST, is_loopback
from cluster_sched.store.store import Store
from cluster_sched.workload.option_types import seconds

__all__ = ["add_api_options", "api_serving", "parse_address"]


def add_api_options(p: Any, *, linger: bool = False) -> None:
    p.add_argument(
        "--api",
        metavar="HOST:PORT",
        default=None,
        help="serve a Kubernetes API over the store (kubectl, client libraries, other "
        f"schedulers); HOST defaults to {DEFAULT_API_HOST}, PORT 0 picks a free one",
    )
    p.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="with --api: write a kubeconfig for it here (server, CA and bearer token)",
    )
    p.add_argument(
        "--no-auth",
        action="store_true",
        help="with --api on a loopback address: plain HTTP, no token",
    )
    p.add_argument(
        "--record-results",
        metavar="SELECTOR",
        default=None,
        help="write kube-scheduler-simulator's result annotations (filter, score, "
        "finalscore, ..., selected node, history) onto scheduled pods whose labels match "
        'this label selector ("" for every pod); read them with kubectl get pod -o yaml',
    )
    if linger:
        p.add_argument(
            "--api-linger",
            type=seconds(zero=True),
            default=0.0,
            metavar="SECONDS",
            help="with --api: keep the API (and the run's store) up this long after the "
            "run ends (Ctrl-C ends it early)",
        )


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (IPv6 as ``[::1]:PORT``)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or DEFAULT_API_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"--api {text}: expected HOST:PORT with a numeric port") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"--api {text}: port must be 0..65535")
    return host, port


def _check(args: argparse.Namespace) -> tuple[str, int] | None:
    if args.api is None:
        if args.kubeconfig or args.no_auth or getattr(args, "api_linger", 0):
            raise UsageError("--kubeconfig, --no-auth and --api-linger need --api HOST:PORT")
        return None
    host, port = parse_address(args.api)
    if args.no_auth and not is_loopback(host):
        raise UsageError(f"--no-auth: only allowed on a loopback address, not {host}")
    return host, port


def check_api_args(args: argparse.Namespace) -> None:
    """UsageError for inconsistent API flags, before anything starts."""
    _check(args)
    selector = getattr(args, "record_results", None)
    if selector is not None:
        try:
            parse_label_selector(selector)
        except ApiError as err:
            raise UsageError(f"--record-results {selector!r}: {err.message}") from None


@contextlib.contextmanager
def api_serving(args: argparse.Namespace, store: Store, redis_url: str) -> Iterator[None]:
    """Serve the API over the store at ``redis_url`` for the block (and ``--api-linger``
    after it), in its own process (``kubeapi.process``)."""
    address = _check(args)
    if address is None:
        yield None
        return
    host, port = address
    with api_process(
        redis_url,
        store.keys.prefix,
        host,
        port,
        no_auth=args.no_auth,
        kubeconfig=args.kubeconfig,
    ) as shown:
        print(json.dumps(shown), file=sys.stderr, flush=True)
        yield None
        linger = getattr(args, "api_linger", 0.0)
        if linger > 0:
            print(
                f"run finished: the API stays up {linger:g} s more, then the summary (Ctrl-C: now)",
                file=sys.stderr,
                flush=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                time.sleep(linger)
