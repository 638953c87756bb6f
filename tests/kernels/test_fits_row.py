"""``fits_row``: NodeResourcesFit on one row without a kernel call, against the numpy
reference's answer for a one-row window (``order=[row]``, ``to_find=1``)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.kernels import PodQuery, evaluate_pod_reference, fits_row
from tests.kernels.strategies import EXAMPLES, profiles, queries, tables


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fits_row_equals_a_one_row_window(data: st.DataObject) -> None:
    table = data.draw(tables())
    profile = data.draw(profiles())
    requests = data.draw(queries(table, profile)).requests
    for row in table.order().tolist():
        one = np.asarray([row], dtype=np.int64)
        want = evaluate_pod_reference(table, profile, PodQuery(requests), 1, one)
        assert fits_row(table, profile, requests, row) == (len(want.feasible_rows) == 1), row
