-- add_unschedulable.lua: put pods that failed their attempts back (upstream
-- AddUnschedulableIfNotPresent with QueueingHints), many per call.
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: '1' when a pod sent to backoffQ should wake blocked pops (SchedulerPopFromBackoffQ)
-- ARGV[2..]: 7 per pod:
--   pod key, dest ('unschedulable' | 'backoff' | 'active', decided by the caller from
--   the events seen during the pod's cycle), dest score (pool timestamp / backoff
--   expiry; unused for active), sort score, sort member, msgpack info, attempts
-- Returns: 2 per pod, in ARGV order: 'present', location if the pod already waits in a
--   sub-queue (nothing changes for it), else 'added', the destination.
-- Pods are handled in ARGV order exactly as one call per pod would handle them.
local reply = {}
local woke = false
for i = 2, #ARGV, 7 do
  local pod, dest, score = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local loc = location(pod)
  if loc and loc ~= 'inflight' then
    reply[#reply + 1] = 'present'
    reply[#reply + 1] = loc
  else
    detach(pod, loc)
    set_sortkey(pod, ARGV[i + 3], ARGV[i + 4])
    attach(pod, dest, score)
    redis.call('HSET', K_INFO, pod, ARGV[i + 5])
    redis.call('HSET', K_ATTEMPTS, pod, ARGV[i + 6])
    touch(pod)
    reply[#reply + 1] = 'added'
    reply[#reply + 1] = dest
    woke = woke or dest == 'active' or (dest == 'backoff' and ARGV[1] == '1')
  end
end
if woke then
  wake()
end
return reply
