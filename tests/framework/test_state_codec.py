"""state_codec: CycleState values to msgpack and back, no pickle, refusing foreign types."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cluster_sched.api.objects import Taint
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.state_codec import (
    EXT_DATACLASS,
    EXT_ENUM,
    EXT_WIRE,
    StateCodecError,
    decode_state,
    decode_value,
    encode_state,
    encode_value,
)
from cluster_sched.framework.status import Code
from cluster_sched.plugins.crossnode import DomainCounts
from cluster_sched.testing.builders import make_node, make_pod


def same(a: Any, b: Any) -> bool:
    """Equal, with the same container types all the way down (tuple is not list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


hashables = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
arrays = hnp.arrays(
    dtype=st.sampled_from([np.int8, np.int32, np.int64, np.float64, np.bool_, np.uint16]),
    shape=hnp.array_shapes(min_dims=0, max_dims=2, max_side=4),
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.binary(max_size=10)
    | st.sampled_from(list(Code))
    | st.builds(
        Taint,
        st.text(max_size=5),
        st.text(max_size=5),
        st.sampled_from(["NoSchedule", "NoExecute"]),
    )
)
values = st.recursive(
    scalars | arrays,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.sets(hashables, max_size=4)
        | st.frozensets(hashables, max_size=4)
        | st.dictionaries(hashables, inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_nested_values_round_trip(value: Any) -> None:
    assert same(decode_value(encode_value(value)), value)


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(st.text(min_size=1, max_size=12), values, max_size=5),
    st.sets(st.text(max_size=6)),
)
def test_cycle_state_round_trips(data: dict[str, Any], skips: set[str]) -> None:
    state = CycleState()
    for k, v in data.items():
        state.write(k, v)
    state.skip_filter_plugins = set(skips)
    state.skip_score_plugins = {"NodeAffinity"}
    state.pods_to_activate = {"default/a"}
    back = decode_state(encode_state(state))
    assert same(back._data, state._data)
    assert back.skip_filter_plugins == skips
    assert back.skip_score_plugins == {"NodeAffinity"}
    assert back.pods_to_activate == {"default/a"}


shared_values = st.sampled_from(
    [
        Taint("k", "v", "NoSchedule"),
        Taint("a", "", "NoExecute"),
        (1, "x"),
        np.arange(3),
    ]
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.text(min_size=1, max_size=8), values | shared_values, max_size=4),
            st.sets(st.text(max_size=6), max_size=3),
            st.sets(st.text(max_size=6), max_size=3),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_encoded_state_is_the_plain_map_packed(
    states: list[tuple[dict[str, Any], set[str], set[str]]],
) -> None:
    """encode_state assembles remembered pieces; the bytes are those of packing the map
    itself, for states met once or again (the same value objects under the same keys)."""
    for data, skip_filter, activate in states * 2:
        state = CycleState()
        for k, v in data.items():
            state.write(k, v)
        state.skip_filter_plugins = set(skip_filter)
        state.skip_score_plugins = {"NodeAffinity", "InterPodAffinity"}
        state.pods_to_activate = set(activate)
        plain = {
            "data": dict(data),
            "skip_filter": sorted(skip_filter),
            "skip_score": ["InterPodAffinity", "NodeAffinity"],
            "activate": sorted(activate),
        }
        assert encode_state(state) == encode_value(plain)


def test_long_runs_of_new_values_encode_as_the_plain_map() -> None:
    """Values met for the first time are packed a run at a time, the run's map header cut
    off: runs longer than 15 entries have a longer header (map16)."""
    shared = Taint("k", "v", "NoSchedule")
    for _ in range(3):  # first sight, second sight (remembered), then memo hits
        state = CycleState()
        state.write("A-shared", shared)
        for i in range(20):
            state.write(f"own{i:02d}", [i, str(i)])
        state.write("Z-shared", shared)
        for i in range(17):
            state.write(f"tail{i:02d}", {"n": i})
        plain = {"data": dict(state._data), "skip_filter": [], "skip_score": [], "activate": []}
        assert encode_state(state) == encode_value(plain)


def test_pods_and_nodes_travel_as_dataclasses() -> None:
    pod = (
        make_pod("web-1")
        .label("app", "web")
        .req(cpu="250m", memory="1Gi")
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "web"})
        .spread(1, "topology.kubernetes.io/zone", "DoNotSchedule", {"app": "web"})
        .obj()
    )
    node = (
        make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).zone("z1").taint("k", "v").obj()
    )
    back_pod, back_node = decode_value(encode_value((pod, node)))
    assert back_pod == pod and back_pod.raw == pod.raw
    assert back_node == node and back_node.raw == node.raw


