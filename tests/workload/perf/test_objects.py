"""scheduler_perf object templates get Kubernetes' schema check as every other input
file does (issue 26): a typo is refused naming file, object and field, before anything
runs, whether the template is static or rendered per object."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.perf.objects import Template

POD = """apiVersion: v1
kind: Pod
metadata:
  generateName: pod-
spec:
  nodeSelecter: {disk: ssd}
  containers: [{name: c, image: pause, resources: {requests: {cpu: {{.Cpu}}}}}]
"""


@pytest.mark.parametrize("templated", [False, True], ids=["static", "templated"])
def test_an_unknown_field_in_a_template_is_refused(tmp_path: Path, templated: bool) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(POD if templated else POD.replace("{{.Cpu}}", "100m"))
    with pytest.raises(InvalidObjectError) as err:
        Template(path, params={"Cpu": "100m"}).render(0, 1)
    assert str(err.value).startswith(f"{path}: Pod default/generated: field spec.nodeSelecter:")


def test_a_valid_template_renders(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(POD.replace("  nodeSelecter: {disk: ssd}\n", ""))
    doc = Template(path, params={"Cpu": "250m"}).render(3, 5)
    assert doc["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"


def test_divide_int_renders_as_upstreams_template_function(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-{{.Index}}\nspec:\n"
        "  containers: [{name: c, image: pause}]\n"
        "  resourceClaims: [{name: r, resourceClaimName: 'c-{{DivideInt .Index 5}}'}]\n"
    )
    names = [
        Template(path).render(i, 12)["spec"]["resourceClaims"][0]["resourceClaimName"]
        for i in (0, 4, 5, 11)
    ]
    assert names == ["c-0", "c-0", "c-1", "c-2"]
