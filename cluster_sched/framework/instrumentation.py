"""Extension points timed into spans and the extension-point duration metric.

``instrumented`` wraps a ``Framework.run_*`` method; the Framework carries the tracing,
metrics and profile name it reports with (``Framework.instrument``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cluster_sched.framework.status import Status
from cluster_sched.telemetry.spans import ATTR_PHASE, ATTR_PROFILE, ATTR_STATUS, phase_span


def _status_label(result: Any) -> str:
    """The Status code label of an extension point's result, for metrics and spans."""
    if isinstance(result, Status):
        return result.code.label
    if isinstance(result, tuple):
        for part in result:
            if isinstance(part, Status):
                return part.code.label
    passed = getattr(result, "passed", None)  # a FilterOutcome: bool[k] per node
    if passed is not None:
        return "Success" if passed.all() else "Unschedulable"
    return "Success"


def instrumented(extension_point: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Time an extension point into a span and the extension-point duration metric.

    Costs one attribute check when neither tracing nor metrics is on.
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        span_name = phase_span(extension_point)

        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.instrumented:
                return fn(self, *args, **kwargs)
            start = time.perf_counter()
            with self.tracing.span(
                span_name, {ATTR_PROFILE: self.profile_name, ATTR_PHASE: extension_point}
            ) as span:
                try:
                    result = fn(self, *args, **kwargs)
                except Exception:
                    self.metrics.observe_extension_point(
                        extension_point, "Error", self.profile_name, time.perf_counter() - start
                    )
                    raise
                label = _status_label(result)
                if self.tracing.enabled:
                    span.set_attribute(ATTR_STATUS, label)
                self.metrics.observe_extension_point(
                    extension_point, label, self.profile_name, time.perf_counter() - start
                )
                return result

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        return run

    return wrap
