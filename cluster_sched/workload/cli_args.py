"""Command-line options and exit codes shared by the commands (run, perf, apply, serve).

One definition per option, so every command's ``--help`` says the same true thing.

Every numeric option has a range (:func:`int_at_least`, :func:`seconds`, :func:`port`):
a value outside it is one line on stderr and exit code 2, as any other usage error.
Options that do nothing in the mode chosen (``--horizon`` without ``--clock virtual``,
``--shards`` with ``--executor local``...) are refused by :func:`check_useless_options`,
which the CLI runs once the command line is parsed: an option that is silently ignored
makes a user believe a run measured what it did not.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from cluster_sched.errors import UsageError
from cluster_sched.scheduler.assembly import EXECUTORS
from cluster_sched.scheduler.coordinator import DEFAULT_BATCH_SIZE
from cluster_sched.scheduler.shards.dispatch import RELAY_FROM_SHARDS, RELAY_MODES
from cluster_sched.workload.feeder import DEFAULT_FEEDER, FEEDERS
from cluster_sched.workload.option_types import int_at_least, port, seconds, seed

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliParser",
    "add_clock_options",
    "add_executor_options",
    "add_feature_gates_option",
    "add_lenient_option",
    "add_redis_option",
    "check_useless_options",
    "given",
    "int_at_least",
    "port",
    "seconds",
    "seed",
]

EXIT_OK = 0
"""Done, and everything passed."""
EXIT_FAILED = 1
"""An evaluation ran but something failed (a perf threshold missed, pods never scheduled)."""
EXIT_USAGE = 2
"""Usage or input error: a bad option, manifest, config or path; Redis unreachable."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C), as a shell reports a process SIGINT ended."""


class CliParser(argparse.ArgumentParser):
    """argparse with one-line errors (``error: cluster-sched run: argument ...``, exit 2)
    and a record of the options the command line gave (:func:`given`).

    Sub-commands' parsers are built by the same class (argparse uses the parent's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, action in _TRACKED.items():
            self.register("action", name, action)

    def error(self, message: str) -> Any:
        # Raised, not exited: ``main`` reports it as every other usage error (one line,
        # exit 2), and callers of ``main`` get the exit code back either way.
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _tracking(base: type[argparse.Action]) -> type[argparse.Action]:
    """``base`` that also notes its ``dest`` in the namespace's ``given_options``."""

    class Tracked(base):  # type: ignore[valid-type, misc]
        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: Any,
            option_string: str | None = None,
        ) -> None:
            super().__call__(parser, namespace, values, option_string)
            seen = set(getattr(namespace, "given_options", ()))
            namespace.given_options = frozenset({*seen, self.dest})

    Tracked.__name__ = f"Tracked{base.__name__}"
    return Tracked


_TRACKED: dict[str | None, type[argparse.Action]] = {
    None: _tracking(argparse._StoreAction),
    "store": _tracking(argparse._StoreAction),
    "store_true": _tracking(argparse._StoreTrueAction),
    "store_false": _tracking(argparse._StoreFalseAction),
    "append": _tracking(argparse._AppendAction),
}
#: ``--compiled/--no-compiled`` style options, tracked as the others.
BooleanOption = _tracking(argparse.BooleanOptionalAction)


def given(args: argparse.Namespace, dest: str) -> bool:
    """True if the command line gave the option stored at ``dest`` (even with its
    default value)."""
    return dest in getattr(args, "given_options", ())


