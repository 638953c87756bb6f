"""What one span costs the scheduling cycle: tracing disabled vs enabled.

Run: ``python benchmarks/tracing_overhead.py [--spans N]``

The disabled path is what every cycle pays when no OTLP endpoint is configured; it must
stay in the tens of nanoseconds (a method call plus a ``with`` on a shared object). The
enabled path exports to an in-process OTLP receiver (``cluster_sched.testing``) so the
number includes span creation, attributes, the batch queue and background export, but no
network beyond loopback.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from cluster_sched.telemetry import spans as S
from cluster_sched.telemetry.tracing import Tracing, setup_tracing
from cluster_sched.testing.otlp_receiver import OtlpReceiver

DEFAULT_SPANS = 200_000
"""Spans per measurement in disabled mode."""
ENABLED_SPANS = 2_000
"""Spans per measurement in enabled mode: below the batch queue (2048), so none is dropped."""


def _bare_loop(n: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(n):
        pass
    return (time.perf_counter_ns() - start) / n


def _span_loop(tracing: Tracing, n: int, with_attributes: bool) -> float:
    span = tracing.span
    name = S.phase_span("Filter")
    start = time.perf_counter_ns()
    if with_attributes:
        for i in range(n):
            # The idiom the cycle uses: build attributes only when tracing is on.
            attrs = {S.ATTR_PHASE: name, S.ATTR_CYCLE: i} if tracing.enabled else None
            with span(name, attrs):
                pass
    else:
        for _ in range(n):
            with span(name):
                pass
    return (time.perf_counter_ns() - start) / n


def _best_of(repeats: int, measure: Callable[[], float]) -> float:
    return min(measure() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=DEFAULT_SPANS)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, repeats = args.spans, args.repeats

    bare = _best_of(repeats, lambda: _bare_loop(n))
    disabled = setup_tracing("")
    off = _best_of(repeats, lambda: _span_loop(disabled, n, False))
    off_attrs = _best_of(repeats, lambda: _span_loop(disabled, n, True))

    with OtlpReceiver() as receiver:
        enabled = setup_tracing(receiver.endpoint, "tracing-overhead-benchmark")
        try:
            m = min(n, ENABLED_SPANS)

            def measure(with_attributes: bool) -> float:
                cost = _span_loop(enabled, m, with_attributes)
                enabled.force_flush()  # empty the queue so the next round drops nothing
                return cost

            on = _best_of(repeats, lambda: measure(False))
            on_attrs = _best_of(repeats, lambda: measure(True))
        finally:
            enabled.shutdown()

    print(f"{'loop overhead':<32}{bare:>10.1f} ns/iteration")
    print(f"{'disabled span':<32}{off - bare:>10.1f} ns/span")
    print(f"{'disabled span + attrs idiom':<32}{off_attrs - bare:>10.1f} ns/span")
    print(f"{'enabled span (exported)':<32}{on - bare:>10.1f} ns/span")
    print(f"{'enabled span + 2 attributes':<32}{on_attrs - bare:>10.1f} ns/span")
    print(f"{'enabled / disabled':<32}{(on - bare) / max(off - bare, 1e-9):>10.0f} x")


if __name__ == "__main__":
    main()
