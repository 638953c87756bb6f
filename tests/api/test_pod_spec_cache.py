"""Pods sharing a spec share one parse, and nothing observable changes because of it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cluster_sched.api import _decode as d
from cluster_sched.api.manifest import parse_pod
from cluster_sched.errors import InvalidObjectError


def _manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": name}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            **spec,
        },
    }


def test_replicas_share_the_parsed_spec_and_keep_their_own_metadata() -> None:
    a = parse_pod(_manifest("a"))
    b = parse_pod(copy.deepcopy(_manifest("b")))
    assert a.containers is b.containers and a.tolerations is b.tolerations
    assert a.requests == b.requests == {"cpu": 250}
    assert (a.name, b.name) == ("a", "b") and a.labels == {"app": "a"}
    assert b.raw is not None and b.raw["metadata"]["name"] == "b"


def test_a_different_spec_is_parsed_on_its_own() -> None:
    a = parse_pod(_manifest("a"))
    b = parse_pod(_manifest("b", priority=7, nodeName="n1"))
    assert (a.priority, a.node_name) == (0, "")
    assert (b.priority, b.node_name) == (7, "n1")


@pytest.mark.parametrize(
    "spec",
    [
        {"tolerations": ({"key": "k", "operator": "Exists"},)},  # a tuple is not a list
        {"priority": True},  # a bool is not an integer, though it encodes like one
    ],
    ids=["tuple-for-list", "bool-for-int"],
)
def test_a_value_that_encodes_like_a_cached_valid_one_is_still_rejected(
    spec: dict[str, Any],
) -> None:
    parse_pod(_manifest("ok", priority=1))  # the valid spec is cached first
    with pytest.raises(InvalidObjectError):
        parse_pod(_manifest("bad", **spec))


def test_invalid_specs_raise_every_time() -> None:
    bad = _manifest("bad", containers=[{"name": "c", "resources": {"requests": {"cpu": "x"}}}])
    for _ in range(2):
        with pytest.raises(InvalidObjectError, match=r"spec\.containers\[0\]"):
            parse_pod(bad)


def test_the_cache_is_bounded() -> None:
    cache = d.ParseCache[int](2)
    calls: list[int] = []

    def parse(value: Any) -> int:
        calls.append(value["v"])
        return int(value["v"])

    for v in (1, 2, 1, 3, 1):
        assert cache.get_or_parse({"v": v}, parse) == v
    assert calls == [1, 2, 3, 1]  # 1 was the oldest entry when 3 arrived
