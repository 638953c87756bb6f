"""``--record-results SELECTOR``: scheduling results written onto the pods, as
kube-scheduler-simulator does, so ``kubectl get pod -o yaml`` explains a decision made
during a run.

For a pod whose labels match the selector, the coordinator runs ``explain`` (a dry run
of the same attempt: the same cache state, node window start and a copy of the
scheduler's RNG, so the same nodes are evaluated and the same host drawn) just before
the pod's own attempt, and keeps the document. When the attempt ends without a host,
or when the pod's binding cycle ends, the result annotations (``simulator``) are merged
into the stored pod with a compare-and-set write (never undoing a bind), fenced by the
coordinator's token like its other writes, and appended to the result history.

Nothing of this exists in a run without the flag: ``install`` swaps the coordinator's
``SchedulingCycle`` for a ``RecordingCycle`` only when asked. With it, every pod takes
the ordinary cycle (the whole-batch kernel is off; its decisions are the same), and
only matching pods pay for the dry run and the write. A failure to explain or to write
is logged and never fails the pod's scheduling.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cluster_sched.api.objects import Pod
from cluster_sched.clock import SystemClock
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import ClusterSchedError, UsageError
from cluster_sched.kubeapi.errors import ApiError
from cluster_sched.kubeapi.selectors import LabelRequirement, parse_label_selector
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.binding import BindingOutcome
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.scheduler.explain.simulator import (
    BIND,
    PREBIND,
    SELECTED_NODE,
    attempt_annotations,
    binding_results,
    with_history,
)
from cluster_sched.scheduler.schedule_one import SchedulingCycle
from cluster_sched.store.boundary import redis_boundary
from cluster_sched.store.objects import ObjectWriter
from cluster_sched.store.scripts import Scripts
from cluster_sched.store.store import DEFAULT_EVENTS_MAXLEN, Store

if TYPE_CHECKING:
    from cluster_sched.scheduler.coordinator import Coordinator

__all__ = ["RecordingCycle", "ResultRecorder", "install", "parse_selector"]

log = logging.getLogger(__name__)


def parse_selector(text: str) -> tuple[LabelRequirement, ...]:
    """``--record-results``'s label selector (kubectl ``-l`` syntax; "" selects every
    pod); UsageError naming the flag when it does not parse."""
    try:
        return tuple(parse_label_selector(text))
    except ApiError as err:
        raise UsageError(f"--record-results {text!r}: {err.message}") from None


class ResultRecorder:
    """The dry runs of matching pods' attempts and the writes of their annotations."""

    def __init__(
        self,
        store: Store,
        config: SchedulerConfiguration,
        selector: str,
        seed: int | None = None,
    ) -> None:
        self.selector = parse_selector(selector)
        self.config = config
        self.seed = seed
        self._writer = ObjectWriter(
            store.client,
            store.keys,
            Scripts.register(store.client, store.fence),
            SystemClock(),
            DEFAULT_EVENTS_MAXLEN,
        )
        #: pod key -> (uid, the attempt's annotations) between the dry run and the write
        self.pending: dict[str, tuple[str, dict[str, str]]] = {}
        #: pods whose annotations were written (one per attempt)
        self.written = 0
        #: attempts whose dry run chose another node than the attempt itself (the
        #: annotations then name the attempt's; the per-node results stay the dry run's)
        self.disagreed = 0
        self._dry_choice: dict[str, str] = {}

    def wants(self, pod: Pod) -> bool:
        labels = pod.meta.labels
        return all(r.matches(labels) for r in self.selector)

    def dry_run(self, cycle: SchedulingCycle, pod: Pod) -> None:
        """Explain ``pod``'s coming attempt on the state it will see."""
        fwk = cycle.frameworks[pod.scheduler_name]
        rng = random.Random()
        rng.setstate(cycle.algorithm.rng.getstate())
        try:
            doc = explain(
                cycle.cache,
                pod,
                self.config,
                self.seed,
                fwk.handle.features,
                table=cycle.source.table,
                start_index=cycle.algorithm.next_start_node_index,
                rng=rng,
            ).json
        except Exception:  # shown, never raised: the pod's own attempt still runs
            log.exception("--record-results: could not explain %s", pod.key)
            return
        self.pending[pod.key] = (pod.uid, attempt_annotations(doc, ""))
        self._dry_choice[pod.key] = doc.get("selectedNode") or ""

    def selected(self, key: str, node: str) -> None:
        """The attempt chose ``node``: the write waits for the binding cycle."""
        entry = self.pending.get(key)
        if entry is not None:
            entry[1][SELECTED_NODE] = node
            if self._dry_choice.get(key, node) != node:
                self.disagreed += 1
                log.warning(
                    "--record-results: the dry run of %s chose %s, its attempt %s",
                    key,
                    self._dry_choice[key],
                    node,
                )

    def finish(self, key: str, binding: tuple[dict[str, str], dict[str, str]] | None) -> None:
        """Write the attempt's annotations (with the binding cycle's results, if any)."""
        entry = self.pending.pop(key, None)
        self._dry_choice.pop(key, None)
        if entry is None:
            return
        uid, attempt = entry
        if binding is not None:
            prebind, bind = binding
            attempt[PREBIND] = _json(prebind)
            attempt[BIND] = _json(bind)

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            new = dict(old)
            meta = dict(old.get("metadata") or {})
            held = meta.get("annotations")
            meta["annotations"] = with_history(held if isinstance(held, Mapping) else {}, attempt)
            new["metadata"] = meta
            return new

        try:
            with redis_boundary("record results"):
                done = self._writer.guaranteed_update("Pod", key, mutate, uid or None)
        except ClusterSchedError as exc:
            log.warning("--record-results: could not write the results of %s: %s", key, exc)
            return
        if done is not None:
            self.written += 1


