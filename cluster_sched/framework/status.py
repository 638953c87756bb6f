"""Status codes and Status, documented by what the scheduler does with each code."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Code(IntEnum):
    """Plugin result codes, with upstream's numeric values.

    - SUCCESS: the plugin ran and the pod may proceed.
    - ERROR: an internal error; the pod goes back to the queue with backoff.
    - UNSCHEDULABLE: the node does not fit now; preemption may help; the pod waits in
      unschedulable pods until an event its rejecting plugin registered for.
    - UNSCHEDULABLE_AND_UNRESOLVABLE: the node can never fit this pod; preemption skips it.
    - WAIT: Permit only; the pod waits in the waiting-pods map until allowed or rejected.
    - SKIP: PreFilter/PreScore only; the plugin's Filter/Score is skipped for this pod.
    - PENDING: the pod waits for something outside the scheduler (e.g. an external gate).
    """

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """Upstream's spelling: ``UnschedulableAndUnresolvable``."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_label(cls, label: str) -> Code:
        for code in cls:
            if code.label == label:
                return code
        raise ValueError(f"unknown status code {label!r}")


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's verdict. ``plugin`` names the plugin that failed (set by the runtime)."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    @property
    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod cannot go on."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)


SUCCESS = Status()


def as_status(result: Status | None) -> Status:
    """A plugin's result as a Status: None, upstream's nil ``*Status``, is Success."""
    return SUCCESS if result is None else result


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


def error(*reasons: str) -> Status:
    return Status(Code.ERROR, reasons)


#: Skip has no reasons: one frozen instance serves every plugin (hot on the commit path).
SKIP = Status(Code.SKIP)


def skip() -> Status:
    return SKIP
