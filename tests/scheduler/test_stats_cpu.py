"""RunStats' CPU per pod: this process's CPU time from the first pop to the last bind of
a scheduled pod, divided by the pods scheduled (a figure that moves less than throughput
on a shared host)."""

from __future__ import annotations

from cluster_sched.scheduler.stats import RunStats


def test_cpu_per_pod_spans_first_pop_to_last_bind_of_a_scheduled_pod() -> None:
    cpu = [10.0]  # the fake CPU clock's reading, moved by the test
    stats = RunStats(cpu_clock=lambda: cpu[0])
    stats.on_pop("default/a", 1.0)
    cpu[0] = 10.5
    stats.on_pop("default/b", 1.1)  # not the first pop: no reading
    stats.on_bound("default/a", "n1", 1.2)
    cpu[0] = 10.8
    stats.on_bound("default/b", "n2", 1.3)
    cpu[0] = 12.0
    stats.on_bound("default/pre-bound", "n3", 1.4)  # never popped: not ours, no reading
    assert stats.summary(0)["process_cpu_us_per_pod"] == 400_000.0  # 0.8 s / 2 pods


def test_nothing_scheduled_gives_zero() -> None:
    stats = RunStats(cpu_clock=lambda: 10.0)
    stats.on_pop("default/a", 1.0)
    assert stats.summary(1)["process_cpu_us_per_pod"] == 0.0
