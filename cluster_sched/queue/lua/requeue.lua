-- requeue.lua: apply moves the caller decided on a read of each pod (upstream
-- movePodsToActiveOrBackoffQueue, Activate, Update), guarded by revision.
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: '1' when a pod moved to backoffQ should wake blocked pops (SchedulerPopFromBackoffQ:
--   a backoffQ pod is poppable when activeQ is empty), else '0'
-- ARGV[2..]: 8 per pod:
--   pod key,
--   expected revision ('' = the pod must be absent from the queue),
--   dest: 'active' | 'backoff' | 'unschedulable', or 'inflight' to only rewrite the
--     record of a pod being scheduled,
--   dest score (backoff expiry / unschedulable timestamp; ignored for active, inflight),
--   sort score, sort member ('' keeps the recorded activeQ entry),
--   msgpack info ('' keeps it), attempts ('' keeps them)
-- Returns: per pod, the location it is in now, or '' when its revision changed since
--   the caller read it (someone else moved it; the caller's decision is stale).
local results = {}
local woke = false
for i = 2, #ARGV, 8 do
  local pod, expected, dest, score = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local rev = redis.call('HGET', K_REV, pod) or ''
  local loc = location(pod)
  if rev ~= expected or (dest == 'inflight' and loc ~= 'inflight') then
    results[#results + 1] = ''
  else
    if dest ~= 'inflight' then
      detach(pod, loc)
      set_sortkey(pod, ARGV[i + 4], ARGV[i + 5])
      attach(pod, dest, score)
    end
    if ARGV[i + 6] ~= '' then
      redis.call('HSET', K_INFO, pod, ARGV[i + 6])
    end
    if ARGV[i + 7] ~= '' then
      redis.call('HSET', K_ATTEMPTS, pod, ARGV[i + 7])
    end
    touch(pod)
    results[#results + 1] = dest
    woke = woke or dest == 'active' or (dest == 'backoff' and ARGV[1] == '1')
  end
end
if woke then
  wake()
end
return results