def test_wire_types_use_their_own_form() -> None:
    dc = DomainCounts.from_values(["z1", "z2"], [3, 0])
    back = decode_value(encode_value({"counts": dc}))["counts"]
    assert isinstance(back, DomainCounts)
    assert dict(back.items()) == {"z1": 3, "z2": 0}


def _ext(code: int, doc: Any) -> bytes:
    return msgpack.packb(msgpack.ExtType(code, msgpack.packb(doc)))


@pytest.mark.parametrize(
    ("code", "doc", "match"),
    [
        (EXT_DATACLASS, ["os:system", {}], "only types under cluster_sched"),
        (EXT_ENUM, ["subprocess:Popen", 1], "only types under cluster_sched"),
        (EXT_WIRE, ["builtins:eval", "1"], "only types under cluster_sched"),
        # a class of another package, reached through a cluster_sched module's imports
        (
            EXT_DATACLASS,
            ["cluster_sched.framework.state_codec:np.ndarray", {}],
            "not a class defined there",
        ),
        (
            EXT_DATACLASS,
            ["cluster_sched.framework.state_codec:importlib", {}],
            "not a class defined there",
        ),
        (EXT_DATACLASS, ["cluster_sched.framework.status:Code", {}], "not a dataclass"),
        (EXT_ENUM, ["cluster_sched.api.objects:Taint", 1], "not an Enum"),
        (EXT_DATACLASS, ["cluster_sched.api.objects:Taint.__init__", {}], "plain qualified name"),
        (EXT_DATACLASS, ["cluster_sched.api.objects:Taint", {"key": "a"}], "do not match"),
        (EXT_DATACLASS, ["cluster_sched.nope:Thing", {}], "no module"),
        (EXT_DATACLASS, ["no-colon", {}], "bad type tag"),
    ],
    ids=[
        "os-system",
        "popen",
        "eval",
        "np-via-import",
        "module",
        "enum-as-dataclass",
        "dataclass-as-enum",
        "dunder",
        "fields",
        "missing-module",
        "malformed",
    ],
)
def test_refuses_tags_outside_the_package(code: int, doc: Any, match: str) -> None:
    with pytest.raises(StateCodecError, match=match):
        decode_value(_ext(code, doc))


def test_encoding_a_foreign_object_names_the_state_key() -> None:
    @dataclasses.dataclass(frozen=True)
    class Local:
        x: int

    class Color(enum.Enum):
        RED = 1

    state = CycleState()
    state.write("PreFilterFine", (1, 2))
    state.write("PreFilterBad", Local(1))
    with pytest.raises(
        StateCodecError, match=r"'PreFilterBad'.*only classes defined at module level"
    ):
        encode_state(state)
    with pytest.raises(StateCodecError, match="only classes"):
        encode_value(Color.RED)
    with pytest.raises(StateCodecError, match="cannot encode a value of type"):
        encode_value(object())


def test_garbage_bytes_are_a_clear_error() -> None:
    with pytest.raises(StateCodecError):
        decode_value(b"\xc1\xc1")
    with pytest.raises(StateCodecError, match="not an encoded CycleState"):
        decode_state(encode_value([1, 2]))


def test_decoding_runs_no_constructor() -> None:
    # a received dataclass gets its fields as sent: no __post_init__ validation runs
    taint = decode_value(
        _ext(
            EXT_DATACLASS,
            ["cluster_sched.api.objects:Taint", {"key": "k", "value": "v", "effect": "X"}],
        )
    )
    assert isinstance(taint, Taint) and taint.effect == "X"
