"""Fuzzed KubeSchedulerConfiguration files: load_config, and ``explain --config`` (which
also builds the profiles' plugins), end in success or one line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.config.load import load_config
from cluster_sched.errors import ClusterSchedError
from tests.fuzz.cli_driver import assert_clean_end, run_cli
from tests.fuzz.strategies import NODE, POD, config_docs, fuzz_settings


def _text(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc)
    except yaml.YAMLError:
        return "{"


@fuzz_settings()
@given(doc=st.one_of(config_docs, st.text(max_size=100)))
def test_config_loads_or_fails_with_one_line(doc: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(doc if isinstance(doc, str) else _text(doc))
        try:
            load_config(path)
        except ClusterSchedError as err:
            assert str(err) and "\n" not in str(err), repr(str(err))


@fuzz_settings(share=0.25)
@given(doc=config_docs)
def test_explain_with_fuzzed_config_ends_cleanly(doc: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = {"config": _text(doc), "cluster": _text(NODE), "pod": _text(POD)}
        for name, text in files.items():
            (Path(tmp) / f"{name}.yaml").write_text(text)
        code, _, err = run_cli(
            ["explain", "--output", "json"]
            + [arg for name in files for arg in (f"--{name}", str(Path(tmp) / f"{name}.yaml"))]
        )
    assert_clean_end(code, err)
