"""``cluster-sched``: explain, run, perf, apply, serve, get, describe, delete.

Every expected failure is one line on stderr and never a traceback. Exit codes:

==  ===========================================================================
0   done, and everything passed
1   an evaluation ran but something failed (``perf``: a threshold was missed or
    pods were never scheduled)
2   usage or input error: bad option (a value out of range, an option that does
    nothing with the others given), manifest, config, path (an empty file too);
    an object ``get``/``describe``/``delete`` cannot find; Redis unreachable
    (``serve`` waits for it first); a port already in use
3   ``serve``: Redis came back from an outage empty or holding another run's data;
    the coordinator refuses to schedule from it (restart it to start a new run)
130 interrupted (Ctrl-C): one line, ``interrupted``
141 the reader closed the output pipe (``... | head``): output stops quietly,
    as for any tool that SIGPIPE ends
==  ===========================================================================
"""

from __future__ import annotations

import argparse
import errno
import json
import sys
from collections.abc import Sequence
from typing import Any

import redis

from cluster_sched.errors import (
    ClusterSchedError,
    StoreLostError,
    one_line,
)
from cluster_sched.interrupts import ctrl_c_never_swallowed
from cluster_sched.stdio import stdout_reader_gone
from cluster_sched.workload.cli_args import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliParser,
    add_feature_gates_option,
    add_lenient_option,
    check_useless_options,
    int_at_least,
    seed,
)

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_STORE_LOST",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

EXIT_STORE_LOST = 3
"""Redis came back from an outage without its data (or with another run's): refused."""
EXIT_BROKEN_PIPE = 141
"""The reader closed stdout (``| head``), as a shell reports a process SIGPIPE ended."""


def _add_explain(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("explain", help="explain the scheduling decision for one pod")
    p.add_argument(
        "--cluster",
        required=True,
        help="nodes, namespaces, running pods (YAML/JSON; kubectl get -A -o yaml works), "
        "or a Workload file (expanded as run expands it)",
    )
    p.add_argument(
        "--pod",
        required=True,
        help="the pending pod: a YAML/JSON file holding one Pod, or NAMESPACE/NAME of a "
        "pending pod of --cluster",
    )
    p.add_argument(
        "--config", help="KubeSchedulerConfiguration v1 (default: upstream's default profile)"
    )
    p.add_argument("--seed", type=seed, default=None, help="seed for tie-breaking among top nodes")
    p.add_argument("--output", choices=("table", "json"), default="table")
    p.add_argument(
        "--all", action="store_true", help="table: show every node, not only the top ones"
    )
    p.add_argument(
        "--top", type=int_at_least(1), default=20, help="table: how many nodes to show (default 20)"
    )
    add_lenient_option(p)
    add_feature_gates_option(p)
    p.set_defaults(func=_cmd_explain)


def _cmd_explain(args: argparse.Namespace) -> int:
    from cluster_sched.cache.cache import Cache
    from cluster_sched.config.load import load_config, naming_config_file
    from cluster_sched.features import parse_feature_gates
    from cluster_sched.scheduler.explain.decision import explain
    from cluster_sched.scheduler.explain.table import render_table
    from cluster_sched.workload.explain_input import (
        load_cluster,
        load_pod_file,
        pending_pod,
        pod_reference,
    )

    features = parse_feature_gates(args.feature_gates)
    config = load_config(args.config, lenient=args.lenient)
    snapshot = load_cluster(args.cluster, seed=args.seed or 0, lenient=args.lenient)
    warnings = [*config.warnings, *snapshot.warnings]
    warnings.extend(f"skipped invalid object: {line}" for line in snapshot.invalid)
    if pod_reference(args.pod) is None:
        pod, pod_warnings = load_pod_file(args.pod, lenient=args.lenient)
        warnings.extend(pod_warnings)
    else:
        pod = pending_pod(args.pod, snapshot, args.cluster)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    cache = Cache()
    cache.load(snapshot.parsed())
    pods = [pod]
    with naming_config_file(args.config):  # profiles are built only here
        result = explain(cache, pods[0], config, seed=args.seed, features=features)
    if args.output == "json":
        print(json.dumps(result.json, indent=2, sort_keys=False))
    else:
        render_table(result, pods[0], show_all=args.all, top=args.top, console=_console())
    return 0


def _console() -> Any:
    """A rich Console that reports a closed pipe the way ``print`` does (rich's own
    handler exits 1 instead), so every command ends the same way under ``| head``."""
    from rich.console import Console

    class _PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _PipeAwareConsole()


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
        prog="cluster-sched",
        description="kube-scheduler's exact behaviour, as a distributed Python system",
        epilog=(
            "exit codes: 0 ok, 1 an evaluation ran but something failed, "
            "2 usage or input error, 3 store lost after an outage, 130 interrupted"
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_explain(sub)
    for register in _extra_commands():
        register(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cluster-sched")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _extra_commands() -> list[Any]:
    """Commands living in their own modules (run, apply, serve; perf; get, describe)."""
    from cluster_sched.workload.commands import register_commands
    from cluster_sched.workload.inspect_cmds import register_inspect_commands
    from cluster_sched.workload.perf.command import register_perf

    return [*register_commands(), register_perf, *register_inspect_commands()]


def _os_error_line(err: OSError) -> str:
    """One line for a file or socket problem, naming the path when there is one."""
    where = f"{err.filename}: " if err.filename else ""
    if isinstance(err, IsADirectoryError):
        return f"{where}is a directory, expected a file"
    if isinstance(err, NotADirectoryError | FileExistsError):
        return f"{where}is not a directory"
    if isinstance(err, FileNotFoundError):
        return f"{where}no such file or directory"
    if isinstance(err, PermissionError):
        return f"{where}permission denied"
    if err.errno == errno.EADDRINUSE:
        return "address already in use"
    return f"{where}{err.strerror or err}"


def _redis_error_line(err: redis.RedisError) -> str:
    text = str(err).strip()
    return f"Redis: {text.splitlines()[0] if text else type(err).__name__}"


def _interrupted(err: BaseException) -> bool:
    """True if ``err`` was raised while handling Ctrl-C (cleanup that failed after it)."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__context__
    return False


def _stdout_gone() -> int:
    """The reader closed our stdout: output stops quietly (``stdio``)."""
    stdout_reader_gone()
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    try:
        with ctrl_c_never_swallowed():
            # Under the handler: building the parser imports every command's modules,
            # seconds on a loaded machine, and a Ctrl-C then is an interruption too.
            parser = build_parser()
            args = parser.parse_args(list(argv) if argv is not None else None)
            check_useless_options(args)
            return int(args.func(args) or 0)
    except BrokenPipeError:
        return _stdout_gone()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ClusterSchedError, OSError, redis.RedisError) as err:
        if _interrupted(err):
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(err, OSError):
            line = _os_error_line(err)
        elif isinstance(err, redis.RedisError):
            line = _redis_error_line(err)
        else:
            line = str(err)
        print(f"error: {one_line(line)}", file=sys.stderr)
        return EXIT_STORE_LOST if isinstance(err, StoreLostError) else EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
