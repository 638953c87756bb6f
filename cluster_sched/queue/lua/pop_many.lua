-- pop_many.lua: take up to N pods from the head of activeQ into flight (upstream Pop,
-- N times in a row; a single pop is N = 1).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: now (s), recorded as the pop time; ARGV[2]: N, the most pods to take (>= 1)
-- Returns: 4 per pod, in pop order (empty when activeQ is empty):
--   pod key, msgpack info, attempts, cycle
--   where attempts already counts this pop and cycle is the scheduling cycle the pod
--   starts: consecutive within one reply, each pod its own.
-- ZPOPMIN removes the members in the same step that reads them, so no two callers can
-- ever receive the same pod. Every pod goes through exactly the steps of one single
-- pop, in the same order, so one call with N leaves the same state (counters and
-- revisions included) as N calls with 1.
local head = redis.call('ZPOPMIN', K_ACTIVE, tonumber(ARGV[2]))
local reply = {}
for i = 1, #head, 2 do
  local pod = string.match(head[i], '%z([^%z]*)$')
  redis.call('HSET', K_WHERE, pod, 'inflight')
  redis.call('ZADD', K_INFLIGHT, ARGV[1], pod)
  local attempts = redis.call('HINCRBY', K_ATTEMPTS, pod, 1)
  local cycle = redis.call('INCR', K_CYCLE)
  touch(pod)
  reply[#reply + 1] = pod
  reply[#reply + 1] = redis.call('HGET', K_INFO, pod) or ''
  reply[#reply + 1] = attempts
  reply[#reply + 1] = cycle
end
return reply
