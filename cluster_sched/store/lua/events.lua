-- events.lua: append Kubernetes Events (FailedScheduling, Preempted, ...) to the Event
-- stream; a script only so that the fencing prelude can refuse an ex-leader's Events.
--
-- KEYS[1]     Event stream              ({cs}:kevents)
-- ARGV[1]     approximate MAXLEN of the Event stream
-- ARGV[2]     msgpack array of rows {kind, key, type, reason, action, message, time}
-- Returns     the stream ids, in order

local rows = cmsgpack.unpack(ARGV[2])
local ids = {}
for i = 1, #rows do
  local r = rows[i]
  ids[i] = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'kind', r[1], 'key', r[2],
    'type', r[3], 'reason', r[4], 'action', r[5], 'message', r[6], 'time', r[7])
end
return ids
