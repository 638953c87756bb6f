"""kubectl's age strings and tab alignment, as the get/describe renderers produce them."""

from __future__ import annotations

import pytest

from cluster_sched.workload.inspect_render import human_duration, tabwrite

# Cases from k8s.io/apimachinery/pkg/util/duration's HumanDuration tests.
DURATIONS = [
    (-2, "<invalid>"),
    (-1, "0s"),
    (0, "0s"),
    (119, "119s"),
    (120, "2m"),
    (121, "2m1s"),
    (9 * 60 + 59, "9m59s"),
    (10 * 60, "10m"),
    (3 * 3600 - 1, "179m"),
    (3 * 3600, "3h"),
    (3 * 3600 + 60, "3h1m"),
    (8 * 3600, "8h"),
    (47 * 3600 + 59 * 60, "47h"),
    (48 * 3600, "2d"),
    (48 * 3600 + 3600, "2d1h"),
    (8 * 86400, "8d"),
    (2 * 365 * 86400, "2y"),
    (2 * 365 * 86400 + 86400, "2y1d"),
    (8 * 365 * 86400, "8y"),
]


@pytest.mark.parametrize(("seconds", "text"), DURATIONS, ids=[t for _, t in DURATIONS])
def test_human_duration_matches_kubectl(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_tabwrite_aligns_column_blocks_like_go_tabwriter() -> None:
    rows = [["Name:", "x"], ["Namespace:", "default"], ["Containers:"], ["  c:", "img"]]
    assert tabwrite(rows, padding=2).splitlines() == [
        "Name:       x",
        "Namespace:  default",
        "Containers:",
        "  c:  img",
    ]
    assert tabwrite([["A", "BB"], ["CCC", "D"]]) == "A     BB\nCCC   D"
