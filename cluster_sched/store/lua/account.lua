-- account.lua: the over-commit check's inputs for objects written by apply.
--
-- bind.lua counts the pods it binds; pods created already bound (spec.nodeName in the
-- manifest) are counted here, once: a pod already counted, or no longer stored, is
-- skipped, so running this again after a retried apply changes nothing. Nodes get their
-- allocatable recorded (replaced on every update).
--
-- KEYS[1]     node -> allocatable       ({cs}:alloc)
-- KEYS[2]     node -> requested sums    ({cs}:noderequested)
-- KEYS[3]     pod -> its node, requests ({cs}:podrequested)
-- KEYS[4]     pod hash                  ({cs}:obj:Pod)
-- ARGV[1]     msgpack array of nodes {name, allocatable {resource: int}}
-- ARGV[2]     msgpack array of bound pods {pod field, node, requests {resource: int}}
-- Returns     how many pods were counted

local nodes = cmsgpack.unpack(ARGV[1])
for i = 1, #nodes do
  redis.call('HSET', KEYS[1], nodes[i][1], cmsgpack.pack(nodes[i][2]))
end
local pods = cmsgpack.unpack(ARGV[2])
local counted = 0
for i = 1, #pods do
  local field, node, reqs = pods[i][1], pods[i][2], pods[i][3]
  if redis.call('HEXISTS', KEYS[3], field) == 0 and redis.call('HEXISTS', KEYS[4], field) == 1 then
    local used_raw = redis.call('HGET', KEYS[2], node)
    local used = used_raw and cmsgpack.unpack(used_raw) or {}
    for r, q in pairs(reqs) do
      if r ~= 'pods' then used[r] = (used[r] or 0) + q end
    end
    used.pods = (used.pods or 0) + 1
    redis.call('HSET', KEYS[2], node, cmsgpack.pack(used))
    redis.call('HSET', KEYS[3], field, cmsgpack.pack({node, reqs}))
    counted = counted + 1
  end
end
return counted
