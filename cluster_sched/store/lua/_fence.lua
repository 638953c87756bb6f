-- _fence.lua: the fencing check every coordinator write starts with (prepended first).
--
-- The caller puts the lease hash in front of KEYS and its fencing token in front of
-- ARGV; both are removed here, so the script below sees its own KEYS and ARGV as its
-- header documents them. Token "0" is an unfenced write (leader election off); any other
-- token must equal the lease's current one (field "token", incremented on every change
-- of holder), else the whole script is refused with a FENCED error and writes nothing:
-- a paused or partitioned ex-leader can never write after another process took over.

local FENCE_KEY = table.remove(KEYS, 1)
local FENCE_TOKEN = table.remove(ARGV, 1)
if FENCE_TOKEN ~= '0' then
  local held = redis.call('HGET', FENCE_KEY, 'token')
  if held ~= FENCE_TOKEN then
    return redis.error_reply('FENCED fencing token ' .. FENCE_TOKEN ..
      ' is not the lease\'s current token ' .. tostring(held))
  end
end
