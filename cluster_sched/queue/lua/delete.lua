-- delete.lua: remove a pod from whichever sub-queue holds it, in-flight included
-- (upstream Delete).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: pod key
-- Returns: the location it was removed from, or false if it was not queued.
local pod = ARGV[1]
local loc = location(pod)
if not loc then
  return false
end
detach(pod, loc)
forget(pod)
return loc
