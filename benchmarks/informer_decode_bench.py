"""Watch decoding cost per event: pod ADDED events from the stream to typed Pods.

Run: ``python benchmarks/informer_decode_bench.py [--pods 20000] [--redis URL]``.
Without ``--redis`` a private redis-server is started. Applies ``--pods`` pods (the
~1 KB manifests of ``store_apply.py``), then times, per event, each stage of what the
informer does with them: the XREAD round trips alone, ``Store.read_events`` (XREAD +
msgpack decoding into WatchEvents), ``parse_object`` of the decoded manifests, and
``Informer.poll`` end to end with handlers that do nothing; then every pod is bound and
``Informer.poll`` is timed over the bindings' MODIFIED events, decoded and, as the
coordinator's own bindings, known from the mark bind.lua wrote into them.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from store_apply import _pod

from cluster_sched.api.manifest import parse_object
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.scheduler.own_bindings import OwnMark
from cluster_sched.store import Store

READ_COUNT = 2000
#: the binder's mark the bindings carry
MARK = "bench-binder"


def _timed(fn: Any, events: int, repeat: int = 5) -> tuple[float, float]:
    """Best of ``repeat`` runs: (wall, this process's CPU) microseconds per event. The
    CPU figure leaves out Redis' own time and is steadier on a shared machine."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return wall / events * 1e6, cpu / events * 1e6


def run(url: str, pods: int) -> None:
    client = connect(url)
    client.flushall()
    store = Store(client)
    store.apply_many([_pod(i) for i in range(pods)])
    keys = store.keys

    def xread_only() -> None:
        last = "0-0"
        while reply := client.xread({keys.events: last}, count=READ_COUNT):
            entries = next(iter(reply.values()))[0] if isinstance(reply, dict) else reply[0][1]
            last = entries[-1][0]

    events: list[Any] = []

    def read_events() -> None:
        events.clear()
        last = "0-0"
        while batch := store.read_events(last, count=READ_COUNT):
            events.extend(batch)
            last = batch[-1].id

    def parse() -> None:
        for ev in events:
            parse_object(ev.obj)

    def poll() -> None:
        handlers = InformerHandlers(on_pod=lambda old, new: None, on_node=lambda old, new: None)
        informer = Informer(store, handlers)
        while informer.poll(count=READ_COUNT):
            pass
        assert len(informer.pods) == pods

    def bound(mark: str = "") -> tuple[float, float]:
        """The bindings' MODIFIED events, each of a pod the informer already parsed;
        with ``mark``, the informer's mark is the one the bindings carry (the events are
        then applied without decoding)."""
        wall = cpu = float("inf")
        for _ in range(5):
            handlers = InformerHandlers(on_pod=lambda old, new: None, on_node=lambda old, new: None)
            informer = Informer(store, handlers, own=OwnMark(mark or "not-the-binder"))
            left = pods
            while left:  # the ADDED events, untimed
                left -= informer.poll(count=min(READ_COUNT, left))
            t0, c0 = time.perf_counter(), time.process_time()
            while informer.poll(count=READ_COUNT):
                pass
            wall = min(wall, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
            assert all(p.node_name for p in informer.pods.values())
        return wall / pods * 1e6, cpu / pods * 1e6

    xread = _timed(xread_only, pods)
    read = _timed(read_events, pods)
    parse_us = _timed(parse, pods)
    total = _timed(poll, pods)
    print(f"pods: {pods} ADDED events, read {READ_COUNT} per XREAD; us/event wall (cpu)")
    print(f"XREAD alone:              {xread[0]:7.1f} ({xread[1]:5.1f})")
    print(
        f"Store.read_events:        {read[0]:7.1f} ({read[1]:5.1f})  XREAD + msgpack -> WatchEvent"
    )
    print(f"parse_object:             {parse_us[0]:7.1f} ({parse_us[1]:5.1f})  manifest -> Pod")
    print(f"Informer.poll end to end: {total[0]:7.1f} ({total[1]:5.1f})")
    uids = {ev.key: ev.obj["metadata"]["uid"] for ev in events}
    store.bind_many(((key, "node-0", uid) for key, uid in uids.items()), mark=MARK)
    modified = bound()
    print(
        f"bound MODIFIED, end to end: {modified[0]:5.1f} ({modified[1]:5.1f})  pods already parsed"
    )
    own = bound(MARK)
    print(f"  the same, our own:        {own[0]:5.1f} ({own[1]:5.1f})  known from their mark")
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--redis", default=None, help="Redis URL (default: a private server)")
    args = parser.parse_args()
    if args.redis:
        run(args.redis, args.pods)
        return
    with RedisServer() as server:
        run(server.url, args.pods)


if __name__ == "__main__":
    main()
