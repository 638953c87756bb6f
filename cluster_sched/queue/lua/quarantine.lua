-- quarantine.lua: move an unreadable queue record aside and take its pod out of the queue,
-- if the record is still the one that failed to decode (a writer that replaced it wins).
-- KEYS: QueueKeys.core (see _lib.lua), then KEYS[14] dead-letter HASH pod key -> info bytes
-- ARGV[1]: pod key; ARGV[2]: the info bytes that failed to decode ('' when absent)
-- Returns: 1 if the pod was moved aside, 0 if its record changed meanwhile (nothing done).
-- Every side field may be garbage too, so nothing here parses them: the pod leaves all
-- four sub-queues by name, and its activeQ member only if its sort key is readable.
local pod, seen = ARGV[1], ARGV[2]
local stored = redis.call('HGET', K_INFO, pod) or ''
if stored ~= seen then
  return 0
end
redis.call('HSET', KEYS[14], pod, stored)
redis.call('ZREM', K_BACKOFF, pod)
redis.call('ZREM', K_UNSCHED, pod)
redis.call('ZREM', K_INFLIGHT, pod)
local sortkey = redis.call('HGET', K_SORTKEY, pod)
if sortkey then
  local nl = string.find(sortkey, '\n', 1, true)
  if nl then
    redis.call('ZREM', K_ACTIVE, string.sub(sortkey, nl + 1))
  end
end
forget(pod)
return 1
