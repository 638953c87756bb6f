"""Span names and attribute keys: the one vocabulary every traced part of cluster-sched uses.

Names follow upstream's tracing proposal, KEP-5927 "Distributed Tracing in Kube-Scheduler"
(kubernetes/enhancements, keps/sig-scheduling/5927-distributed-tracing-in-kube-scheduler,
provisional, 2026). Its trace structure is::

    SchedulePod (root)
     ├── schedulingCycle
     │    ├── preFilter / filter / postFilter / preScore / score / reserve / permit
     │    │    └── "plugin: <PluginName>"      one per plugin run
     └── bindingCycle
          └── preBind / bind / postBind

and its attributes are ``k8s.pod.name``, ``k8s.pod.namespace``, ``k8s.pod.uid`` on the root,
``scheduler.phase`` and ``scheduler.profile`` on phase spans, ``scheduler.plugin.name`` and
``scheduler.plugin.extension_point`` on plugin spans, ``scheduler.result`` and
``scheduler.selected_node``, and ``scheduler.queue_wait_ms`` on the root. (One revision of
the KEP spelled the scheduler-owned keys ``k8s.scheduler.*``; the stored latest one uses
``scheduler.*``, which is what we use. Each key is one constant here, so a rename is one line.)

Where cluster-sched differs from the KEP, and why:

- **bindingCycle is a root span linked to its cycle, not a child of SchedulePod.** Our
  binding cycle runs as a Ray task that the coordinator never waits for; SchedulePod has
  usually ended before binding starts. A span link says "caused by" without implying the
  parent waited, which is the KEP's own argument for links across asynchronous hops.
  The link points at the ``schedulingCycle`` span; ``k8s.pod.uid`` joins the two as well.
- **Spans the KEP has no name for**, named in its lowerCamel style: ``queuePop`` (the
  atomic Redis move activeQ → in-flight), ``normalizeScore``, ``selectHost``, ``assume``,
  ``waitOnPermit``, ``unreserve``, and ``shardCall`` — the coordinator's fan-out of
  Filter/Score to one node shard (a Ray actor) — with ``shardRun`` for the shard's own side
  of that call (child of ``shardCall`` through the carried trace context).
  ``shardBatch`` is a batch of pods sent to every shard at once (the reduced protocol,
  ``prefetch``): a root span whose ``shardCall`` children are its calls, one per shard and
  chunk; each pod's span that read its answer links to it.
- **Attributes the KEP has no name for**, in its ``scheduler.*`` namespace:
  ``scheduler.cycle`` (scheduling cycle counter), ``scheduler.attempts``,
  ``scheduler.shard.id``, ``scheduler.shard.nodes``, ``scheduler.feasible_nodes``,
  ``scheduler.status`` (framework Status code name). The node a span is about uses the
  OpenTelemetry semantic-convention key ``k8s.node.name``, as pod keys do.

Extension-point names arrive in two spellings: metrics label values are upstream's
CamelCase ("PreFilter"), span names are the KEP's lowerCamel ("preFilter"). ``phase_span``
maps one to the other so callers hold only the CamelCase constant.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ASSUME",
    "ATTR_ATTEMPTS",
    "ATTR_BATCH_CHUNKS",
    "ATTR_BATCH_PODS",
    "ATTR_BYTES_RECEIVED",
    "ATTR_BYTES_SENT",
    "ATTR_CHUNK",
    "ATTR_COMPILED",
    "ATTR_CYCLE",
    "ATTR_EXTENSION_POINT",
    "ATTR_FEASIBLE_NODES",
    "ATTR_NODE_NAME",
    "ATTR_PHASE",
    "ATTR_PLUGIN_NAME",
    "ATTR_POD_NAME",
    "ATTR_POD_NAMESPACE",
    "ATTR_POD_UID",
    "ATTR_PROFILE",
    "ATTR_QUEUE_WAIT_MS",
    "ATTR_RESULT",
    "ATTR_SELECTED_NODE",
    "ATTR_SHARD_COUNT",
    "ATTR_SHARD_ID",
    "ATTR_SHARD_NODES",
    "ATTR_STATUS",
    "BINDING_CYCLE",
    "EXTENSION_POINT_SPANS",
    "QUEUE_POP",
    "RESULT_ERROR",
    "RESULT_SCHEDULED",
    "RESULT_SUCCESS",
    "RESULT_UNSCHEDULABLE",
    "SCHEDULE_POD",
    "SCHEDULING_CYCLE",
    "SELECT_HOST",
    "SHARD_BATCH",
    "SHARD_CALL",
    "SHARD_RUN",
    "TRACER_NAME",
    "WAIT_ON_PERMIT",
    "phase_span",
    "plugin_span",
]

TRACER_NAME: Final = "cluster_sched"
"""Instrumentation scope name of every span we emit."""

# --- span names -------------------------------------------------------------------------

SCHEDULE_POD: Final = "SchedulePod"
"""Root of one scheduling attempt; starts when the pod is popped (KEP-5927)."""
SCHEDULING_CYCLE: Final = "schedulingCycle"
"""The serial cycle from PreFilter to Permit; child of SchedulePod (KEP-5927)."""
BINDING_CYCLE: Final = "bindingCycle"
"""Root span of one binding task, linked to its schedulingCycle span."""
QUEUE_POP: Final = "queuePop"
"""The atomic activeQ → in-flight move in Redis; child of SchedulePod."""
SELECT_HOST: Final = "selectHost"
"""Reservoir selection among the best-scored nodes."""
ASSUME: Final = "assume"
"""Assuming the pod in the cache and in its node's shard columns."""
WAIT_ON_PERMIT: Final = "waitOnPermit"
"""Waiting for Permit plugins that answered Wait; first phase of bindingCycle."""
SHARD_CALL: Final = "shardCall"
"""Coordinator side of one call to a node shard (Filter and/or Score over its nodes)."""
SHARD_BATCH: Final = "shardBatch"
"""One batch of pods sent to every shard at once (the reduced protocol, ``prefetch``);
its ``shardCall`` children are the calls, one per shard and chunk."""
SHARD_RUN: Final = "shardRun"
"""The shard's own side of a call, continued from the carried context of shardCall."""

