"""Curated public names: every ``__all__`` entry exists."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "cluster_sched.api",
    "cluster_sched.api.manifest",
    "cluster_sched.api.quantity",
    "cluster_sched.api.requests",
    "cluster_sched.api.selectors",
    "cluster_sched.api.taints",
    "cluster_sched.testing",
    "cluster_sched.testing.builders",
]


@pytest.mark.parametrize("name", MODULES, ids=MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    for symbol in module.__all__:
        assert hasattr(module, symbol), f"{name}.{symbol}"
