"""Upstream's plugin table (``test_dynamicresources_upstream_table`` lists every case),
continued: the prioritized-list Score/NormalizeScore cases, and the cases that switch a
gate off which cluster-sched models (``--feature-gates``), through ``explain``."""

from __future__ import annotations

import pytest

from tests.plugins.dra_table_cases import (
    check,
)
from tests.plugins.dra_table_score_cases import (
    GATES_OFF,
    SCORING,
)


@pytest.mark.parametrize("name", list(SCORING))
def test_upstream_scoring_case(name: str) -> None:
    check(name, SCORING[name])


@pytest.mark.parametrize("name", list(GATES_OFF))
def test_upstream_gate_off_case(name: str) -> None:
    check(name, GATES_OFF[name])
