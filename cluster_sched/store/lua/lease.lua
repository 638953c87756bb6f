-- lease.lua: leader election's Lease (coordination.k8s.io/v1), held in one Redis hash.
--
-- Times come from the Redis server's clock (TIME), so candidates on machines with skewed
-- clocks still agree on when a lease expired. Every change of holder increments the
-- fencing token, which every coordinator write must carry (_fence.lua); renewing keeps
-- it, and release keeps it too, so the next holder's token is always larger.
--
-- KEYS[1]     the lease hash: holder, acquireTime, renewTime (ms), leaseDurationMs,
--             token, leaseTransitions
-- ARGV[1]     "acquire" (take the lease if free or expired, else renew it if ours),
--             "renew" (only if ours) or "release" (give it up if ours)
-- ARGV[2]     the candidate's identity
-- ARGV[3]     lease duration (ms) recorded with an acquire or renew
-- Returns     {token, holder}: token > 0 when the candidate holds the lease (for
--             release: held it), else 0 and the current holder ("" if none)

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'holder', 'renewTime', 'leaseDurationMs', 'token')
local holder = h[1] or ''
local renewed, duration = tonumber(h[2] or '0'), tonumber(h[3] or '0')
local token = tonumber(h[4] or '0')
local op, me, want = ARGV[1], ARGV[2], ARGV[3]

if op == 'release' then
  if holder ~= me then return {0, holder} end
  redis.call('HSET', KEYS[1], 'holder', '', 'renewTime', 0)
  return {token, ''}
end
if holder == me then
  redis.call('HSET', KEYS[1], 'renewTime', now, 'leaseDurationMs', want)
  return {token, me}
end
if op == 'renew' then return {0, holder} end
if holder ~= '' and now < renewed + duration then return {0, holder} end
token = redis.call('HINCRBY', KEYS[1], 'token', 1)
redis.call('HSET', KEYS[1], 'holder', me, 'acquireTime', now, 'renewTime', now,
  'leaseDurationMs', want)
redis.call('HINCRBY', KEYS[1], 'leaseTransitions', 1)
return {token, me}
