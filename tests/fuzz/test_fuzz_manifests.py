"""Fuzzed manifests: the loader and ``cluster-sched explain`` end in success or one line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.api.manifest import load_documents, parse_objects
from cluster_sched.errors import ClusterSchedError
from tests.fuzz.cli_driver import assert_clean_end, run_cli
from tests.fuzz.strategies import NODE, POD, fuzz_settings, manifest_docs, mutate, yaml_text


def _one_line(err: ClusterSchedError) -> None:
    text = str(err)
    assert text and "\n" not in text, repr(text)


@fuzz_settings()
@given(text=yaml_text)
def test_manifest_text_parses_or_fails_with_one_line(text: str) -> None:
    try:
        parse_objects(load_documents(text, "fuzz.yaml"), "fuzz.yaml")
    except ClusterSchedError as err:
        _one_line(err)


@fuzz_settings()
@given(doc=manifest_docs)
def test_manifest_documents_parse_or_fail_with_one_line(doc: Any) -> None:
    try:
        parse_objects([doc], "fuzz.yaml") if isinstance(doc, dict) else None
    except ClusterSchedError as err:
        _one_line(err)


def _dump(docs: list[Any]) -> str:
    try:
        return yaml.safe_dump_all(docs)
    except yaml.YAMLError:
        return "{"


@fuzz_settings(share=0.25)
@given(
    cluster=st.lists(st.one_of(mutate(NODE), manifest_docs), min_size=0, max_size=3),
    pod=st.one_of(mutate(POD, max_edits=3), yaml_text),
)
def test_explain_ends_in_success_or_one_line_exit_2(cluster: list[Any], pod: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cluster_file = Path(tmp) / "cluster.yaml"
        pod_file = Path(tmp) / "pod.yaml"
        cluster_file.write_text(_dump([NODE, *cluster]))
        pod_file.write_text(pod if isinstance(pod, str) else _dump([pod]))
        argv = ["explain", "--cluster", str(cluster_file), "--pod", str(pod_file)]
        code, _, err = run_cli([*argv, "--output", "json"])
    assert_clean_end(code, err)
