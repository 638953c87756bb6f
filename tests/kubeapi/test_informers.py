"""Every kind kube-scheduler's informers list answers list and watch (empty where the
store does not hold it), so any scheduler's caches sync; and the API's CLI flags."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cluster_sched.errors import UsageError
from cluster_sched.kubeapi.cli import parse_address
from cluster_sched.kubeapi.resources import RESOURCES
from tests.kubeapi.kube_helpers import Http

LISTABLE = [r for r in RESOURCES if "list" in r.verbs]


def test_every_resource_lists_and_watches(http: Http) -> None:
    assert len(LISTABLE) >= 25
    for resource in LISTABLE:
        base = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
        code, listed = http.json("GET", f"{base}/{resource.plural}")
        assert code == 200 and listed["items"] == [], resource
        assert listed["metadata"]["resourceVersion"], resource
        path = (
            f"{base}/{resource.plural}?watch=1&sendInitialEvents=true"
            "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        )
        with http.stream(path) as resp:
            bookmark = json.loads(resp.readline())
        assert bookmark["type"] == "BOOKMARK", resource
        annotations = bookmark["object"]["metadata"]["annotations"]
        assert annotations == {"k8s.io/initial-events-end": "true"}, resource


@pytest.mark.parametrize(
    ("text", "expected"),
    [("127.0.0.1:6443", ("127.0.0.1", 6443)), (":0", ("127.0.0.1", 0)), ("8080", ("127.0.0.1", 8080)),
     ("[::1]:6443", ("::1", 6443))],
)  # fmt: skip
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["host:port", "1.2.3.4:70000"])
def test_bad_address_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_address(text)


@pytest.mark.parametrize(
    "flags",
    [["--kubeconfig", "kc"], ["--api", "x:y"], ["--api", ":0", "--api-linger", "-1"]],
    ids=["kubeconfig-without-api", "bad-address", "negative-linger"],
)
def test_api_flag_errors_are_usage_errors(flags: list[str]) -> None:
    from cluster_sched.kubeapi.cli import add_api_options, check_api_args
    from cluster_sched.workload.cli_args import CliParser

    parser = CliParser()  # the command line's parser: option values are checked by type
    add_api_options(parser, linger=True)
    with pytest.raises(UsageError):
        check_api_args(parser.parse_args(flags))


def test_no_auth_off_loopback_exits_2_with_one_line(redis_url: str) -> None:
    argv = [sys.executable, "-m", "cluster_sched.cli", "serve", "--redis", redis_url,
            "--api", "0.0.0.0:0", "--no-auth"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert (
        proc.stderr.strip() == "error: --no-auth: only allowed on a loopback address, not 0.0.0.0"
    )
