"""The Lua msgpack walker against arbitrary objects (hypothesis).

bind.lua and apply.lua edit stored msgpack by splicing bytes. These properties check the
splices against the same edits done on decoded dicts in Python, over objects with every
msgpack type the walker must skip (ints of each width, floats, bin, str8/16/32, nested
arrays and maps past 15 entries) and keys in any order, written raw as a foreign writer
might, or through apply.
"""

from __future__ import annotations

import copy
from typing import Any

import msgpack
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.store import Store

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
#: Collection sizes around the msgpack header boundaries (fixmap/fixarray hold 15).
SIZES = st.sampled_from([0, 1, 2, 13, 14, 15, 16, 17])

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=40)
    | st.binary(max_size=300)
    | st.sampled_from(["s" * 31, "m" * 300])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=20) | st.dictionaries(st.text(max_size=8), inner, max_size=20)
    ),
    max_leaves=20,
)


def sized_lists(elements: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return SIZES.flatmap(lambda n: st.lists(elements, min_size=n, max_size=n))


extras = sized_lists(values).map(lambda vs: {f"x-{i}": v for i, v in enumerate(vs)})
condition = st.fixed_dictionaries(
    {"type": st.sampled_from(["PodScheduled", "PodScheduled", "Ready", 3])},
    optional={"status": st.sampled_from(["True", "False", None]), "reason": st.text(max_size=5)},
)
conditions = sized_lists(st.one_of(condition, st.just({"type": "Ready"}), values))
status_maps = st.fixed_dictionaries(
    {},
    optional={
        "nominatedNodeName": st.text(max_size=5),
        "conditions": st.one_of(conditions, conditions, st.none()),
        "phase": st.just("Pending"),
    },
)
statuses = st.one_of(status_maps, status_maps, status_maps, st.none(), st.just("weird"))


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    meta = {"name": "x", "namespace": "default", **draw(extras)}
    for field, strategy in (
        ("uid", st.text(max_size=36)),
        ("resourceVersion", st.text(max_size=5)),
        ("deletionTimestamp", st.none()),
    ):
        if draw(st.booleans()):
            meta[field] = draw(strategy)
    spec: Any = {"containers": draw(values), **draw(extras)}
    if draw(st.booleans()):
        spec["nodeName"] = ""
    if draw(st.booleans()):
        spec["schedulingGates"] = []
    if draw(st.integers(0, 9)) == 0:
        spec = draw(st.sampled_from([None, [1, 2], "spec"]))
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, **draw(extras)}
    if draw(st.integers(0, 9)) > 0:
        doc["spec"] = spec
    if draw(st.booleans()):
        doc["status"] = draw(statuses)
    order = draw(st.permutations(list(doc)))
    return {key: doc[key] for key in order}


def expected_binding(doc: dict[str, Any], node: str, cond: dict[str, Any], rv: int) -> dict:
    out = copy.deepcopy(doc)
    spec = out.get("spec")
    if isinstance(spec, dict):
        spec["nodeName"] = node
    else:
        out["spec"] = {"nodeName": node}
    status = out.get("status")
    if not isinstance(status, dict):
        out["status"] = {"conditions": [cond]}
    else:
        status.pop("nominatedNodeName", None)
        conds = status.get("conditions")
        if not isinstance(conds, list):
            status["conditions"] = [cond]
        else:
            for i, c in enumerate(conds):
                if isinstance(c, dict) and c.get("type") == "PodScheduled":
                    if c.get("status") != "True":
                        conds[i] = cond
                    break
            else:
                conds.append(cond)
    out["metadata"]["resourceVersion"] = str(rv)
    return out


def stored(client: redis.Redis, store: Store, key: str) -> dict[str, Any]:
    # strict: a splice that left stray bytes would raise ExtraData here
    return msgpack.unpackb(client.hget(store.keys.obj("Pod"), key), raw=False, strict_map_key=False)


@SETTINGS
@given(doc=pods(), node=st.text(min_size=1, max_size=300))
def test_bind_splices_exactly_what_python_would(
    store: Store, redis_client: redis.Redis, doc: dict[str, Any], node: str
) -> None:
    redis_client.hset(store.keys.obj("Pod"), "default/x", msgpack.packb(doc))
    result = store.bind("default/x", node)
    assert result.ok, result.message
    after = stored(redis_client, store, "default/x")
    cond = after["status"]["conditions"]
    scheduled = next(c for c in cond if isinstance(c, dict) and c.get("type") == "PodScheduled")
    fresh = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": "2024-05-01T12:00:00Z"}  # fmt: skip
    if scheduled != fresh:
        assert scheduled["status"] == "True", "an already-True condition is kept"
        fresh = scheduled
    assert after == expected_binding(doc, node, fresh, result.rv)


