"""Why pods ended the run unbound: their last FailedScheduling message, read back.

The message is upstream's FitError text (``framework.diagnosis.fit_error_message``)::

    0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {a: b}.
    preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.

a sorted ``count reason`` histogram, or PreFilter's one message instead of it, then
PostFilter's (preemption) message. ``fit_error_reasons`` inverts the first part; the
message is kept whole beside it in the summary.
"""

from __future__ import annotations

import re
from collections import Counter

from cluster_sched.report.record import RunRecord

__all__ = ["NOT_ATTEMPTED", "fit_error_reasons", "unschedulable_pods"]

#: The reason of a pending pod no scheduling attempt failed for (never popped: another
#: scheduler's pod, gated, or still queued when the run stopped).
NOT_ATTEMPTED = "no failed scheduling attempt recorded"

_HEAD = re.compile(r"0/(\d+) nodes are available: ", re.S)
_ITEM = re.compile(r"(\d+) (.+)", re.S)
#: items of the histogram are joined by ", " and each starts with its node count
_SEPARATOR = re.compile(r", (?=\d+ )")


def fit_error_reasons(message: str) -> dict[str, int]:
    """reason -> number of nodes that gave it. A PreFilter rejection (no histogram)
    counts for every node; a message in another format is one reason for zero nodes."""
    m = _HEAD.match(message)
    if m is None:
        return {message.strip().rstrip("."): 0}
    nodes = int(m.group(1))
    body = message[m.end() :]
    # the histogram ends at its first ". " (PostFilter's message follows) or at the end
    head = body.split(". ", 1)[0].strip().rstrip(".")
    reasons: dict[str, int] = {}
    for item in _SEPARATOR.split(head):
        parsed = _ITEM.fullmatch(item)
        if parsed is None:
            reasons[item] = reasons.get(item, 0) + nodes
        else:
            reason = parsed.group(2)
            reasons[reason] = reasons.get(reason, 0) + int(parsed.group(1))
    return reasons


def unschedulable_pods(record: RunRecord) -> tuple[list[dict[str, object]], dict[str, int]]:
    """Every pod unbound at the end (its group, last message and parsed reasons), and how
    many of them each reason was given for, most frequent first. Pods still held by
    their schedulingGates are not failures: the run summary lists them as gated."""
    group_of = {key: name for name, keys in record.groups.items() for key in keys}
    rows: list[dict[str, object]] = []
    totals: Counter[str] = Counter()
    for pod in record.pending:
        message = record.stats.last_failure.get(pod.key, "")
        if not message and pod.scheduling_gates:
            continue  # gated, never attempted: the summary's ``gated`` list, not a failure
        reasons = fit_error_reasons(message) if message else {NOT_ATTEMPTED: 0}
        totals.update(reasons.keys())
        rows.append(
            {
                "pod": pod.key,
                "group": group_of.get(pod.key, ""),
                "message": message,
                "reasons": reasons,
            }
        )
    ranked = dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))
    return rows, ranked
