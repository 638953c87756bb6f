-- unpop.lua: give back the part of a popped batch that a pod which entered activeQ
-- meanwhile now precedes (the serial loop would pop that pod before them).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: the cycle of the batch's last pod; ARGV[2..]: the pods not yet scheduled, in
--   pop order (their cycles consecutive up to ARGV[1])
-- Returns: how many of them stay popped, from the front (all: nothing changed).
-- The pods from the first one activeQ's head sorts before (activeQ's own order: the pod
-- is entered for the question only) to the end return to activeQ under their recorded
-- sort keys with the pop's attempt taken back; when no pop came after the batch, the
-- scheduling cycle goes back too, so the next pop hands out the cycles these pods had:
-- the state is that of a serial loop that had not popped them yet. A pod no longer in
-- flight (deleted meanwhile) stays where it is.
local head = redis.call('ZRANGE', K_ACTIVE, 0, 0)
local n = #ARGV - 1
if #head == 0 then
  return n
end
local cut = n
for i = 2, #ARGV do
  local pod = ARGV[i]
  local sortkey = location(pod) == 'inflight' and redis.call('HGET', K_SORTKEY, pod)
  if sortkey then
    local score, member = split_sortkey(sortkey)
    redis.call('ZADD', K_ACTIVE, score, member)
    local rank = redis.call('ZRANK', K_ACTIVE, member)
    redis.call('ZREM', K_ACTIVE, member)
    if rank > 0 then
      cut = i - 2
      break
    end
  end
end
if cut == n then
  return n
end
for i = cut + 2, #ARGV do
  local pod = ARGV[i]
  if location(pod) == 'inflight' then
    detach(pod, 'inflight')
    attach(pod, 'active')
    local tried = (tonumber(redis.call('HGET', K_ATTEMPTS, pod) or '1') or 1) - 1
    redis.call('HSET', K_ATTEMPTS, pod, math.max(tried, 0))
    touch(pod)
  end
end
if redis.call('GET', K_CYCLE) == ARGV[1] then
  redis.call('DECRBY', K_CYCLE, n - cut)
end
wake()
return cut