EXTENSION_POINT_SPANS: Final[dict[str, str]] = {
    "PreEnqueue": "preEnqueue",
    "PreFilter": "preFilter",
    "Filter": "filter",
    "PostFilter": "postFilter",
    "PreScore": "preScore",
    "Score": "score",
    "NormalizeScore": "normalizeScore",
    "ScoreExtensionNormalize": "normalizeScore",
    "Reserve": "reserve",
    "Unreserve": "unreserve",
    "Permit": "permit",
    "WaitOnPermit": WAIT_ON_PERMIT,
    "PreBind": "preBind",
    "Bind": "bind",
    "PostBind": "postBind",
}
"""Upstream extension-point name (metrics label spelling) → span name (KEP spelling)."""


def phase_span(extension_point: str) -> str:
    """Span name for an extension point given in upstream's CamelCase ("PreFilter").

    Unknown names pass through unchanged, so an out-of-tree extension point still gets a
    span rather than an error in the hot path.
    """
    return EXTENSION_POINT_SPANS.get(extension_point, extension_point)


def plugin_span(plugin_name: str) -> str:
    """Span name for one plugin's run at an extension point, KEP-5927 style."""
    return f"plugin: {plugin_name}"


# --- attribute keys -----------------------------------------------------------------------

ATTR_POD_NAME: Final = "k8s.pod.name"
ATTR_POD_NAMESPACE: Final = "k8s.pod.namespace"
ATTR_POD_UID: Final = "k8s.pod.uid"
ATTR_NODE_NAME: Final = "k8s.node.name"
"""The node a span is about (a Filter rejection, a bind target)."""
ATTR_PROFILE: Final = "scheduler.profile"
"""The profile's schedulerName."""
ATTR_PHASE: Final = "scheduler.phase"
"""The phase span's own name, so backends can group without parsing span names."""
ATTR_PLUGIN_NAME: Final = "scheduler.plugin.name"
ATTR_EXTENSION_POINT: Final = "scheduler.plugin.extension_point"
ATTR_RESULT: Final = "scheduler.result"
"""Outcome of a cycle or phase: one of the RESULT_* values."""
ATTR_STATUS: Final = "scheduler.status"
"""Framework Status code name of a phase or plugin (Success, Unschedulable, ...)."""
ATTR_SELECTED_NODE: Final = "scheduler.selected_node"
ATTR_QUEUE_WAIT_MS: Final = "scheduler.queue_wait_ms"
"""How long the pod waited in activeQ before this attempt (KEP-5927), milliseconds."""
ATTR_CYCLE: Final = "scheduler.cycle"
"""The scheduling cycle counter bumped by the queue pop."""
ATTR_ATTEMPTS: Final = "scheduler.attempts"
"""How many times this pod has been popped, this attempt included."""
ATTR_SHARD_ID: Final = "scheduler.shard.id"
ATTR_SHARD_NODES: Final = "scheduler.shard.nodes"
"""Number of nodes the shard owns."""
ATTR_SHARD_COUNT: Final = "scheduler.shard.count"
"""Number of shards a batch was sent to."""
ATTR_BATCH_PODS: Final = "scheduler.batch.pods"
"""Number of pods whose questions a shard batch carries."""
ATTR_BATCH_CHUNKS: Final = "scheduler.batch.chunks"
"""Number of chunks (payloads) a shard batch was sent in."""
ATTR_CHUNK: Final = "scheduler.batch.chunk"
"""Which chunk of its batch a shard call carries."""
ATTR_BYTES_SENT: Final = "scheduler.bytes_sent"
ATTR_BYTES_RECEIVED: Final = "scheduler.bytes_received"
"""Bytes of a shard call's request and reply, as the protocol's counters count them."""
ATTR_COMPILED: Final = "scheduler.compiled"
"""True on a phase span the compiled path answered: one kernel call ran every plugin of
the phase (and NormalizeScore inside Score), so the span times the call, not a plugin."""
ATTR_FEASIBLE_NODES: Final = "scheduler.feasible_nodes"
"""Number of nodes that passed Filter (in a shard, or overall on the filter span)."""

# --- values of ATTR_RESULT ----------------------------------------------------------------

RESULT_SCHEDULED: Final = "scheduled"
"""A cycle that assumed the pod on a node (same word as the metrics' result label)."""
RESULT_UNSCHEDULABLE: Final = "unschedulable"
RESULT_ERROR: Final = "error"
RESULT_SUCCESS: Final = "Success"
"""A phase or binding that succeeded (KEP-5927 spells phase results as Status codes)."""
