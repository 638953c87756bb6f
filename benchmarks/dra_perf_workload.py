"""Write a plain-YAML workload shaped like upstream scheduler_perf's
SchedulingWithResourceClaimTemplate (test/integration/scheduler_perf/dra): N nodes, each
with one ResourceSlice of D devices (model A100, family GPU, driverVersion 1.2.3, numa i,
memory 1Gi), and P pods each with a claim from one template asking for one device.

    .venv/bin/python benchmarks/dra_perf_workload.py 500 10 5000 > /tmp/dra-500.yaml
    .venv/bin/cluster-sched run /tmp/dra-500.yaml --quiet

(upstream's 5000pods_500nodes threshold is 40 pods/s.)
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from cluster_sched.workload.perf.dra_ops import driver_slice

DRIVER = "test-driver.cdi.k8s.io"


def workload(nodes: int, devices: int, pods: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "test-claim-template", "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
                        ]
                    }
                }
            },
        },
    ]
    for n in range(nodes):
        name = f"scheduler-perf-dra-{n}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            }
        )
        docs.append(driver_slice(name, DRIVER, devices))
    for p in range(pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"test-dra-{p}", "namespace": "default"},
                "spec": {
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                    "resourceClaims": [
                        {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
                    ],
                },
            }
        )
    return docs


if __name__ == "__main__":
    n, d, p = (int(a) for a in (sys.argv[1:4] if len(sys.argv) >= 4 else ("500", "10", "5000")))
    yaml.safe_dump_all(workload(n, d, p), sys.stdout)
