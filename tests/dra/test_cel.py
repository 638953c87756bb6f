"""CEL device selectors: upstream's cel/compile_test.go idioms on the chosen library."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cluster_sched.dra.cel import CelError, CelRuntimeError, compile_selector, device_matches
from cluster_sched.dra.decode import parse_semver
from cluster_sched.dra.objects import Device

DRIVER = "dra.example.com"
DEVICE = Device(
    "gpu-0",
    {
        f"{DRIVER}/model": "a100",
        f"{DRIVER}/numa": 1,
        f"{DRIVER}/a": True,
        f"{DRIVER}/b": True,
        f"{DRIVER}/driverVersion": parse_semver("1.2.3"),
        "other.example.com/flag": False,
    },
    {f"{DRIVER}/memory": Fraction(2 * 1024**3)},
)


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        pytest.param(f'device.driver == "{DRIVER}"', True, id="driver"),
        pytest.param('device.driver == "other"', False, id="driver-mismatch"),
        pytest.param(f'device.attributes["{DRIVER}"].model == "a100"', True, id="string"),
        pytest.param(f'device.attributes["{DRIVER}"].numa == 1', True, id="int"),
        pytest.param('device.attributes["other.example.com"].flag', False, id="other-domain"),
        pytest.param('device.attributes["unknown.example.com"].size() == 0', True, id="unknown-domain-empty"),
        pytest.param(f'"model" in device.attributes["{DRIVER}"]', True, id="in"),
        pytest.param(f'"nope" in device.attributes["{DRIVER}"]', False, id="not-in"),
        pytest.param(
            f'device.capacity["{DRIVER}"].memory.compareTo(quantity("1Gi")) >= 0', True, id="quantity"
        ),
        pytest.param(
            f'device.capacity["{DRIVER}"].memory.compareTo(quantity("4Gi")) >= 0', False, id="quantity-small"
        ),
        pytest.param(
            f'device.capacity["{DRIVER}"].memory.isLessThan(quantity("3Gi"))', True, id="quantity-less"
        ),
        pytest.param('quantity("1").add(quantity("500m")).compareTo(quantity("1.5")) == 0', True, id="quantity-add"),
        pytest.param('quantity("2Ki").asInteger() == 2048', True, id="quantity-int"),
        pytest.param(
            f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.0.0"))', True, id="semver"
        ),
        pytest.param('semver("1.2.3-alpha").isLessThan(semver("1.2.3"))', True, id="semver-pre"),
        pytest.param(f'device.attributes["{DRIVER}"].driverVersion.minor() == 2', True, id="semver-minor"),
        pytest.param(f'cel.bind(dra, device.attributes["{DRIVER}"], dra.a && dra.b)', True, id="bind"),
        pytest.param(
            f'device.attributes["{DRIVER}"].exists(k, k == "numa")', True, id="macro-variable"
        ),
    ],
)  # fmt: skip
def test_selector(expression: str, want: bool) -> None:
    assert device_matches(compile_selector(expression), DRIVER, DEVICE) is want


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        pytest.param("noSuchVar", "undeclared reference to 'noSuchVar'", id="undeclared-var"),
        pytest.param("noSuchFn(1)", "undeclared reference to 'noSuchFn'", id="undeclared-fn"),
        pytest.param("device.driver ==", "compilation failed", id="syntax"),
    ],
)
def test_compile_errors(expression: str, needle: str) -> None:
    with pytest.raises(CelError, match=needle):
        compile_selector(expression)


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        pytest.param(
            f'device.attributes["{DRIVER}"].nokey == 1', "no such key: nokey", id="missing-key"
        ),
        pytest.param("1 + 1 == 2 ? 1 : 0", "could not be converted to bool", id="not-bool"),
    ],
)
def test_runtime_errors(expression: str, needle: str) -> None:
    with pytest.raises(CelRuntimeError, match=needle):
        device_matches(compile_selector(expression), DRIVER, DEVICE)


def test_results_are_cached_per_device_and_driver() -> None:
    sel = compile_selector('device.driver == "x"')
    assert compile_selector('device.driver == "x"') is sel
    assert device_matches(sel, "x", DEVICE) is True
    assert device_matches(sel, "y", DEVICE) is False
