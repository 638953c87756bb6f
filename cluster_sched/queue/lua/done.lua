-- done.lua: forget in-flight pods whose scheduling cycle ended (upstream Done).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1..n]: pod keys
-- Returns: how many of them were in flight and are now forgotten (a pod that went back
--   to a sub-queue in the meantime stays there).
return finish_cycles(ARGV, 1)
