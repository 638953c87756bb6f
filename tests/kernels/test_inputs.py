"""``PodRequests.of_pod`` packs a pod's requests on a scratch CycleState. With metrics on,
the plugin instances carry the instrumentation's wrappers; the scratch state is no
scheduling cycle, so it must neither count plugin evaluations nor draw a timing sample
(it did: ``test_compiled_path_feeds_extension_point_and_plugin_metrics`` then saw one
NodeResourcesFit PreFilter more than Filter in about one run in six)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from cluster_sched.config.plugin_args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.instrumentation import instrument_framework
from cluster_sched.framework.runtime import Framework
from cluster_sched.kernels import KernelProfile, PodRequests
from cluster_sched.plugins.noderesources.balanced_allocation import BalancedAllocation
from cluster_sched.plugins.noderesources.fit import Fit
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import DISABLED
from cluster_sched.testing.builders import make_pod


def _samples(m: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(m.exposition().decode()):
        for s in family.samples:
            if s.name.startswith("scheduler_plugin_"):
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_packing_a_pod_is_no_plugin_evaluation() -> None:
    fit = Fit(NodeResourcesFitArgs())
    balanced = BalancedAllocation(NodeResourcesBalancedAllocationArgs())
    fwk = Framework(
        "p",
        {
            "preFilter": [(fit, 1)],
            "filter": [(fit, 1)],
            "preScore": [(fit, 1), (balanced, 1)],
            "score": [(fit, 1), (balanced, 1)],
        },
        Handle(profile_name="p"),
    )
    metrics = Metrics()
    instrument_framework(fwk, DISABLED, metrics)
    assert getattr(fit.pre_filter, "plugin_metrics", None) is metrics  # really wrapped
    before = _samples(metrics)
    pod = make_pod("p").req(cpu="500m", memory="1Gi").obj()
    requests = PodRequests.of_pod(pod, KernelProfile(fit, balanced))
    assert dict(requests.checked)["cpu"] == 500
    assert _samples(metrics) == before
