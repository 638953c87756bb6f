-- add.lua: add pods to the queue (upstream Add -> moveToActiveQ), many per call.
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: a msgpack array of strings, 7 per pod (one argument, not 7 per pod: the
-- client's encoding of each argument cost more than the script's run):
--   pod key,
--   dest: 'active', or 'unschedulable' when a PreEnqueue plugin gated the pod,
--   dest score: the timestamp for 'unschedulable' (ignored for 'active'),
--   sort score, sort member: the pod's activeQ entry,
--   msgpack QueuedPodInfo, attempts
-- Returns: one character per pod, in the array's order (compact: a batch holds thousands):
--   'a' it went to activeQ, 'u' to the unschedulable pool, '-' skipped because it is in
--   flight (being scheduled) or gated while already queued (upstream leaves it).
-- An ungated pod already in a sub-queue is moved (or re-sorted) into activeQ.
--
-- A burst of new pods (the common batch: none queued yet, each with its activeQ entry,
-- no pod twice) is written per key for the whole batch, a handful of variadic calls
-- instead of nine per pod; the state left is exactly the per-pod loop's (revisions in the
-- array's order). Any other batch takes the per-pod loop.
local argv = cmsgpack.unpack(ARGV[1])
local n = #argv / 7
local pods, seen = {}, {}
local burst = n > 1
for i = 1, #argv, 7 do
  local pod = argv[i]
  if seen[pod] or argv[i + 1] ~= 'active' or argv[i + 3] == '' then
    burst = false
    break
  end
  seen[pod] = true
  pods[#pods + 1] = pod
end
if burst then
  for first = 1, n, SLICE do
    local where = redis.call('HMGET', K_WHERE, unpack(pods, first, math.min(first + SLICE - 1, n)))
    for j = 1, #where do
      if where[j] then
        burst = false
        break
      end
    end
    if not burst then
      break
    end
  end
end
if burst then
  local rev0 = redis.call('INCRBY', K_SEQ, n) - n
  for first = 1, n, SLICE do
    local last = math.min(first + SLICE - 1, n)
    local sortkeys, zadd, where, infos, attempts, revs = {}, {}, {}, {}, {}, {}
    for k = first, last do
      local i = 7 * (k - 1) + 1
      local pod, score, member = argv[i], argv[i + 3], argv[i + 4]
      sortkeys[#sortkeys + 1], sortkeys[#sortkeys + 2] = pod, score .. '\n' .. member
      zadd[#zadd + 1], zadd[#zadd + 2] = score, member
      where[#where + 1], where[#where + 2] = pod, 'active'
      infos[#infos + 1], infos[#infos + 2] = pod, argv[i + 5]
      attempts[#attempts + 1], attempts[#attempts + 2] = pod, argv[i + 6]
      revs[#revs + 1], revs[#revs + 2] = pod, rev0 + k
    end
    redis.call('HSET', K_SORTKEY, unpack(sortkeys))
    redis.call('ZADD', K_ACTIVE, unpack(zadd))
    redis.call('HSET', K_WHERE, unpack(where))
    redis.call('HSET', K_INFO, unpack(infos))
    redis.call('HSET', K_ATTEMPTS, unpack(attempts))
    redis.call('HSET', K_REV, unpack(revs))
  end
  wake()
  return string.rep('a', n)
end

local results = {}
local woke = false
for i = 1, #argv, 7 do
  local pod, dest, score = argv[i], argv[i + 1], argv[i + 2]
  local loc = location(pod)
  if loc == 'inflight' or (dest ~= 'active' and loc) then
    results[#results + 1] = '-'
  else
    detach(pod, loc)
    set_sortkey(pod, argv[i + 3], argv[i + 4])
    attach(pod, dest, score)
    redis.call('HSET', K_INFO, pod, argv[i + 5])
    redis.call('HSET', K_ATTEMPTS, pod, argv[i + 6])
    touch(pod)
    results[#results + 1] = string.sub(dest, 1, 1)
    woke = woke or dest == 'active'
  end
end
if woke then
  wake()
end
return table.concat(results)