def add_redis_option(p: argparse.ArgumentParser, *, private_fallback: bool) -> None:
    """``--redis URL``. Commands that run a whole evaluation start a private
    redis-server when no URL is given; commands that work on an existing store
    (apply, serve) need one and say so."""
    if private_fallback:
        text = (
            "Redis URL of the store (default: $CLUSTER_SCHED_REDIS_URL, else a private "
            "redis-server started for this run)"
        )
    else:
        text = (
            "Redis URL of an existing store (default: $CLUSTER_SCHED_REDIS_URL; "
            "one of them is required)"
        )
    p.add_argument("--redis", default=None, metavar="URL", help=text)


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """``--executor``, ``--shards``, ``--batch-size``, ``--ray-address``: where and how
    the cycles run."""
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where Filter/Score run: the coordinator's table, in-process shards, or Ray actors",
    )
    p.add_argument(
        "--shards",
        type=int_at_least(1),
        default=1,
        help="node shards for --executor shards|ray",
    )
    p.add_argument(
        "--compiled",
        action=BooleanOption,
        default=True,
        help="attempts on the in-process table take the compiled (numba) path when it applies",
    )
    p.add_argument(
        "--shard-prefetch",
        action=BooleanOption,
        default=True,
        help="shards answer a popped batch's first Filter questions in one call per 16 "
        "pods (no: one call per attempt, to measure the per-pod protocol)",
    )
    p.add_argument(
        "--shard-dispatch",
        choices=("auto", "shards", "replica"),
        default="auto",
        help="attempts the compiled path can take: by the measured-cost rule (auto), "
        "always to the shards' reductions, or always on the coordinator's replica",
    )
    p.add_argument(
        "--shard-relay",
        choices=RELAY_MODES,
        default="auto",
        help="Ray shards: the reduced protocol's chunks through one relay actor (one call "
        f"per chunk whatever the shard count): auto (from {RELAY_FROM_SHARDS} shards, batches the "
        "dispatch model finds faster through it), on, off",
    )
    p.add_argument(
        "--batch-size",
        type=int_at_least(1),
        default=DEFAULT_BATCH_SIZE,
        help="pods popped per queue round trip and scheduled in order (1: pop one at a time)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="join an existing Ray cluster (default: start a local one)",
    )


def add_feeder_option(p: argparse.ArgumentParser) -> None:
    """``--feeder process|inline``: who writes the workload's pods (``workload.feeder``)."""
    p.add_argument(
        "--feeder",
        choices=FEEDERS,
        default=DEFAULT_FEEDER,
        help="who writes the pods: a client process beside the scheduler, as upstream's "
        "scheduler_perf client (process), or the scheduler's loop thread between turns, "
        "a fixed interleaving (inline)",
    )


def add_feature_gates_option(p: argparse.ArgumentParser) -> None:
    """``--feature-gates Name=true,Name2=false``: upstream's flag, v1.35 defaults."""
    p.add_argument(
        "--feature-gates",
        default=None,
        metavar="Name=bool,...",
        help="switch kube-scheduler feature gates (v1.35 defaults; see the README's list)",
    )


def add_lenient_option(p: argparse.ArgumentParser) -> None:
    """``--lenient``: a field Kubernetes does not know is a warning, not an error."""
    p.add_argument(
        "--lenient",
        action="store_true",
        help="a field Kubernetes does not know (a typo) is a warning instead of an error",
    )


def add_clock_options(p: argparse.ArgumentParser) -> None:
    """``--clock real|virtual`` and ``--horizon``: whether the run waits for real time or
    jumps through simulated time (pod lifetimes, arrival processes, traces)."""
    p.add_argument(
        "--clock",
        choices=("real", "virtual"),
        default="real",
        help="virtual: simulated time that jumps to the next event (arrival, completion, "
        "backoff/flush, timeout); results repeat exactly for a seed",
    )
    p.add_argument(
        "--horizon",
        type=seconds(),
        default=None,
        metavar="SECONDS",
        help="--clock virtual: stop after this many simulated seconds",
    )


#: (option, what it needs, is it useless for these args?): one row per option that
#: does nothing in some mode. Rows for options a command lacks never apply.
_USELESS: tuple[tuple[str, str, Callable[[argparse.Namespace], bool]], ...] = (
    ("horizon", "--clock virtual", lambda a: a.clock != "virtual"),
    ("group_timeout", "--clock real", lambda a: getattr(a, "clock", "real") != "real"),
    ("feeder", "--clock real", lambda a: getattr(a, "clock", "real") != "real"),
    ("shards", "--executor shards or ray", lambda a: a.executor == "local"),
    ("shard_prefetch", "--executor shards or ray", lambda a: a.executor == "local"),
    ("ray_address", "--executor ray", lambda a: a.executor != "ray"),
    ("parallel", "--executor local", lambda a: a.executor != "local"),
    ("metrics_address", "--metrics-port", lambda a: a.metrics_port is None),
    ("metrics_linger", "--metrics-port", lambda a: a.metrics_port is None),
    ("no_report", "--output", lambda a: a.output is None),
    ("all", "--output table", lambda a: a.output != "table"),
    ("top", "--output table without --all", lambda a: a.output != "table" or a.all),
)


def check_useless_options(args: argparse.Namespace) -> None:
    """Refuse (UsageError, exit 2) an option the command line gave that does nothing
    with the other options chosen, naming both."""
    for dest, needs, useless in _USELESS:
        if given(args, dest) and useless(args):
            option = "--" + dest.replace("_", "-")
            raise UsageError(f"{option} does nothing without {needs}: leave it out")
