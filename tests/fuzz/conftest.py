"""The long fuzz campaign (``CLUSTER_SCHED_FUZZ_EXAMPLES``) runs without the per-test
timeout: 10,000 examples of one target take minutes, which is its budget, not a hang."""

from __future__ import annotations

import os

import pytest

from tests.fuzz.strategies import ENV_EXAMPLES


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get(ENV_EXAMPLES):
        for item in items:
            item.add_marker(pytest.mark.timeout(0))
