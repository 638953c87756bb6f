-- _lib.lua: helpers shared by the queue scripts. cluster_sched/queue/scripts.py prepends
-- this file to every queue script, so each script still runs as one atomic unit.
--
-- KEYS (every queue script takes QueueKeys.core in this order):
--   KEYS[1]  active         ZSET  "<tiebreak>\0<pod key>" -> QueueSort score
--   KEYS[2]  backoff        ZSET  pod key -> backoff expiry (s)
--   KEYS[3]  unschedulable  ZSET  pod key -> time it entered the pool (s)
--   KEYS[4]  in-flight      ZSET  pod key -> time it was popped (s)
--   KEYS[5]  info           HASH  pod key -> msgpack QueuedPodInfo
--   KEYS[6]  attempts       HASH  pod key -> pops so far
--   KEYS[7]  sortkey        HASH  pod key -> "<score>\n<member>" of its activeQ entry
--   KEYS[8]  where          HASH  pod key -> active | backoff | unschedulable | inflight
--   KEYS[9]  rev            HASH  pod key -> revision (changes on every write)
--   KEYS[10] cycle          STRING scheduling cycle (pops so far)
--   KEYS[11] move_cycle     STRING unused since QueueingHints (kept: key positions stay put)
--   KEYS[12] wake           LIST  wake-up tokens for blocked pops
--   KEYS[13] seq            STRING revision source (never reset)
-- Invariant kept by every script: a pod is in at most one of the four ZSETs, and
-- where[pod] names that ZSET.

local K_ACTIVE, K_BACKOFF, K_UNSCHED, K_INFLIGHT = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_INFO, K_ATTEMPTS, K_SORTKEY, K_WHERE = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local K_REV, K_CYCLE, K_MOVE_CYCLE, K_WAKE, K_SEQ = KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13]

-- Enough tokens to wake every realistic number of blocked pops, few enough to bound memory.
local WAKE_TOKENS = 64

local ZSET_OF = {
  active = K_ACTIVE, backoff = K_BACKOFF, unschedulable = K_UNSCHED, inflight = K_INFLIGHT,
}

-- Where the pod is, or nil (HGET answers false for a missing field).
local function location(pod)
  return redis.call('HGET', K_WHERE, pod) or nil
end

local function split_sortkey(value)
  local nl = string.find(value, '\n', 1, true)
  return string.sub(value, 1, nl - 1), string.sub(value, nl + 1)
end

-- Remove the pod from the ZSET it is in (the activeQ member comes from its sort key).
local function detach(pod, loc)
  if loc == 'active' then
    local sortkey = redis.call('HGET', K_SORTKEY, pod)
    if sortkey then
      local _, member = split_sortkey(sortkey)
      redis.call('ZREM', K_ACTIVE, member)
    end
  elseif loc then
    redis.call('ZREM', ZSET_OF[loc], pod)
  end
end

-- Record the pod's activeQ entry; call between detach and attach.
local function set_sortkey(pod, score, member)
  if score ~= '' then
    redis.call('HSET', K_SORTKEY, pod, score .. '\n' .. member)
  end
end

-- Put the pod into dest's ZSET (activeQ uses its recorded sort key) and note where it is.
-- Every writer records a sort key first; should one be missing anyway, the pod still
-- gets a valid activeQ entry (score 0) rather than failing the whole script midway.
local function attach(pod, dest, score)
  if dest == 'active' then
    local sortkey = redis.call('HGET', K_SORTKEY, pod) or ('0\n\0' .. pod)
    local sort_score, member = split_sortkey(sortkey)
    redis.call('ZADD', K_ACTIVE, sort_score, member)
  else
    redis.call('ZADD', ZSET_OF[dest], score, pod)
  end
  redis.call('HSET', K_WHERE, pod, dest)
end

-- New revision: a decision made on an older read of this pod no longer applies.
local function touch(pod)
  redis.call('HSET', K_REV, pod, redis.call('INCR', K_SEQ))
end

local function forget(pod)
  redis.call('HDEL', K_INFO, pod)
  redis.call('HDEL', K_ATTEMPTS, pod)
  redis.call('HDEL', K_SORTKEY, pod)
  redis.call('HDEL', K_WHERE, pod)
  redis.call('HDEL', K_REV, pod)
end

-- Variadic commands take their arguments through Lua's unpack, whose stack is bounded:
-- scripts write in slices of this many pods so any number works.
local SLICE = 1000

-- Upstream Done for pods[first..] (ARGV, or a list the script unpacked): forget each pod
-- still in flight (a pod that went back to a sub-queue in the meantime stays there).
-- Returns how many were forgotten.
-- The same state as one pod after the other (each pod's keys are its own; a key given
-- twice is forgotten once), written per key for a slice of pods: one HMGET, one ZREM
-- and five HDELs instead of seven calls per pod.
local function finish_cycles(pods, first)
  local forgotten, seen = 0, {}
  for s = first, #pods, SLICE do
    local slice = {unpack(pods, s, math.min(s + SLICE - 1, #pods))}
    local where = redis.call('HMGET', K_WHERE, unpack(slice))
    local gone = {}
    for j, pod in ipairs(slice) do
      if where[j] == 'inflight' and not seen[pod] then
        seen[pod] = true
        gone[#gone + 1] = pod
      end
    end
    if #gone > 0 then
      redis.call('ZREM', K_INFLIGHT, unpack(gone))
      redis.call('HDEL', K_INFO, unpack(gone))
      redis.call('HDEL', K_ATTEMPTS, unpack(gone))
      redis.call('HDEL', K_SORTKEY, unpack(gone))
      redis.call('HDEL', K_WHERE, unpack(gone))
      redis.call('HDEL', K_REV, unpack(gone))
      forgotten = forgotten + #gone
    end
  end
  return forgotten
end

local function wake()
  redis.call('LPUSH', K_WAKE, '1')
  redis.call('LTRIM', K_WAKE, 0, WAKE_TOKENS - 1)
end

