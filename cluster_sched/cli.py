"""``cluster-sched``: explain, run, apply, serve, bench.

Every expected failure (bad manifest, bad config, unreachable Redis) is one line on
stderr naming the object and field, and exit code 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster_sched.errors import ClusterSchedError, ConfigError, InvalidObjectError, PluginError

EXIT_USAGE = 2


def _add_explain(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("explain", help="explain the scheduling decision for one pod")
    p.add_argument("--cluster", required=True, help="nodes, namespaces, running pods (YAML/JSON)")
    p.add_argument("--pod", required=True, help="the pending pod (YAML/JSON)")
    p.add_argument(
        "--config", help="KubeSchedulerConfiguration v1 (default: upstream's default profile)"
    )
    p.add_argument("--seed", type=int, default=None, help="seed for tie-breaking among top nodes")
    p.add_argument("--output", choices=("table", "json"), default="table")
    p.add_argument(
        "--all", action="store_true", help="table: show every node, not only the top ones"
    )
    p.add_argument("--top", type=int, default=20, help="table: how many nodes to show (default 20)")
    p.set_defaults(func=_cmd_explain)


def _cmd_explain(args: argparse.Namespace) -> int:
    from cluster_sched.api.manifest import load_file
    from cluster_sched.api.objects import Pod
    from cluster_sched.cache.cache import Cache
    from cluster_sched.config.load import load_config
    from cluster_sched.scheduler.explain import explain
    from cluster_sched.scheduler.explain_table import render_table

    config = load_config(args.config)
    cache = Cache()
    cache.load(load_file(args.cluster))
    pods = [o for o in load_file(args.pod) if isinstance(o, Pod)]
    if len(pods) != 1:
        raise InvalidObjectError(f"expected exactly one Pod, found {len(pods)}", source=args.pod)
    try:
        result = explain(cache, pods[0], config, seed=args.seed)
    except (ConfigError, PluginError) as err:
        # Profiles are expanded (plugins imported, placed, started) only here: name the
        # file the bad plugin reference came from.
        if args.config and not str(err).startswith(f"{args.config}:"):
            raise type(err)(f"{args.config}: {err}") from err
        raise
    if args.output == "json":
        print(json.dumps(result.json, indent=2, sort_keys=False))
    else:
        render_table(result, pods[0], show_all=args.all, top=args.top)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cluster-sched",
        description="kube-scheduler's exact behaviour, as a distributed Python system",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_explain(sub)
    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands() -> list[Any]:
    """Commands living in their own modules (run, apply, serve, bench)."""
    out: list[Any] = []
    try:
        from cluster_sched.workload.commands import register_commands
    except ImportError:
        return out
    out.extend(register_commands())
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        return int(args.func(args) or 0)
    except ClusterSchedError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except FileNotFoundError as err:
        print(f"error: {Path(err.filename or '')}: no such file", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