def _json(value: Mapping[str, str]) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


class RecordingCycle(SchedulingCycle):
    """The scheduling cycle with ``recorder``'s dry run before a matching pod's attempt
    and its write after the attempt (no host) or the binding cycle."""

    recorder: ResultRecorder

    @classmethod
    def wrapping(cls, cycle: SchedulingCycle, recorder: ResultRecorder) -> RecordingCycle:
        """``cycle``'s parts and state, recording (``install`` swaps it in)."""
        new = cls.__new__(cls)
        new.__dict__.update(cycle.__dict__)
        new.recorder = recorder
        return new

    def _attempted(self, pod: Pod | None) -> bool:
        """Whether ``_schedule_one`` will run an attempt for ``pod`` (its skip rules)."""
        return (
            pod is not None
            and pod.meta.deletion_timestamp is None
            and not pod.node_name
            and pod.scheduler_name in self.frameworks
            and not self._is_assumed(pod)
        )

    def _schedule_one(self, info: QueuedPodInfo, cycle: int) -> None:
        pod = self.pods.get(info.pod_key)
        recorded = pod is not None and self._attempted(pod) and self.recorder.wants(pod)
        if recorded:
            self.recorder.dry_run(self, pod)  # type: ignore[arg-type]
        super()._schedule_one(info, cycle)
        if not recorded or info.pod_key not in self.recorder.pending:
            return
        assumed = self.cache.get_pod(info.pod_key) if self.cache.is_assumed(info.pod_key) else None
        if assumed is not None:
            self.recorder.selected(info.pod_key, assumed.node_name)
        else:
            self.recorder.finish(info.pod_key, None)  # no host: unschedulable or an error

    def finish_binding(self, outcome: BindingOutcome) -> None:
        super().finish_binding(outcome)
        key = outcome.job.pod.key
        if key not in self.recorder.pending:
            return
        fwk = self.frameworks[outcome.job.profile]
        status = outcome.status
        failed = "" if status.is_success else (status.plugin or "Bind")
        self.recorder.finish(
            key,
            binding_results(
                [pl.name for pl in fwk.pre_bind],
                [pl.name for pl in fwk.bind],
                failed,
                status.message(),
            ),
        )


def install(coord: Coordinator, selector: str, seed: int | None = None) -> ResultRecorder:
    """Record results for pods matching ``selector`` in ``coord``'s cycles."""
    recorder = ResultRecorder(coord.store, coord.config, selector, seed)
    coord.cycle = RecordingCycle.wrapping(coord.cycle, recorder)
    coord.whole_batch = False  # each matching pod needs its own attempt to explain
    return recorder
