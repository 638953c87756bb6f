-- done.lua: forget in-flight pods whose scheduling cycle ended (upstream Done).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1..n]: pod keys
-- Returns: how many of them were in flight and are now forgotten (a pod that went back
--   to a sub-queue in the meantime stays there).
local forgotten = 0
for i = 1, #ARGV do
  local pod = ARGV[i]
  if location(pod) == 'inflight' then
    detach(pod, 'inflight')
    forget(pod)
    forgotten = forgotten + 1
  end
end
return forgotten
