-- add.lua: add pods to the queue (upstream Add -> moveToActiveQ), many per call.
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV: 7 per pod:
--   pod key,
--   dest: 'active', or 'unschedulable' when a PreEnqueue plugin gated the pod,
--   dest score: the timestamp for 'unschedulable' (ignored for 'active'),
--   sort score, sort member: the pod's activeQ entry,
--   msgpack QueuedPodInfo, attempts
-- Returns: one character per pod, in ARGV order (compact: a batch holds thousands):
--   'a' it went to activeQ, 'u' to the unschedulable pool, '-' skipped because it is in
--   flight (being scheduled) or gated while already queued (upstream leaves it).
-- An ungated pod already in a sub-queue is moved (or re-sorted) into activeQ.
local results = {}
local woke = false
for i = 1, #ARGV, 7 do
  local pod, dest, score = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local loc = location(pod)
  if loc == 'inflight' or (dest ~= 'active' and loc) then
    results[#results + 1] = '-'
  else
    detach(pod, loc)
    set_sortkey(pod, ARGV[i + 3], ARGV[i + 4])
    attach(pod, dest, score)
    redis.call('HSET', K_INFO, pod, ARGV[i + 5])
    redis.call('HSET', K_ATTEMPTS, pod, ARGV[i + 6])
    touch(pod)
    results[#results + 1] = string.sub(dest, 1, 1)
    woke = woke or dest == 'active'
  end
end
if woke then
  wake()
end
return table.concat(results)
