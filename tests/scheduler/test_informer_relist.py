"""The informer relists when the event stream was trimmed past its position."""

from __future__ import annotations

from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.store.store import Store
from cluster_sched.testing import make_node, make_pod


def test_gap_in_stream_triggers_relist_and_handlers_see_every_change(redis_client):
    store = Store(redis_client, events_maxlen=1)
    seen: list[tuple[str | None, str | None]] = []
    informer = Informer(
        store,
        InformerHandlers(
            on_pod=lambda old, new: seen.append((old and old.key, new and new.key)),
            on_node=lambda old, new: None,
        ),
    )
    store.apply(make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).manifest())
    store.apply(make_pod("gone").req(cpu="1").manifest())
    informer.list_and_watch()
    informer.poll()  # sets the last resourceVersion seen
    store.apply(make_pod("marker").req(cpu="1").manifest())
    informer.poll()
    seen.clear()
    # Many writes: the stream (maxlen 1, approximate trimming) drops most of them.
    for i in range(300):
        store.apply(make_pod(f"p{i}").req(cpu="1").manifest())
    store.delete("Pod", "default/gone")
    informer.poll(count=10)
    assert informer.relists >= 1
    assert set(informer.pods) == {f"default/p{i}" for i in range(300)} | {"default/marker"}
    assert (("default/gone", None)) in seen
    assert sum(1 for old, new in seen if old is None and new and new.startswith("default/p")) == 300
