"""The queue package's curated public API (guarded: changing it is deliberate)."""

from __future__ import annotations

import cluster_sched.queue as queue_pkg

EXPECTED = {
    "DEFAULT_BACKOFF_FLUSH_INTERVAL",
    "DEFAULT_LEFTOVER_FLUSH_INTERVAL",
    "DEFAULT_POD_INITIAL_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS",
    "DEFAULT_PREFIX",
    "IncomingHook",
    "Location",
    "Nominator",
    "NominatorKeys",
    "Popped",
    "PreEnqueue",
    "QueueKeys",
    "QueuedPodInfo",
    "SchedulingQueue",
    "SortKey",
    "Strategy",
    "backoff_duration",
    "priority_sort_key",
}


def test_all_is_curated_and_resolvable() -> None:
    assert set(queue_pkg.__all__) == EXPECTED
    for name in queue_pkg.__all__:
        assert getattr(queue_pkg, name) is not None


def test_every_script_has_a_header_naming_keys_argv_and_return() -> None:
    from importlib import resources

    lua = resources.files("cluster_sched.queue").joinpath("lua")
    scripts = [p for p in lua.iterdir() if p.name.endswith(".lua") and p.name != "_lib.lua"]
    assert scripts
    for script in scripts:
        header = script.read_text().split("\n\n")[0]
        for word in ("KEYS", "ARGV", "Returns"):
            assert word in header, f"{script.name} header lacks {word}"
        body = script.read_text()
        assert "redis.call('KEYS'" not in body and "'SCAN'" not in body
