"""Every numeric option has a range, and an option that does nothing in the mode chosen
is refused (issue 26, findings 6 and 9): one line on stderr, exit code 2, no traceback,
before any work starts."""

from __future__ import annotations

import pytest

from cluster_sched.cli import EXIT_USAGE, main

#: Files that do not exist: every case must be refused before any file is read, and
#: were the refusal to regress, the command fails at once on the missing file instead
#: of running a whole evaluation (or, for serve, waiting for a Redis that never comes).
SMALL = "missing/workload.yaml"
PERF = "missing/performance-config.yaml"
CONFIG = "missing/sched.yaml"
REDIS = "redis://127.0.0.1:1"
SERVE = ["serve", "--redis", REDIS, "--config", CONFIG]

#: (argv, the words the one line must hold): every numeric option of every command,
#: out of range.
OUT_OF_RANGE = [
    (["run", SMALL, "--batch-size", "0"], "argument --batch-size: must be at least 1, got 0"),
    (["run", SMALL, "--batch-size", "-3"], "argument --batch-size: must be at least 1, got -3"),
    (["run", SMALL, "--executor", "shards", "--shards", "0"], "--shards: must be at least 1"),
    (["run", SMALL, "--seed", "-1"], "--seed: must be at least 0, got -1"),
    (["run", SMALL, "--group-timeout", "0"], "--group-timeout: must be more than 0 seconds"),
    (["run", SMALL, "--group-timeout", "nan"], "--group-timeout: must be more than 0 seconds"),
    (["run", SMALL, "--metrics-port", "70000"], "--metrics-port: must be a port from 0 to"),
    (["run", SMALL, "--metrics-port", "-1"], "--metrics-port: must be a port from 0 to"),
    (["run", SMALL, "--metrics-port", "0", "--metrics-linger", "-1"], "--metrics-linger: must"),
    (["run", SMALL, "--clock", "virtual", "--horizon", "-5"], "--horizon: must be more than 0"),
    (["run", SMALL, "--clock", "virtual", "--horizon", "inf"], "--horizon: must be more than 0"),
    ([*SERVE, "--batch-size", "0"], "--batch-size: must be at least 1"),
    ([*SERVE, "--store-outage-timeout", "-1"], "--store-outage-timeout:"),
    ([*SERVE, "--metrics-port", "65536"], "--metrics-port: must be a port"),
    (["perf", PERF, "--timeout", "0"], "--timeout: must be more than 0 seconds"),
    (["perf", PERF, "--batch-size", "0"], "--batch-size: must be at least 1"),
    (["perf", PERF, "--executor", "ray", "--shards", "-2"], "--shards: must be at least 1"),
    (["compare", SMALL, "--config", CONFIG, "--output", "o", "--parallel", "0"], "--parallel:"),
    (["compare", SMALL, "--config", CONFIG, "--output", "o", "--seeds", "1,-2"], "--seeds"),
    (["explain", "--cluster", SMALL, "--pod", "default/pod-1", "--top", "0"], "--top: must be"),
    (["explain", "--cluster", SMALL, "--pod", "default/pod-1", "--seed", "-4"], "--seed: must"),
    (["run", SMALL, "--batch-size", "many"], "--batch-size: expected an integer, got 'many'"),
]

#: (argv, the option refused): options that do nothing with the others given.
USELESS = [
    (["run", SMALL, "--horizon", "60"], "--horizon does nothing without --clock virtual"),
    (["compare", SMALL, "--config", CONFIG, "--output", "o", "--horizon", "9"], "--horizon"),
    (["run", SMALL, "--shards", "4"], "--shards does nothing without --executor shards or ray"),
    (["run", SMALL, "--shards", "1"], "--shards does nothing without --executor shards or ray"),
    (["run", SMALL, "--no-shard-prefetch"], "--shard-prefetch does nothing without --executor"),
    (["run", SMALL, "--ray-address", "auto"], "--ray-address does nothing without --executor ray"),
    (["run", SMALL, "--clock", "virtual", "--group-timeout", "5"], "--group-timeout does nothing"),
    (["run", SMALL, "--metrics-address", "0.0.0.0"], "--metrics-address does nothing without"),
    (["run", SMALL, "--metrics-linger", "5"], "--metrics-linger does nothing without"),
    (["run", SMALL, "--no-report"], "--no-report does nothing without --output"),
    ([*SERVE, "--shards", "3"], "--shards does nothing without --executor"),
    (["perf", PERF, "--ray-address", "auto"], "--ray-address does nothing without"),
    (
        ["compare", SMALL, "--config", CONFIG, "--output", "o", "--executor", "ray", "--parallel", "2"],
        "--parallel does nothing without --executor local",
    ),
    (
        ["explain", "--cluster", SMALL, "--pod", "default/pod-1", "--output", "json", "--all"],
        "--all does nothing without --output table",
    ),
    (
        ["explain", "--cluster", SMALL, "--pod", "default/pod-1", "--all", "--top", "3"],
        "--top does nothing without --output table without --all",
    ),
]  # fmt: skip


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``argv`` is refused with (exit 2, no traceback, no output)."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE and out == ""
    assert "Traceback" not in err
    [line] = err.splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize(
    ("argv", "words"), OUT_OF_RANGE, ids=[" ".join(a[3:]) or a[0] for a, _ in OUT_OF_RANGE]
)
def test_an_option_value_out_of_range_is_one_line_and_exit_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    assert words in refused(argv, capsys)


@pytest.mark.parametrize(("argv", "words"), USELESS, ids=[" ".join(a[-2:]) for a, _ in USELESS])
def test_an_option_that_does_nothing_is_refused(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert words in refused(argv, capsys)


def test_every_numeric_option_has_a_range() -> None:
    """No command keeps a bare ``type=int``/``type=float``: each number is checked."""
    from cluster_sched.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    bare = [
        f"{name} {action.option_strings[0]}"
        for name, command in sub.items()
        for action in command._actions
        if action.type in (int, float)
    ]
    assert bare == []
