-- pop_many.lua: take up to N pods from the head of activeQ into flight (upstream Pop,
-- N times in a row; a single pop is N = 1).
-- KEYS: QueueKeys.core (see _lib.lua)
-- ARGV[1]: now (s), recorded as the pop time; ARGV[2]: N, the most pods to take (>= 1);
-- ARGV[3]: '1' if SchedulerPopFromBackoffQ is on; ARGV[4]: a msgpack array of the pods
--   whose scheduling cycle ended since the last pop (one argument, not one per pod: the
--   client encodes each argument in Python), forgotten first exactly as done.lua would
--   (the caller's Done calls ride on its next pop: one round trip, always before it)
-- Returns: 5 per pod, in pop order (empty when nothing can be popped):
--   pod key, msgpack info, attempts, cycle, source ('active' | 'backoff')
--   where attempts already counts this pop and cycle is the scheduling cycle the pod
--   starts: consecutive within one reply, each pod its own.
-- SchedulerPopFromBackoffQ (upstream activeQueue.unlockedPop -> backoffQ.popBackoff):
-- when activeQ is empty, the head of backoffQ is popped before its backoff expires,
-- counted and cycled like any pop. Only pods some plugin rejected qualify (upstream keeps
-- pods that failed with an error in a separate podErrorBackoffQ that is never popped
-- early). Such a pop takes ONE pod, never mixed with activeQ pods: a pod failing inside
-- a batch could re-enter backoffQ ahead of older backoff pods, so one at a time keeps
-- the order exactly serial.
-- ZPOPMIN removes the members in the same step that reads them, so no two callers can
-- ever receive the same pod. The state left is exactly that of N single pops in a row
-- (pod i: attempts + 1, cycle c + i, revision s + i); the writes are made per key for
-- the whole batch (a handful of variadic calls instead of seven per pod), which is
-- where a batch saves its time inside Redis.
-- A member that names no pod (written by something else) is dropped as it is popped,
-- and the next one taken in its place.
finish_cycles(cmsgpack.unpack(ARGV[4]), 1)
local want = tonumber(ARGV[2])
local pods = {}
while #pods < want do
  local head = redis.call('ZPOPMIN', K_ACTIVE, want - #pods)
  if #head == 0 then
    break
  end
  for i = 1, #head / 2 do
    local pod = string.match(head[2 * i - 1], '%z([^%z]*)$')
    if pod and pod ~= '' then
      pods[#pods + 1] = pod
    end
  end
end
local source = 'active'
if #pods == 0 and ARGV[3] == '1' then
  -- The head of backoffQ whose record names rejecting plugins (fields 7 and 8 of the
  -- msgpack QueuedPodInfo); error pods are skipped, they wait for their expiry.
  local offset, CHUNK = 0, 32
  while #pods == 0 do
    local heads = redis.call('ZRANGE', K_BACKOFF, offset, offset + CHUNK - 1)
    if #heads == 0 then
      break
    end
    local blobs = redis.call('HMGET', K_INFO, unpack(heads))
    for j, pod in ipairs(heads) do
      local ok, rec = pcall(cmsgpack.unpack, blobs[j] or '')
      if ok and type(rec) == 'table' and
          ((type(rec[7]) == 'table' and #rec[7] > 0) or (type(rec[8]) == 'table' and #rec[8] > 0)) then
        redis.call('ZREM', K_BACKOFF, pod)
        pods[1] = pod
        source = 'backoff'
        break
      end
    end
    offset = offset + CHUNK
  end
end
local n = #pods
if n == 0 then
  return {}
end
local cycle0 = redis.call('INCRBY', K_CYCLE, n) - n
local rev0 = redis.call('INCRBY', K_SEQ, n) - n
local reply = {}
-- In slices of SLICE pods (_lib.lua: unpack's stack is bounded).
for first = 1, n, SLICE do
  local last = math.min(first + SLICE - 1, n)
  local slice = {unpack(pods, first, last)}
  local infos = redis.call('HMGET', K_INFO, unpack(slice))
  local tries = redis.call('HMGET', K_ATTEMPTS, unpack(slice))
  local where, attempts, revs = {}, {}, {}
  for j, pod in ipairs(slice) do
    local i = first + j - 1
    local tried = (tonumber(tries[j] or '0') or 0) + 1  -- an unreadable count restarts
    where[#where + 1], where[#where + 2] = pod, 'inflight'
    attempts[#attempts + 1], attempts[#attempts + 2] = pod, tried
    revs[#revs + 1], revs[#revs + 2] = pod, rev0 + i
    reply[#reply + 1] = pod
    reply[#reply + 1] = infos[j] or ''
    reply[#reply + 1] = tried
    reply[#reply + 1] = cycle0 + i
    reply[#reply + 1] = source
  end
  -- The in-flight pods share one score (the pop time), so they sort by key: a small
  -- sorted set is a flat list Redis scans from its head for every new member, so the
  -- members go in from the largest key down, each placed at once (same set, linear
  -- instead of quadratic in the batch).
  table.sort(slice)
  local inflight = {}
  for j = #slice, 1, -1 do
    inflight[#inflight + 1], inflight[#inflight + 2] = ARGV[1], slice[j]
  end
  redis.call('HSET', K_WHERE, unpack(where))
  redis.call('ZADD', K_INFLIGHT, unpack(inflight))
  redis.call('HSET', K_ATTEMPTS, unpack(attempts))
  redis.call('HSET', K_REV, unpack(revs))
end
return reply