@SETTINGS
@given(doc=pods())
def test_apply_then_get_delete_round_trip(store: Store, doc: dict[str, Any]) -> None:
    store.delete("Pod", "default/x")
    if not isinstance(doc.get("spec"), dict):
        doc["spec"] = {}
    doc["spec"].pop("nodeName", None)
    doc["metadata"].pop("deletionTimestamp", None)
    result = store.apply(doc)
    got = store.get("Pod", "default/x")
    assert got == result.obj
    want = copy.deepcopy(doc)
    want["metadata"]["resourceVersion"] = str(result.rv)
    want["metadata"].setdefault("creationTimestamp", "2024-05-01T12:00:00Z")
    if not want["metadata"].get("uid"):
        want["metadata"]["uid"] = f"00000000-0000-4000-8000-{result.rv:012x}"
    if not want["metadata"].get("creationTimestamp"):
        want["metadata"]["creationTimestamp"] = "2024-05-01T12:00:00Z"
    assert got == want
    assert store.apply(doc).action == "unchanged"
    assert store.delete("Pod", "default/x")
    deleted = store.read_events()[-1]
    assert deleted.obj == {
        **got,
        "metadata": {**got["metadata"], "resourceVersion": str(deleted.rv)},
    }


def test_bind_skips_32_bit_lengths(store: Store, redis_client: redis.Redis) -> None:
    doc = {
        "kind": "Pod",
        "x-str32": "l" * 70_000,
        "x-bin32": b"b" * 70_000,
        "spec": {"x-array32": list(range(65_536)), "x-map16": {str(i): i for i in range(300)}},
        "metadata": {"name": "x", "namespace": "default"},
    }
    redis_client.hset(store.keys.obj("Pod"), "default/x", msgpack.packb(doc))
    assert store.bind("default/x", "n1").ok
    after = stored(redis_client, store, "default/x")
    assert after["spec"]["nodeName"] == "n1" and after["x-str32"] == doc["x-str32"]
    assert after["spec"]["x-array32"] == doc["spec"]["x-array32"]


FRESH = {
    "type": "PodScheduled",
    "status": "True",
    "lastProbeTime": None,
    "lastTransitionTime": "2024-05-01T12:00:00Z",
}
READY = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("status", "want"),
    [
        ({"conditions": [READY, {"type": "PodScheduled", "status": "False"}]}, [READY, FRESH]),
        ({"conditions": [{"type": "PodScheduled", "status": "True", "reason": "r"}]},
         [{"type": "PodScheduled", "status": "True", "reason": "r"}]),
        ({"conditions": [{"type": "PodScheduled"}, {"type": "PodScheduled", "status": "True"}]},
         [FRESH, {"type": "PodScheduled", "status": "True"}]),
        ({"conditions": [READY] * 15}, [READY] * 15 + [FRESH]),
        ({"conditions": None, "nominatedNodeName": "n2"}, [FRESH]),
        ({"phase": "Pending"}, [FRESH]),
        ("weird", [FRESH]),
        (None, [FRESH]),
    ],
    ids=["false-replaced", "true-kept", "first-wins", "append-16th", "null", "absent", "not-a-map",
         "null-status"],
)  # fmt: skip
def test_pod_scheduled_condition(
    store: Store, redis_client: redis.Redis, status: Any, want: list[dict[str, Any]]
) -> None:
    doc = {"kind": "Pod", "metadata": {"name": "x", "namespace": "default"}, "status": status}
    redis_client.hset(store.keys.obj("Pod"), "default/x", msgpack.packb(doc))
    assert store.bind("default/x", "n1").ok
    after = stored(redis_client, store, "default/x")
    assert after["status"]["conditions"] == want
    assert "nominatedNodeName" not in after["status"]
    assert after == expected_binding(doc, "n1", FRESH, 1)


@pytest.mark.parametrize("extra", range(9, 17))
@pytest.mark.parametrize("uid", [None, "u-1"], ids=["uid-set-by-lua", "uid-given"])
def test_apply_across_the_fixmap_boundary(store: Store, extra: int, uid: str | None) -> None:
    meta: dict[str, Any] = {"name": "x", **{f"x-{i}": i for i in range(extra)}}
    top = {f"t-{i}": i for i in range(extra)}
    doc = {"kind": "Pod", "metadata": meta, **top}
    if uid:
        meta["uid"] = uid
    result = store.apply(doc)
    assert store.get("Pod", "default/x") == result.obj
    assert result.obj["metadata"]["uid"] == (uid or f"00000000-0000-4000-8000-{result.rv:012x}")
    assert store.bind("default/x", "n1").ok
    assert store.get("Pod", "default/x")["spec"] == {"nodeName": "n1"}
