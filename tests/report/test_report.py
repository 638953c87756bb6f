"""report.html and plots/*.png: written for small runs, every chart a real, non-blank PNG,
every chart embedded in the page, nothing the page would fetch, and the page opened by a
real headless browser when one is installed."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cluster_sched.cli import main
from cluster_sched.framework.diagnosis import Diagnosis, fit_error_message
from cluster_sched.framework.status import Code, Status
from cluster_sched.report.reasons import fit_error_reasons
from tests.report.mixed import MixedRun

CHARTS = {
    "throughput",
    "latency_cdf",
    "attempt_latency",
    "node_utilisation",
    "node_utilisation_heatmap",
    "unschedulable_reasons",
    "utilisation_over_time",
    "pending_over_time",
    "nodes_in_use",
    "waiting_reasons_over_time",
}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Executables of headless-capable Chromium builds, first found wins.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

PLAIN = """\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: z1}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {topology.kubernetes.io/zone: z2}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: default}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "1500m"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: too-big, namespace: default}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "3"}}}]}
"""


def assert_real_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE), path
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        width, height = image.size
        assert width >= 200 and height >= 150, (path, image.size)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 2, f"{path} is blank"


def assert_self_contained(page: str, charts: list[Path]) -> None:
    for png in charts:
        encoded = base64.b64encode(png.read_bytes()).decode("ascii")
        assert f'src="data:image/png;base64,{encoded}"' in page, f"{png.name} not embedded"
    assert page.count("<img ") == len(charts)
    assert not re.search(r"https?://", page), "the page names a URL"
    sources = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page)
    assert all(s.startswith("data:") for s in sources), sources
    for fetching in ("<link", "<script", "url(", "@import", "<iframe"):
        assert fetching not in page.lower(), fetching


def test_mixed_run_writes_every_chart(mixed_run: MixedRun) -> None:
    plots = sorted((mixed_run.out / "plots").glob("*.png"))
    assert {p.stem for p in plots} == CHARTS
    for png in plots:
        assert_real_png(png)
    page = (mixed_run.out / "report.html").read_text(encoding="utf-8")
    assert_self_contained(page, plots)
    assert "report-mix" in page
    assert "default/pinned-0" in page and "node affinity/selector" in page


def test_plain_yaml_run_through_the_cli(tmp_path: Path, capsys: Any, redis_url: str) -> None:
    workload = tmp_path / "plain.yaml"
    workload.write_text(PLAIN)
    out = tmp_path / "out"
    rc = main(["run", str(workload), "--output", str(out), "--quiet", "--redis", redis_url])
    assert rc == 0
    printed = capsys.readouterr().out
    assert f"report         {out / 'report.html'}" in printed
    assert "unschedulable: 1 pods: Insufficient cpu" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["groups"]) == ["pods"], "plain YAML is one group"
    assert summary["groups"]["pods"]["scheduled"] == 2
    assert summary["groups"]["pods"]["unschedulable"] == 1
    assert summary["unschedulable_reasons"] == {"Insufficient cpu": 1}
    assert summary["config_file"] is None and summary["seed"] is None
    plots = sorted((out / "plots").glob("*.png"))
    assert {"throughput", "unschedulable_reasons", "node_utilisation_heatmap"} <= {
        p.stem for p in plots
    }
    for png in plots:
        assert_real_png(png)
    assert_self_contained((out / "report.html").read_text(encoding="utf-8"), plots)


def test_no_report_flag(tmp_path: Path, capsys: Any, redis_url: str) -> None:
    workload = tmp_path / "plain.yaml"
    workload.write_text(PLAIN)
    out = tmp_path / "out"
    rc = main(
        ["run", str(workload), "--output", str(out), "--quiet", "--no-report", "--redis", redis_url]
    )
    assert rc == 0
    assert (out / "summary.json").exists()
    assert not (out / "report.html").exists() and not (out / "plots").exists()
    assert "report " not in capsys.readouterr().out


@pytest.mark.parametrize(
    "statuses, pre_filter, post_filter",
    [
        ({"n1": ("Insufficient cpu",), "n2": ("Insufficient cpu", "Insufficient memory")}, "", ""),
        (
            {"n1": ("node(s) had untolerated taint {a: b}",)},
            "",
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
        ({}, "node(s) didn't match pod topology spread constraints (missing required label)", ""),
    ],
    ids=["histogram", "with-postfilter", "prefilter"],
)
def test_reasons_invert_the_fit_error_message(
    statuses: dict[str, tuple[str, ...]], pre_filter: str, post_filter: str
) -> None:
    diagnosis = Diagnosis(pre_filter_msg=pre_filter, post_filter_msg=post_filter)
    expected: dict[str, int] = {}
    for node, reasons in statuses.items():
        diagnosis.add_status(node, Status(Code.UNSCHEDULABLE, reasons, "P"))
        for r in reasons:
            expected[r] = expected.get(r, 0) + 1
    nodes = max(len(statuses), 3)
    if pre_filter:
        expected = {pre_filter: nodes}
    assert fit_error_reasons(fit_error_message(nodes, diagnosis)) == expected


def _browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def test_report_opens_in_a_headless_browser(mixed_run: MixedRun, tmp_path: Path) -> None:
    browser = _browser()
    if browser is None:
        missing = f"no headless browser installed (looked for {', '.join(BROWSERS)})"
        if os.environ.get("CLUSTER_SCHED_REQUIRE_BROWSER"):  # set by .ci/run
            pytest.fail(missing)
        pytest.skip(missing)
    page = (mixed_run.out / "report.html").resolve()
    common = [
        browser,
        "--headless",
        "--no-sandbox",  # tests may run as root, where Chromium's sandbox refuses to start
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        # any request the page made would fail: it must not need one
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ]
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    for chart in CHARTS:
        assert f'<figure id="{chart}"><img' in dom.stdout, chart
    assert dom.stdout.count('src="data:image/png;base64,') == len(CHARTS)
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert_real_png(shot)
