"""Pods sharing a spec share one parse, and nothing observable changes because of it."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from cluster_sched.api import _decode as d
from cluster_sched.api.manifest import parse_pod
from cluster_sched.errors import InvalidObjectError
from cluster_sched.framework.state_codec import decode_value, encode_value


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


def test_a_bound_replica_shares_the_unbound_replicas_parse() -> None:
    pending = parse_pod(_manifest("a"))
    bound = parse_pod(_manifest("b", nodeName="n1"))
    other = parse_pod(_manifest("c", nodeName="n2"))
    assert bound.containers is pending.containers is other.containers
    assert bound.requests is pending.requests
    assert (pending.node_name, bound.node_name, other.node_name) == ("", "n1", "n2")


def test_a_bad_node_name_is_still_reported_on_its_field() -> None:
    with pytest.raises(InvalidObjectError, match=r"spec\.nodeName"):
        parse_pod(_manifest("a", nodeName=["n1"]))


def test_the_pod_key_is_built_once_and_again_by_replace() -> None:
    pod = parse_pod(_manifest("a"))
    assert pod.key == "ns/a" and pod.key is pod.key
    moved = replace(pod, meta=replace(pod.meta, name="b", namespace="other"))
    assert moved.key == "other/b"
    back = decode_value(encode_value(moved))
    assert back.key == "other/b" and back == moved


def test_objects_without_labels_share_one_empty_map_that_stays_empty() -> None:
    docs = [_manifest(n) for n in "ab"]
    for doc in docs:
        del doc["metadata"]["labels"]
    a, b = (parse_pod(doc) for doc in docs)
    assert a.labels == {} and a.labels is b.labels and a.meta.annotations is b.labels
