"""Curated public names of the store package: every ``__all__`` entry exists."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "cluster_sched.store",
    "cluster_sched.store.admission",
    "cluster_sched.store.boundary",
    "cluster_sched.store.codec",
    "cluster_sched.store.kinds",
    "cluster_sched.store.objects",
    "cluster_sched.store.podstatus",
    "cluster_sched.store.results",
    "cluster_sched.store.scripts",
    "cluster_sched.store.store",
    "cluster_sched.store.streams",
]


@pytest.mark.parametrize("name", MODULES, ids=MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    for symbol in module.__all__:
        assert hasattr(module, symbol), f"{name}.{symbol}"


@pytest.mark.parametrize("script", ["apply", "bind", "delete"])
def test_every_script_documents_keys_argv_and_return(script: str) -> None:
    from cluster_sched.store.scripts import script_source

    body = script_source(script).split("\n-- " + script + ".lua", 1)[1]
    for part in ("KEYS[1]", "ARGV[1]", "Returns"):
        assert part in body, f"{script}.lua header lacks {part}"
