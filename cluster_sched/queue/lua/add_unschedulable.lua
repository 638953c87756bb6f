-- add_unschedulable.lua: put a pod that failed its attempt back (upstream
-- AddUnschedulableIfNotPresent with the moveRequestCycle rule).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV: pod key, the pod's scheduling cycle, backoff expiry, timestamp (now),
--   sort score, sort member, msgpack info, attempts,
--   has_rejectors ('1' if some plugin rejected it), gated ('1' if PreEnqueue gated it)
-- Returns: {'present', location} if the pod already waits in a sub-queue (nothing
--   changes), else {'added', 'backoff' | 'unschedulable'}.
-- The pod goes to backoffQ when a move request arrived during or after its cycle
-- (move_cycle >= its cycle: the event may have made it schedulable) or when no plugin
-- rejected it (an error: retry after backoff); otherwise it waits in the unschedulable
-- pool for an event. A gated pod always waits in the pool.
local pod, pod_cycle = ARGV[1], tonumber(ARGV[2])
local loc = location(pod)
if loc and loc ~= 'inflight' then
  return {'present', loc}
end
local move_cycle = tonumber(redis.call('GET', K_MOVE_CYCLE) or '-1')
local dest, score = 'unschedulable', ARGV[4]
if ARGV[10] ~= '1' and (move_cycle >= pod_cycle or ARGV[9] ~= '1') then
  dest, score = 'backoff', ARGV[3]
end
detach(pod, loc)
set_sortkey(pod, ARGV[5], ARGV[6])
attach(pod, dest, score)
redis.call('HSET', K_INFO, pod, ARGV[7])
redis.call('HSET', K_ATTEMPTS, pod, ARGV[8])
touch(pod)
return {'added', dest}
