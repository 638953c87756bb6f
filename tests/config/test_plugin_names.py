"""A plugin name that names no plugin is an error naming the file and field, or with
``--lenient`` a warning (issue 26, finding 9): a ``pluginConfig`` typo no longer leaves
the default scoring silently in place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.cli import EXIT_USAGE, main
from cluster_sched.config.load import load_config
from cluster_sched.errors import ConfigError
from cluster_sched.plugins import names
from cluster_sched.plugins.registry import new_in_tree_registry

ROOT = Path(__file__).resolve().parents[2]
SMALL = str(ROOT / "examples/small-basic.yaml")
HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
MOST_ALLOCATED = {"scoringStrategy": {"type": "MostAllocated"}}


def write(tmp_path: Path, profile: dict[str, Any]) -> str:
    path = tmp_path / "sched.yaml"
    path.write_text(yaml.safe_dump({**HEAD, "profiles": [profile]}))
    return str(path)


CASES = [
    (
        {"pluginConfig": [{"name": "NodeResourcesFitt", "args": MOST_ALLOCATED}]},
        'profiles[0].pluginConfig[0].name: unknown plugin "NodeResourcesFitt" '
        '(did you mean "NodeResourcesFit"?)',
    ),
    (
        {"plugins": {"score": {"disabled": [{"name": "ImageLocalty"}]}}},
        'profiles[0].plugins.score.disabled[0].name: unknown plugin "ImageLocalty" '
        '(did you mean "ImageLocality"?)',
    ),
    (
        {"plugins": {"multiPoint": {"enabled": [{"name": "Zzz"}]}}},
        'profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "Zzz"',
    ),
]


@pytest.mark.parametrize(("profile", "message"), CASES, ids=["pluginConfig", "disabled", "enabled"])
def test_an_unknown_plugin_name_is_an_error_naming_file_and_field(
    tmp_path: Path, profile: dict[str, Any], message: str
) -> None:
    path = write(tmp_path, profile)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: {message}"


@pytest.mark.parametrize(("profile", "message"), CASES[:2], ids=["pluginConfig", "disabled"])
def test_lenient_keeps_the_name_as_a_warning(
    tmp_path: Path, profile: dict[str, Any], message: str
) -> None:
    path = write(tmp_path, profile)
    assert load_config(path, lenient=True).warnings == (f"{path}: {message}; ignored",)


def test_known_names_star_and_import_paths_pass(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "plugins": {
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "ImageLocality"}]},
                "filter": {"enabled": [{"name": "tests.testing_plugins.cs_sample_plugins:X"}]},
            },
            "pluginConfig": [{"name": "NodeResourcesFit", "args": MOST_ALLOCATED}],
        },
    )
    assert load_config(path, lenient=False).warnings == ()


def test_in_tree_names_are_the_in_tree_registry() -> None:
    assert sorted(names.IN_TREE) == new_in_tree_registry().names()


def test_run_refuses_a_misspelled_plugin_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, CASES[0][0])
    assert main(["run", SMALL, "--config", path, "--quiet"]) == EXIT_USAGE
    assert capsys.readouterr().err == f"error: {path}: {CASES[0][1]}\n"


def test_run_names_the_config_file_in_errors_found_building_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, {"plugins": {"filter": {"enabled": [{"name": "PrioritySort"}]}}})
    assert main(["run", SMALL, "--config", path, "--quiet"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        f'error: {path}: profiles[0].plugins.filter.enabled[0]: plugin "PrioritySort" '
        "does not extend filter\n"
    )


def test_serve_names_the_config_file_in_errors_found_building_profiles(
    tmp_path: Path, redis_url: str
) -> None:
    path = write(tmp_path, {"plugins": {"filter": {"enabled": [{"name": "PrioritySort"}]}}})
    argv = ["serve", "--redis", redis_url, "--config", path]
    proc = subprocess.run(
        [sys.executable, "-m", "cluster_sched.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_USAGE
    assert proc.stderr.splitlines()[-1] == (
        f'error: {path}: profiles[0].plugins.filter.enabled[0]: plugin "PrioritySort" '
        "does not extend filter"
    )
