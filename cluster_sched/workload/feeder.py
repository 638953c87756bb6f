"""The workload's pod creator as a client process of its own (issue 23).

Upstream's scheduler_perf creates pods through a client of the API server while the
scheduler runs in its own process; the scheduler pays only for what its watch brings.
``run`` and ``perf`` used to write the pods from the coordinator's loop thread between
turns, so encoding manifests and the store's apply calls were charged to the process
being measured. With ``--feeder process`` a child process (``python -m
cluster_sched.workload.feeder``) opens its own store on the run's Redis and writes each
group through ``Store.apply_many``, the path ``cluster-sched apply`` or the kube API
takes; the coordinator schedules what arrives through its watch.

The pipe carries msgpack only (never pickle: templates and manifests are user input).
Parent → child: one map per group, ``{"template", "count", "labels", "claim_statuses"}``
(the child expands the template itself: the parent encodes one template, not ten
thousand pods), ``{"nodes": [...]}`` (a workload's node manifests as ``GeneratedDocs.wire``:
the child makes them) or ``{"docs": [...]}`` (traces, snapshots, perf's rendered objects),
with the chunk size and the ``rate`` (pods per second, 0: as fast as the store takes
them). Child → parent: ``{"done": n, "rv": r}`` once the group's last write returned (r:
the highest resourceVersion written, so the parent can wait until its watch has seen
it: the barrier a group's wait needs), or ``{"error": class, ...}`` with what the
parent re-raises, so a bad pod gives the same one-line message and exit code as
the inline feeder's. A child that dies closes its pipe: the parent raises at once
(``FeederFailed``) instead of waiting for pods that will never come.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any

import msgpack

from cluster_sched import errors
from cluster_sched.errors import ClusterSchedError, InvalidObjectError
from cluster_sched.stdio import stdout_reader_gone
from cluster_sched.store.codec import pack
from cluster_sched.store.store import Store
from cluster_sched.workload.spec import GeneratedDocs, PodGroup

#: ``--feeder`` choices: in the loop thread between turns, or a client process.
FEEDERS = ("inline", "process")
#: ``run`` and ``perf``: the client process, as upstream's scheduler_perf creates pods
DEFAULT_FEEDER = "process"
#: most objects per store write
APPLY_BATCH = 2000
#: a paced group is written at most once per this many seconds, the pods due by then
#: (a write per pod at 1,000 pods/s cost the child and Redis a round trip each, and on a
#: loaded machine the starved child then caught up in bursts: p99 380 ms, not 180)
RATE_TICK = 0.005
#: how long ``close`` waits for the child to exit before killing it (seconds)
CLOSE_WAIT = 5.0


class FeederFailed(ClusterSchedError):
    """The pod feeder process died or could not start: the run cannot get its pods."""


def group_message(
    *,
    template: Mapping[str, Any] | None = None,
    count: int = 0,
    labels: Mapping[str, Any] | None = None,
    claim_statuses: list[list[dict[str, Any]]] | None = None,
    docs: Iterable[Mapping[str, Any]] | None = None,
    chunk: int = APPLY_BATCH,
    rate: float = 0.0,
    take: int | None = None,
) -> dict[str, Any]:
    """A new group for the child: a template to expand, or the documents themselves;
    it writes ``take`` of them now (None: all, paced at ``rate`` if set), ``chunk`` per
    store call."""
    msg: dict[str, Any] = {"chunk": max(1, chunk), "rate": float(rate)}
    if isinstance(docs, GeneratedDocs):  # the child makes them (GeneratedDocs.wire)
        msg["nodes"] = docs.wire()
    elif docs is not None:
        msg["docs"] = list(docs)
    else:
        msg.update(template=template, count=count, labels=dict(labels or {}), claims=claim_statuses)
    if take is not None:
        msg["take"] = take
    return msg


def take_message(take: int, chunk: int = APPLY_BATCH) -> dict[str, Any]:
    """Write the next ``take`` objects of the group in hand."""
    return {"take": take, "chunk": max(1, min(chunk, APPLY_BATCH)), "rate": 0.0}


class FeederProcess:
    """The parent's end: starts the child, sends groups, reads how far it got.

    ``submit`` returns at once; ``poll`` never blocks (the loop thread calls it every
    turn) and returns the done reply when the group is written."""

    def __init__(self, redis_url: str, prefix: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cluster_sched.workload.feeder", redis_url, prefix],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        os.set_blocking(self._fd, False)
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        self._what = "starting"
        #: the CPU seconds the child had used at its last reply (the client's cost)
        self.cpu_seconds = 0.0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def submit(self, message: Mapping[str, Any], what: str) -> None:
        """Send one group (``what`` names it in errors)."""
        self._what = what
        try:
            self._in.write(pack(message))
            self._in.flush()
        except (BrokenPipeError, OSError):
            self._died()

    def poll(self) -> dict[str, Any] | None:
        """The child's reply to the group in hand if it came; raises its error, or
        FeederFailed if the child is gone."""
        for reply in self._unpacker:
            return self._answer(reply)
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return None
        if not data:
            self._died()
        self._unpacker.feed(data)
        for reply in self._unpacker:
            return self._answer(reply)
        return None

    def wait(self, timeout: float | None = None) -> dict[str, Any]:
        """Block until the group in hand is written (skipWaitForCompletion, tests)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            reply = self.poll()
            if reply is not None:
                return reply
            if end is not None and time.monotonic() > end:
                raise FeederFailed(f"the pod feeder did not finish {self._what} in {timeout:g} s")
            time.sleep(0.001)

    def _answer(self, reply: dict[str, Any]) -> dict[str, Any]:
        if "error" in reply:
            raise _rebuilt(reply)
        self.cpu_seconds = float(reply.get("cpu", self.cpu_seconds))
        return reply

    def _died(self) -> None:
        try:
            rc = self.proc.wait(timeout=CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        raise FeederFailed(
            f"the pod feeder process (pid {self.proc.pid}) exited with code {rc} while "
            f"{self._what}: the workload was not all written"
        )

    def close(self) -> None:
        """End the child (stdin closed: it exits) and record its CPU time."""
        if self.proc.returncode is None:
            with contextlib.suppress(OSError):
                self._in.close()
            try:
                self.proc.wait(timeout=CLOSE_WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class ProcessFeed:
    """``drive``'s feed for objects the feeder process writes: True until every message
    is written and the watch has seen the last write (``seen_rv()``: the informer's
    resourceVersion), so a group's wait, a barrier or a measured window starts only
    once the scheduler holds all the group's pods, as with the inline feeder.

    A message is sent every ``every`` calls (loop turns), with at most ``window``
    unanswered; ``lead``: and at most that many written or being written that the
    watch has not yet seen. That is the inline feeder's arrival pacing (a chunk every
    FEED_TURNS turns, in step with the batches scheduled), without its writing.
    Unpaced, the child wrote a 10,000-pod burst in a second or two and the loop then
    read it 2,000 watch entries a turn: a second with no bind, three times
    (scheduling-basic.yaml); paced by turns alone, turns that only wait on the watch
    are short and the burst still came at once; one chunk at a time, on a loaded
    machine the loop waited for the child to be given a core, queue empty (gaps of
    0.9 s). Two chunks ahead keep the queue fed and the watch reads small."""

    def __init__(
        self,
        proc: FeederProcess,
        messages: Iterable[dict[str, Any]],
        seen_rv: Callable[[], int],
        what: str,
        *,
        every: int = 1,
        window: int | None = None,
        lead: int | None = None,
    ) -> None:
        self.proc, self.seen_rv, self.what = proc, seen_rv, what
        self.every, self.window, self.lead = max(1, every), window, lead
        #: resourceVersions of the answered messages' last writes, oldest first
        self.unseen: deque[int] = deque()
        self.messages = iter(messages)
        self.turns = self.every - 1  # since the last message: the first goes at once
        self.outstanding = 0
        self.exhausted = False
        self.created = 0
        self.rv = 0

    def feed(self) -> bool:
        """Send the message now due; True until the watch has seen every write."""
        while self.outstanding and (reply := self.proc.poll()) is not None:
            self.outstanding -= 1
            self.created += int(reply["done"])
            self.rv = max(self.rv, int(reply["rv"]))
            self.unseen.append(int(reply["rv"]))
        self.turns += 1
        if not self.exhausted and self.turns >= self.every and self._may_send():
            msg = next(self.messages, None)
            if msg is None:
                self.exhausted = True
            else:
                self.proc.submit(msg, self.what)
                self.outstanding += 1
                self.turns = 0
        if self.outstanding or not self.exhausted:
            return True
        return self.seen_rv() < self.rv

    def _may_send(self) -> bool:
        if self.window is not None and self.outstanding >= self.window:
            return False
        if self.lead is None:
            return True
        if self.unseen:
            seen = self.seen_rv()
            while self.unseen and self.unseen[0] <= seen:
                self.unseen.popleft()
        return self.outstanding + len(self.unseen) < self.lead

    def written(self) -> bool:
        """Every message sent and answered (the watch may not have seen them yet)."""
        return self.exhausted and not self.outstanding


class InlineFeeder:
    """Creates a group's pods: all at once, or paced at ``rate`` pods per second.

    "All at once" is ``chunk`` pods every ``every`` loop turns, as many as the turns
    between schedule (one coordinator batch each): the loop runs feeding and scheduling
    on one thread, and writing (then watching) thousands of pods per turn against one
    popped batch left almost nothing bound for a second while a burst arrived (issue 23,
    item 4). In step, pods bind while the burst is written, as under upstream's
    scheduler_perf, whose client creates pods beside the scheduler; a chunk of several
    batches keeps the writes, watch reads and queue adds in bulk."""

    def __init__(
        self, store: Store, group: PodGroup, chunk: int = APPLY_BATCH, every: int = 1
    ) -> None:
        self.store = store
        self.group = group
        self.chunk = max(1, min(chunk, APPLY_BATCH))
        self.every = max(1, every)
        self.turn = 0
        self.it = group.manifests(shared=True)  # only the store reads them
        self.created = 0
        self.start = time.monotonic()
        self.done = group.count == 0

    def feed(self) -> bool:
        """Write the pods now due; True while some remain to be written."""
        self.tick()
        return not self.done

    def tick(self) -> None:
        if self.done:
            return
        if self.group.rate > 0:
            due = int((time.monotonic() - self.start) * self.group.rate) + 1 - self.created
        else:
            self.turn += 1
            due = self.chunk if (self.turn - 1) % self.every == 0 else 0
        batch = []
        for _ in range(max(0, min(due, APPLY_BATCH))):
            doc = next(self.it, None)
            if doc is None:
                self.done = True
                break
            batch.append(doc)
        if batch:
            self.store.apply_many(batch)
            self.created += len(batch)
        if self.created >= self.group.count:
            self.done = True


def group_feed(
    feeder: FeederProcess, informer: Any, group: PodGroup, chunk: int, every: int
) -> ProcessFeed:
    """The feed of one group written by the feeder process: the template and its count
    (the child builds the pods, in order), or the manifests of a trace or snapshot;
    ``chunk`` of them every ``every`` turns, or all paced at the group's ``rate``.
    ``informer``: the coordinator's (its ``last_rv`` is what the watch has seen)."""
    docs = None
    count = group.count
    if group.trace is not None or group.template is None:
        docs = list(group.manifests())
        count = len(docs)
    take = None if group.rate > 0 else chunk
    first = group_message(
        template=group.template,
        count=group.count,
        labels=group.labels,
        claim_statuses=group.claim_statuses,
        docs=docs,
        chunk=chunk,
        rate=group.rate,
        take=take,
    )
    messages = [first]
    if take is not None:
        messages += [take_message(chunk, chunk) for _ in range(chunk, count, chunk)]
    what = f"writing pod group {group.name}"
    return ProcessFeed(
        feeder,
        messages,
        lambda: informer.last_rv,
        what,
        every=every,
        lead=None if take is None else 2,
    )


def _rebuilt(reply: Mapping[str, Any]) -> Exception:
    """The child's error as the parent raises it: the same class and one-line message
    for the project's errors (the CLI prints them and exits 2 or 3), FeederFailed
    naming the original class for anything else."""
    cls = getattr(errors, str(reply.get("error")), None)
    if isinstance(cls, type) and issubclass(cls, InvalidObjectError):
        return cls(
            str(reply.get("reason", "")),
            obj=str(reply.get("obj", "")),
            field=str(reply.get("field", "")),
            source=str(reply.get("source", "")),
        )
    if isinstance(cls, type) and issubclass(cls, ClusterSchedError):
        return cls(str(reply.get("message", "")))
    return FeederFailed(f"the pod feeder failed: {reply.get('error')}: {reply.get('message')}")


def _error_reply(err: BaseException) -> dict[str, Any]:
    reply: dict[str, Any] = {"error": type(err).__name__, "message": str(err)}
    if isinstance(err, InvalidObjectError):
        reply.update(reason=err.reason, obj=err.obj, field=err.field, source=err.source)
    return reply


# ---------------------------------------------------------------------- the child


def _docs(msg: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    if "docs" in msg:
        yield from msg["docs"]
        return
    if "nodes" in msg:
        yield from GeneratedDocs.from_wire(msg["nodes"]).manifests(shared=True)
        return
    group = PodGroup(
        name="feeder",
        count=int(msg["count"]),
        template=msg["template"],
        labels=msg.get("labels") or {},
        claim_statuses=msg.get("claims"),
    )
    yield from group.manifests(shared=True)  # only the store reads them


def write_group(
    store: Store, msg: Mapping[str, Any], group: list[Iterator[Mapping[str, Any]]]
) -> dict[str, Any]:
    """Write the next ``take`` objects (all if absent) of the group the message starts
    or, ``group[0]``, the one in hand: in order, ``chunk`` per store call, paced at
    ``rate`` objects per second if set. Returns the reply the parent waits for."""
    if "docs" in msg or "template" in msg or "nodes" in msg:
        group[:] = [iter(_docs(msg))]
    it = group[0]
    chunk, rate = int(msg["chunk"]), float(msg["rate"])
    left = msg.get("take")
    start = time.monotonic()
    last = start - RATE_TICK
    created = rv = 0
    while left is None or created < left:
        if rate > 0:
            now = time.monotonic()
            due = int((now - start) * rate) + 1 - created
            if due <= 0 or now < last + RATE_TICK:
                wake = max(start + created / rate, last + RATE_TICK)
                time.sleep(max(0.0, wake - now))
                continue
            due = min(due, APPLY_BATCH)
            last = now
        else:
            due = chunk
        if left is not None:
            due = min(due, left - created)
        batch = [doc for _, doc in zip(range(due), it, strict=False)]
        if not batch:
            break
        for result in store.apply_many(batch):
            if result.event_id:
                rv = max(rv, result.rv)
        created += len(batch)
    return {"done": created, "rv": rv}


class _RawStdin:
    def read(self, n: int) -> bytes:
        return os.read(0, n)


def child_main(argv: list[str]) -> int:
    """``python -m cluster_sched.workload.feeder REDIS_URL PREFIX``: groups on stdin,
    replies on stdout, until stdin closes."""
    url, prefix = argv
    out = sys.stdout.buffer
    # A raw read returns what the pipe holds (a buffered one waits for a full block).
    unpacker = msgpack.Unpacker(_RawStdin(), raw=False, strict_map_key=False)
    try:
        store = Store.from_url(url, prefix)
        group: list[Iterator[Mapping[str, Any]]] = [iter(())]
        for msg in unpacker:
            reply = write_group(store, msg, group)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            reply["cpu"] = usage.ru_utime + usage.ru_stime
            out.write(pack(reply))
            out.flush()
    except Exception as err:  # reported to the parent, which raises it
        try:
            out.write(pack(_error_reply(err)))
            out.flush()
        except OSError:  # the parent is gone (killed): nobody to tell, nothing to print
            stdout_reader_gone()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
