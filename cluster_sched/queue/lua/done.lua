-- done.lua: forget an in-flight pod whose scheduling cycle ended (upstream Done).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: pod key
-- Returns: 1 if the pod was in flight and is now forgotten, else 0 (a pod that went
--   back to a sub-queue in the meantime stays there).
local pod = ARGV[1]
if location(pod) ~= 'inflight' then
  return 0
end
detach(pod, 'inflight')
forget(pod)
return 1
