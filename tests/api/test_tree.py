"""copy_tree equals deepcopy on JSON-shaped data and shares no container with its input."""

from __future__ import annotations

import copy
import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.api.tree import copy_tree

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.datetimes(timezones=st.just(datetime.UTC))
)
trees = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=40,
)


def containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value``, itself included."""
    found = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            stack.extend(item)
    return found


@given(trees)
def test_copy_tree_equals_deepcopy_and_shares_no_container(tree: Any) -> None:
    copied = copy_tree(tree)
    assert copied == copy.deepcopy(tree)
    assert type(copied) is type(tree)
    originals = {id(c) for c in containers(tree)}
    assert not originals & {id(c) for c in containers(copied)}


def test_unknown_mutable_values_are_deep_copied() -> None:
    tagged = {"ports": {80, 443}, "nested": [bytearray(b"ab")]}
    copied = copy_tree(tagged)
    assert copied == tagged
    assert copied["ports"] is not tagged["ports"]
    assert copied["nested"][0] is not tagged["nested"][0]
