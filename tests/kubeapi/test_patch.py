"""Strategic merge patch against upstream's documented examples (kubernetes/community
``contributors/devel/sig-api-machinery/strategic-merge-patch.md`` and the
``preserve-order-in-strategic-merge-patch`` proposal), and JSON merge patch (RFC 7386)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.kubeapi.errors import ApiError
from cluster_sched.kubeapi.patch import apply_merge_patch, apply_strategic_merge_patch


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def smp(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    return apply_strategic_merge_patch(original, patch, "", "v1", "Pod")


NGINX = {"name": "nginx", "image": "nginx-1.0"}
TAILER = {"name": "log-tailer", "image": "log-tailer-1.0"}

CASES = [
    (  # lists with a merge key merge element-wise, new elements appended
        _pod(containers=[NGINX]),
        {"spec": {"containers": [TAILER]}},
        _pod(containers=[NGINX, TAILER]),
    ),
    (  # an element's fields merge
        _pod(containers=[NGINX]),
        {"spec": {"containers": [{"name": "nginx", "image": "nginx-1.1"}]}},
        _pod(containers=[{"name": "nginx", "image": "nginx-1.1"}]),
    ),
    (  # $patch: delete removes the element with that key
        _pod(containers=[NGINX, TAILER]),
        {"spec": {"containers": [{"name": "nginx", "$patch": "delete"}]}},
        _pod(containers=[TAILER]),
    ),
    (  # $patch: replace in a list replaces the whole list
        _pod(containers=[NGINX, TAILER]),
        {"spec": {"containers": [{"name": "sidecar", "image": "s"}, {"$patch": "replace"}]}},
        _pod(containers=[{"name": "sidecar", "image": "s"}]),
    ),
    (  # $patch: replace on a map replaces it
        _pod(containers=[NGINX], nodeSelector={"a": "1", "b": "2"}),
        {"spec": {"nodeSelector": {"c": "3", "$patch": "replace"}}},
        _pod(containers=[NGINX], nodeSelector={"c": "3"}),
    ),
    (  # $patch: delete on a map deletes it
        _pod(containers=[NGINX], nodeSelector={"a": "1"}),
        {"spec": {"nodeSelector": {"$patch": "delete"}}},
        _pod(containers=[NGINX]),
    ),
    (  # null deletes a field
        _pod(containers=[NGINX], nodeName="n1"),
        {"spec": {"nodeName": None}},
        _pod(containers=[NGINX]),
    ),
    (  # lists without a patch strategy (tolerations) are replaced whole
        _pod(containers=[NGINX], tolerations=[{"key": "a"}]),
        {"spec": {"tolerations": [{"key": "b"}]}},
        _pod(containers=[NGINX], tolerations=[{"key": "b"}]),
    ),
    (  # $setElementOrder orders the merged list as listed
        _pod(containers=[NGINX, TAILER]),
        {"spec": {"$setElementOrder/containers": [{"name": "log-tailer"}, {"name": "nginx"}]}},
        _pod(containers=[TAILER, NGINX]),
    ),
    (  # $retainKeys drops the keys it does not name
        _pod(containers=[NGINX], volumes=[{"name": "v", "hostPath": {"path": "/x"}}]),
        {"spec": {"volumes": [{"name": "v", "emptyDir": {}, "$retainKeys": ["emptyDir", "name"]}]}},
        _pod(containers=[NGINX], volumes=[{"name": "v", "emptyDir": {}}]),
    ),
    (  # conditions merge by type (the scheduler's status patch)
        {
            **_pod(containers=[NGINX]),
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        },
        {
            "status": {
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ]
            }
        },
        {
            **_pod(containers=[NGINX]),
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
                ]
            },
        },
    ),
]


@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    CASES,
    ids=["add-by-key", "merge-element", "delete-element", "replace-list", "replace-map",
         "delete-map", "null-deletes", "atomic-list", "set-element-order", "retain-keys",
         "conditions-by-type"],
)  # fmt: skip
def test_strategic_merge_patch(original: dict, patch: dict, expected: dict) -> None:
    assert smp(original, patch) == expected


def test_primitive_merge_list_and_delete_from_it() -> None:
    original = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["a", "b"]},
    }
    added = smp(original, {"metadata": {"finalizers": ["b", "c"]}})
    assert added["metadata"]["finalizers"] == ["a", "b", "c"]
    removed = smp(added, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert removed["metadata"]["finalizers"] == ["b", "c"]


def test_directives_are_never_stored() -> None:
    out = smp(_pod(containers=[NGINX]), {"spec": {"nodeSelector": {"x": "1", "$patch": "replace"}}})
    assert "$patch" not in str(out)


def test_element_without_its_merge_key_is_refused() -> None:
    with pytest.raises(ApiError) as err:
        smp(_pod(containers=[NGINX]), {"spec": {"containers": [{"image": "x"}]}})
    assert err.value.code == 400


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [  # RFC 7386 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ],
)
def test_json_merge_patch(target: dict, patch: dict, expected: dict) -> None:
    assert apply_merge_patch(target, patch) == expected
