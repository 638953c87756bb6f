-- apply.lua: compare-and-set writes of whole objects, each with its watch event.
--
-- The Python side reads the stored objects, decides what to write, and sends the
-- resourceVersion it read; this script writes only if that is still the stored one
-- (etcd's GuaranteedUpdate), so a concurrent bind or update is never overwritten.
-- Objects arrive pre-split around the place metadata.uid / metadata.resourceVersion go
-- (metadata is the first key, those two its first pairs), so stamping them needs no
-- parsing: head .. [uid pair] .. resourceVersion pair .. tail.
--
-- KEYS[1]     resourceVersion counter   ({cs}:rv)
-- KEYS[2]     watch event stream        ({cs}:events)
-- KEYS[2+k]   object hash of kind k     ({cs}:obj:<Kind>)
-- ARGV[1]     approximate MAXLEN of the event stream
-- ARGV[2]     msgpack array of kind names (kind k is element k)
-- ARGV[3]     msgpack array of items {k, field, expected rv, set uid (0/1), head, tail};
--             expected rv "0" means "must not exist", "" "stored without one"
-- Returns     msgpack array, two entries per item:
--             rv, event id      written (event ADDED if it did not exist, else MODIFIED)
--             -1, stored rv     the stored resourceVersion is not the expected one
--             -2, reason        the stored object cannot be parsed

local out = {}
local maxlen = ARGV[1]
local kinds = cmsgpack.unpack(ARGV[2])
local items = cmsgpack.unpack(ARGV[3])
local RV_KEY = mp_enc_str('resourceVersion')
local UID_KEY = mp_enc_str('uid')
for i = 1, #items do
  local item = items[i]
  local k, field, expected, set_uid = item[1], item[2], item[3], item[4]
  local hash = KEYS[2 + k]
  local old = redis.call('HGET', hash, field)
  local ok, current = true, '0'
  if old then ok, current = pcall(mp_object_rv, old) end
  if not ok then
    out[#out + 1] = -2
    out[#out + 1] = 'stored object: ' .. tostring(current)
  elseif current ~= expected then
    out[#out + 1] = -1
    out[#out + 1] = current
  else
    local rv = redis.call('INCR', KEYS[1])
    local stamp = RV_KEY .. mp_enc_str(tostring(rv))
    if set_uid == 1 then
      stamp = UID_KEY .. mp_enc_str(string.format('00000000-0000-4000-8000-%012x', rv)) .. stamp
    end
    local obj = item[5] .. stamp .. item[6]
    redis.call('HSET', hash, field, obj)
    local etype = 'ADDED'
    if old then etype = 'MODIFIED' end
    local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*',
      'type', etype, 'kind', kinds[k], 'key', field, 'rv', rv, 'obj', obj)
    out[#out + 1] = rv
    out[#out + 1] = id
  end
end
return cmsgpack.pack(out)
