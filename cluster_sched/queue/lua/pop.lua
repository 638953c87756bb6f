-- pop.lua: take the head of activeQ into flight (upstream Pop).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: now (s), recorded as the pop time
-- Returns: false if activeQ is empty, else {pod key, msgpack info, attempts, cycle}
--   where attempts already counts this pop and cycle is the scheduling cycle it starts.
-- ZPOPMIN removes the member in the same step that reads it, so no two callers can
-- ever receive the same pod.
local head = redis.call('ZPOPMIN', K_ACTIVE, 1)
if #head == 0 then
  return false
end
local pod = string.match(head[1], '%z([^%z]*)$')
redis.call('HSET', K_WHERE, pod, 'inflight')
redis.call('ZADD', K_INFLIGHT, ARGV[1], pod)
local attempts = redis.call('HINCRBY', K_ATTEMPTS, pod, 1)
local cycle = redis.call('INCR', K_CYCLE)
touch(pod)
return {pod, redis.call('HGET', K_INFO, pod) or '', attempts, cycle}
