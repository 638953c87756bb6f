"""ScriptBatch: fenced script calls sent together, each with its own reply or error.

Real Redis: the calls run in the order they were added, a script the server lost
(SCRIPT FLUSH) is loaded and run once, a fenced call is refused and counted, and an error
of one call reaches only that call's reader."""

from __future__ import annotations

import pytest
import redis

from cluster_sched.store.batch import ScriptBatch
from cluster_sched.store.fence import Fence, fence_prelude, is_fenced_error

#: appends ARGV[1] to the list KEYS[1]; returns the list's new length
_APPEND = fence_prelude() + "\nreturn redis.call('RPUSH', KEYS[1], ARGV[1])"
#: fails when ARGV[1] is 'boom', else returns it
_CHECK = (
    fence_prelude()
    + "\nif ARGV[1] == 'boom' then return redis.error_reply('ERR boom') end\nreturn ARGV[1]"
)


def test_calls_run_in_order_and_each_error_reaches_only_its_reader(
    redis_client: redis.Redis,
) -> None:
    append, check = redis_client.register_script(_APPEND), redis_client.register_script(_CHECK)
    fence = Fence()
    batch = ScriptBatch()
    first = batch.add(append, fence, "t.append", ["{t}:log"], ["a"])
    bad = batch.add(check, fence, "t.check", ["{t}:x"], ["boom"])
    second = batch.add(append, fence, "t.append", ["{t}:log"], ["b"])
    good = batch.add(check, fence, "t.check", ["{t}:x"], ["fine"])
    batch.execute()
    assert (batch.reply(first), batch.reply(second), batch.reply(good)) == (1, 2, b"fine")
    with pytest.raises(redis.ResponseError, match="boom"):
        batch.reply(bad)
    assert redis_client.lrange("{t}:log", 0, -1) == [b"a", b"b"]


def test_a_script_the_server_lost_is_loaded_and_run_once(redis_client: redis.Redis) -> None:
    append = redis_client.register_script(_APPEND)
    fence = Fence()
    warm = ScriptBatch()
    warm.add(append, fence, "t.append", ["{t}:log"], ["warm"])
    warm.execute()
    redis_client.script_flush()
    batch = ScriptBatch()
    indices = [batch.add(append, fence, "t.append", ["{t}:log"], [v]) for v in ("a", "b")]
    batch.execute()
    assert [batch.reply(i) for i in indices] == [2, 3]
    assert redis_client.lrange("{t}:log", 0, -1) == [b"warm", b"a", b"b"]


def test_a_fenced_call_is_refused_counted_and_writes_nothing(redis_client: redis.Redis) -> None:
    append = redis_client.register_script(_APPEND)
    redis_client.hset("{t}:lease", "token", "7")
    current, deposed = Fence("{t}:lease", 7), Fence("{t}:lease", 6)
    batch = ScriptBatch()
    refused = batch.add(append, deposed, "t.append", ["{t}:log"], ["old leader"])
    allowed = batch.add(append, current, "t.append", ["{t}:log"], ["leader"])
    batch.execute()
    with pytest.raises(redis.ResponseError) as caught:
        batch.reply(refused)
    assert is_fenced_error(caught.value)
    assert deposed.refused["t.append"] == 1 and current.refused_total() == 0
    assert batch.reply(allowed) == 1
    assert redis_client.lrange("{t}:log", 0, -1) == [b"leader"]
