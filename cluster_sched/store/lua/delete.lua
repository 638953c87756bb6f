-- delete.lua: delete objects, each with a DELETED watch event.
--
-- The event carries the last stored state stamped with the deletion's resourceVersion,
-- as the API server's watch does; an unreadable stored object is still deleted and its
-- event carries an empty map.
--
-- A deleted Pod gives back what it held on its node (the requested sums bind.lua
-- checks); a deleted Node loses its recorded allocatable.
--
-- KEYS[1]     resourceVersion counter   ({cs}:rv)
-- KEYS[2]     watch event stream        ({cs}:events)
-- KEYS[3]     node -> allocatable       ({cs}:alloc)
-- KEYS[4]     node -> requested sums    ({cs}:noderequested)
-- KEYS[5]     pod -> its node, requests ({cs}:podrequested)
-- KEYS[5+k]   object hash of kind k     ({cs}:obj:<Kind>)
-- ARGV[1]     approximate MAXLEN of the event stream
-- ARGV[2]     msgpack array of kind names (kind k is element k)
-- ARGV[3]     msgpack array of items {k, field}
-- Returns     msgpack array, two entries per item: rv, event id if it was deleted;
--             0, "" if it did not exist

-- Subtract what pod ``field`` added to its node, if it was counted.
local function release(field)
  local raw = redis.call('HGET', KEYS[5], field)
  if not raw then return end
  local held = cmsgpack.unpack(raw)
  local node, reqs = held[1], held[2]
  local used_raw = redis.call('HGET', KEYS[4], node)
  if used_raw then
    local used = cmsgpack.unpack(used_raw)
    for r, q in pairs(reqs) do
      if r ~= 'pods' then used[r] = (used[r] or 0) - q end
    end
    used.pods = (used.pods or 1) - 1
    redis.call('HSET', KEYS[4], node, cmsgpack.pack(used))
  end
  redis.call('HDEL', KEYS[5], field)
end

local out = {}
local maxlen = ARGV[1]
local kinds = cmsgpack.unpack(ARGV[2])
local items = cmsgpack.unpack(ARGV[3])
for i = 1, #items do
  local k, field = items[i][1], items[i][2]
  local hash = KEYS[5 + k]
  local old = redis.call('HGET', hash, field)
  if not old then
    out[#out + 1] = 0
    out[#out + 1] = ''
  else
    local rv = redis.call('INCR', KEYS[1])
    local ok, obj = pcall(mp_stamp_rv, old, rv)
    if not ok then obj = mp_map_header(0) end
    redis.call('HDEL', hash, field)
    if kinds[k] == 'Pod' then release(field) end
    if kinds[k] == 'Node' then redis.call('HDEL', KEYS[3], field) end
    local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*',
      'type', 'DELETED', 'kind', kinds[k], 'key', field, 'rv', rv, 'obj', obj)
    out[#out + 1] = rv
    out[#out + 1] = id
  end
end
return cmsgpack.pack(out)
