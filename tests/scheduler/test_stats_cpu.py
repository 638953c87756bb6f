"""RunStats' CPU per pod: this process's CPU time from the first pop to the last bind of
a scheduled pod, divided by the pods scheduled (a figure that moves less than throughput
on a shared host)."""

from __future__ import annotations

from cluster_sched.scheduler.stats import RunStats


def test_cpu_per_pod_spans_first_pop_to_last_bind_of_a_scheduled_pod() -> None:
    cpu = [10.0]  # the fake CPU clock's reading, moved by the test
    stats = RunStats(cpu_clock=lambda: cpu[0], cpu_read_interval=0.0)
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


def test_binds_read_the_cpu_clock_at_most_once_per_interval() -> None:
    """The CPU clock is read on a bind only once ``cpu_read_interval`` of wall time has
    passed since the last reading: the last bind's figure misses at most one interval."""
    cpu, wall, reads = [10.0], [0.0], []

    def cpu_clock() -> float:
        reads.append(wall[0])
        return cpu[0]

    stats = RunStats(cpu_clock=cpu_clock, wall_clock=lambda: wall[0], cpu_read_interval=0.001)
    stats.on_pop("default/a", 1.0)
    stats.on_pop("default/b", 1.0)
    stats.on_pop("default/c", 1.0)
    cpu[0], wall[0] = 10.2, 5.0
    stats.on_bound("default/a", "n1", 1.1)  # first bind: read
    cpu[0], wall[0] = 10.4, 5.0005
    stats.on_bound("default/b", "n1", 1.2)  # 0.5 ms later: not read
    cpu[0], wall[0] = 10.6, 5.0015
    stats.on_bound("default/c", "n1", 1.3)  # 1.5 ms after the last reading: read
    assert reads == [0.0, 5.0, 5.0015]
    assert stats.summary(0)["process_cpu_us_per_pod"] == 200_000.0  # 0.6 s / 3 pods
