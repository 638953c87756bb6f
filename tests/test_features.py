"""Feature gates: upstream names, v1.35 defaults, upstream's refusals."""

from __future__ import annotations

import pytest

from cluster_sched.cli import main
from cluster_sched.features import (
    ASYNC_PREEMPTION,
    POP_FROM_BACKOFF_Q,
    QUEUEING_HINTS,
    FeatureGateError,
    parse_feature_gates,
)


def test_defaults_are_v1_35() -> None:
    gates = parse_feature_gates(None)
    assert gates.as_dict() == {
        "NominatedNodeNameForExpectation": True,
        "OpportunisticBatching": True,
        "SchedulerAsyncPreemption": True,
        "SchedulerPopFromBackoffQ": True,
        "SchedulerQueueingHints": True,
    }


def test_overrides_switch_only_the_named_gates() -> None:
    gates = parse_feature_gates(f"{POP_FROM_BACKOFF_Q}=false, {ASYNC_PREEMPTION}=true")
    assert not gates.enabled(POP_FROM_BACKOFF_Q)
    assert gates.enabled(ASYNC_PREEMPTION)
    assert gates.enabled(QUEUEING_HINTS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        (f"{QUEUEING_HINTS}=false", "feature is locked to true"),
        (f"{POP_FROM_BACKOFF_Q}=yes", "want Name=true or Name=false"),
        (POP_FROM_BACKOFF_Q, "want Name=true or Name=false"),
    ],
)
def test_refusals_are_one_line(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message) as info:
        parse_feature_gates(text)
    assert "\n" not in str(info.value)


def test_cli_unknown_gate_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "examples/small-basic.yaml", "--feature-gates", "Bogus=true", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["error: unrecognized feature gate: Bogus"]
