-- add_unschedulable.lua: put pods that failed their attempts back (upstream
-- AddUnschedulableIfNotPresent with the moveRequestCycle rule), many per call.
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV: 10 per pod:
--   pod key, the pod's scheduling cycle, backoff expiry, timestamp (now),
--   sort score, sort member, msgpack info, attempts,
--   has_rejectors ('1' if some plugin rejected it), gated ('1' if PreEnqueue gated it)
-- Returns: 2 per pod, in ARGV order: 'present', location if the pod already waits in a
--   sub-queue (nothing changes for it), else 'added', 'backoff' | 'unschedulable'.
-- A pod goes to backoffQ when a move request arrived during or after ITS cycle
-- (move_cycle >= its cycle: the event may have made it schedulable) or when no plugin
-- rejected it (an error: retry after backoff); otherwise it waits in the unschedulable
-- pool for an event. A gated pod always waits in the pool. Pods are handled in ARGV
-- order exactly as one call per pod would handle them (this script never records a
-- move request, so move_cycle is the same for every pod).
local move_cycle = tonumber(redis.call('GET', K_MOVE_CYCLE) or '-1')
local reply = {}
for i = 1, #ARGV, 10 do
  local pod, pod_cycle = ARGV[i], tonumber(ARGV[i + 1])
  local loc = location(pod)
  if loc and loc ~= 'inflight' then
    reply[#reply + 1] = 'present'
    reply[#reply + 1] = loc
  else
    local dest, score = 'unschedulable', ARGV[i + 3]
    if ARGV[i + 9] ~= '1' and (move_cycle >= pod_cycle or ARGV[i + 8] ~= '1') then
      dest, score = 'backoff', ARGV[i + 2]
    end
    detach(pod, loc)
    set_sortkey(pod, ARGV[i + 4], ARGV[i + 5])
    attach(pod, dest, score)
    redis.call('HSET', K_INFO, pod, ARGV[i + 6])
    redis.call('HSET', K_ATTEMPTS, pod, ARGV[i + 7])
    touch(pod)
    reply[#reply + 1] = 'added'
    reply[#reply + 1] = dest
  end
end
return reply
