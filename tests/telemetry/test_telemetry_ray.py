"""Trace context crosses a real Ray task boundary as a plain dict (one local Ray, one task)."""

from __future__ import annotations

from collections.abc import Callable

import ray

from cluster_sched.telemetry import spans as S
from cluster_sched.telemetry.tracing import setup_tracing
from cluster_sched.testing.otlp_receiver import OtlpReceiver


def _make_binding_task() -> Callable[[str, dict[str, str], str], bool]:
    """Build the task body here so cloudpickle ships it by value: test modules are not
    importable from Ray worker processes."""

    def _binding_task(endpoint: str, carrier: dict[str, str], pod_uid: str) -> bool:
        """What a binding task does with the carrier: a linked root and a continued child."""
        from cluster_sched.telemetry import spans as S
        from cluster_sched.telemetry.tracing import process_tracing

        tracing = process_tracing(endpoint, "test-ray-worker")
        with (
            tracing.span(
                S.BINDING_CYCLE,
                {S.ATTR_POD_UID: pod_uid},
                links=[tracing.link_from_carrier(carrier)],
            ),
            tracing.span(S.phase_span("Bind")),
        ):
            pass
        with tracing.span(S.SHARD_RUN, parent=tracing.context_from_carrier(carrier)):
            pass
        # The worker process outlives the task; flush so the test need not wait for the batch.
        return tracing.force_flush()

    return _binding_task


def test_binding_span_in_ray_task_links_to_coordinator_cycle() -> None:
    with OtlpReceiver() as receiver:
        tracing = setup_tracing(receiver.endpoint, "test-coordinator")
        # address="local" always starts a private instance, never joins a cluster that
        # another test (or `ray start`) left on this machine. If this test process already
        # runs Ray, use that one and leave it running.
        owns_ray = not ray.is_initialized()
        if owns_ray:
            ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
        try:
            with tracing.span(S.SCHEDULE_POD), tracing.span(S.SCHEDULING_CYCLE):
                carrier = tracing.current_context_carrier()
            task = ray.remote(num_cpus=1)(_make_binding_task())
            assert ray.get(task.remote(receiver.endpoint, carrier, "uid-9"))
            assert tracing.force_flush()
        finally:
            if owns_ray:
                ray.shutdown()
            tracing.shutdown()

        spans = receiver.wait_for(
            lambda got: {"bindingCycle", "shardRun", "schedulingCycle"} <= {s.name for s in got}
        )
    named = {s.name: s for s in spans}
    cycle, binding, run = named["schedulingCycle"], named["bindingCycle"], named["shardRun"]
    assert binding.service_name == "test-ray-worker"
    assert binding.is_root
    assert binding.links == ((cycle.trace_id, cycle.span_id),)
    assert binding.attributes[S.ATTR_POD_UID] == "uid-9"
    assert named["bind"].parent_span_id == binding.span_id
    assert (run.trace_id, run.parent_span_id) == (cycle.trace_id, cycle.span_id)
