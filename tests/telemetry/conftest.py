"""A small workload for the telemetry tests that run a whole evaluation: 5 nodes and 50
pods that all fit, on several nodes each (so Score and NormalizeScore run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.telemetry.workloads import SMALL_WORKLOAD


@pytest.fixture
def small_workload(tmp_path: Path) -> Path:
    path = tmp_path / "traced.yaml"
    path.write_text(SMALL_WORKLOAD)
    return path
