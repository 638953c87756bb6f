"""Fuzzed Workload files (both formats): load_workload ends in a workload or one line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.errors import ClusterSchedError
from cluster_sched.workload.spec import load_workload
from tests.fuzz.strategies import fuzz_settings, manifest_docs, workload_docs


def _text(docs: list[Any]) -> str:
    try:
        return yaml.safe_dump_all(docs)
    except yaml.YAMLError:
        return "{"


@fuzz_settings()
@given(docs=st.one_of(workload_docs.map(lambda d: [d]), st.lists(manifest_docs, max_size=3)))
def test_workload_loads_or_fails_with_one_line(docs: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "workload.yaml"
        path.write_text(_text(docs))
        try:
            w = load_workload(path)
        except ClusterSchedError as err:
            assert str(err) and "\n" not in str(err), repr(str(err))
            return
    for group in w.pod_groups:
        for doc in group.manifests():
            assert isinstance(doc, dict)
    assert all(isinstance(line, str) and "\n" not in line for line in w.invalid)
