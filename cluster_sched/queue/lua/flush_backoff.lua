-- flush_backoff.lua: move pods whose backoff expired to activeQ (upstream
-- flushBackoffQCompleted).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: now (s); ARGV[2]: at most this many pods per call (bounds script run time)
-- Returns: the pod keys moved, earliest expiry first.
-- A pod is done backing off when its expiry <= now (upstream: not expiry.After(now)).
local pods = redis.call('ZRANGEBYSCORE', K_BACKOFF, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, pod in ipairs(pods) do
  redis.call('ZREM', K_BACKOFF, pod)
  attach(pod, 'active', nil)
  touch(pod)
end
if #pods > 0 then
  wake()
end
return pods
