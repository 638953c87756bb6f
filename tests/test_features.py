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
        "DRAAdminAccess": True,
        "DRAConsumableCapacity": False,
        "DRADeviceBindingConditions": False,
        "DRADeviceTaintRules": False,
        "DRADeviceTaints": False,
        "DRAExtendedResource": False,
        "DRAPartitionableDevices": False,
        "DRAPrioritizedList": True,
        "DRAResourceClaimDeviceStatus": True,
        "DRASchedulerFilterTimeout": True,
        "DynamicResourceAllocation": True,
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
        ("DynamicResourceAllocation=false", "feature is locked to true"),
        (
            "DRADeviceTaints=true",
            "feature gate DRADeviceTaints=true is not modelled by cluster-sched "
            r"\(alpha in v1.35, off by default\)",
        ),
        ("DRAPartitionableDevices=true", "DRAPartitionableDevices=true is not modelled"),
        ("DRAConsumableCapacity=true", "DRAConsumableCapacity=true is not modelled"),
        ("DRAExtendedResource=true", "DRAExtendedResource=true is not modelled"),
        ("DRADeviceBindingConditions=true", "DRADeviceBindingConditions=true is not modelled"),
    ],
)
def test_refusals_are_one_line(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message) as info:
        parse_feature_gates(text)
    assert "\n" not in str(info.value)


def test_dra_gates_are_accepted_at_their_modelled_values() -> None:
    gates = parse_feature_gates(
        "DRAPrioritizedList=false,DRAAdminAccess=false,DRAResourceClaimDeviceStatus=false,"
        "DRASchedulerFilterTimeout=false,DRADeviceTaints=false,DRAExtendedResource=false"
    )
    assert not any(
        gates.enabled(g)
        for g in (
            "DRAPrioritizedList",
            "DRAAdminAccess",
            "DRAResourceClaimDeviceStatus",
            "DRASchedulerFilterTimeout",
        )
    )
    assert gates.enabled("DynamicResourceAllocation")


def test_cli_unmodelled_dra_gate_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "examples/small-basic.yaml", "--feature-gates", "DRADeviceTaints=true"]
    code = main([*argv, "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [
        "error: feature gate DRADeviceTaints=true is not modelled by cluster-sched "
        "(alpha in v1.35, off by default)"
    ]


def test_cli_unknown_gate_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "examples/small-basic.yaml", "--feature-gates", "Bogus=true", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["error: unrecognized feature gate: Bogus"]
