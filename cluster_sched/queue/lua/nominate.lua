-- nominate.lua: set, move or clear a pod's nominated node (upstream nominator
-- add/delete; an update is a delete plus an add).
-- KEYS[1]: node_of   HASH pod key -> nominated node
-- KEYS[2]: priority  HASH pod key -> pod priority
-- KEYS[3]: seq       STRING insertion counter
-- KEYS[4]: ZSET of the node the caller read as current (any node key if none)
-- KEYS[5]: ZSET of the new node (any node key if clearing)
-- ARGV[1]: pod key; ARGV[2]: node the caller read as current ('' = none);
-- ARGV[3]: new node ('' clears the nomination); ARGV[4]: priority
-- Returns: 1 when applied; 0 when the current node is no longer ARGV[2] (another
--   process changed it: the caller re-reads and retries). Node key names are built by
--   the caller because a script must not construct keys.
local pod, expected, node = ARGV[1], ARGV[2], ARGV[3]
local current = redis.call('HGET', KEYS[1], pod) or ''
if current ~= expected then
  return 0
end
if current ~= '' then
  redis.call('ZREM', KEYS[4], pod)
end
if node == '' then
  redis.call('HDEL', KEYS[1], pod)
  redis.call('HDEL', KEYS[2], pod)
else
  -- Re-nominating appends at the end, as upstream's delete-then-append does.
  redis.call('HSET', KEYS[1], pod, node)
  redis.call('HSET', KEYS[2], pod, ARGV[4])
  redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[3]), pod)
end
return 1
