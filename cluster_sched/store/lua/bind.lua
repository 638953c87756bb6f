-- bind.lua: the pods/binding subresource, for many pods in one call.
--
-- Each binding is checked and written atomically and independently of the others, with
-- the API server's rules: the pod must exist, have the expected uid (a re-created pod
-- has another), not be terminating, not be scheduling-gated, and not be assigned yet.
-- That last check is what keeps a pod from ever being bound twice, however many binders
-- race. On success spec.nodeName is set, status.nominatedNodeName cleared
-- (ClearingNominatedNodeNameAfterBinding), the PodScheduled condition set to True (left
-- as it is when already True, as UpdatePodCondition keeps it), resourceVersion bumped
-- and a MODIFIED event appended. Each map involved is scanned once and all changes are
-- spliced in one pass; untouched bytes are copied as they are.
--
-- Two things the API server does not do, so that no crash between two writes can break
-- an invariant: the Scheduled Event is appended to the Event stream in this same script
-- (a binder dying after the binding cannot lose it), and a binding that would over-commit
-- the node is refused (code 7, with an OverCommit Warning Event). The check reads the
-- node's allocatable (KEYS[5], kept by apply) and the requests of the pods bound there
-- (KEYS[6], kept here, by delete.lua and by apply of bound pods): O(resources), no scan.
-- A node with no allocatable recorded (not in the store) is not checked.
--
-- KEYS[1]     resourceVersion counter   ({cs}:rv)
-- KEYS[2]     watch event stream        ({cs}:events)
-- KEYS[3]     pod hash                  ({cs}:obj:Pod)
-- KEYS[4]     Event stream              ({cs}:kevents)
-- KEYS[5]     node -> allocatable       ({cs}:alloc)
-- KEYS[6]     node -> requested sums    ({cs}:noderequested)
-- KEYS[7]     pod -> its node, requests ({cs}:podrequested)
-- ARGV[1]     approximate MAXLEN of the event stream
-- ARGV[2]     the kind written into events ("Pod")
-- ARGV[3]     msgpack PodScheduled=True condition map (with lastTransitionTime)
-- ARGV[4]     msgpack array of bindings {pod field ("ns/name"), node, uid ("" = any),
--             requests {resource: int}, skip}: skip nil = no over-commit check for this
--             binding, else the array of requested resources the check ignores (those
--             the profile's NodeResourcesFit ignores)
-- ARGV[5]     approximate MAXLEN of the Event stream
-- ARGV[6]     the Events' time (RFC 3339, microseconds)
-- ARGV[7]     "1": append a Scheduled Event per binding; "0": none
-- ARGV[8]     the binder's mark ("" or absent: none). When set, each binding's MODIFIED
--             entry also carries 'by' (the mark), 'node' and 'cond' (ARGV[3]): with the
--             key and rv that is all bind.lua changed, so the binder's own informer,
--             which knows its mark, rebuilds the bound manifest from the pod it holds
--             instead of decoding 'obj' (scheduler/own_bindings.py). A refused binding
--             writes no entry, so a mark only ever names a binding that was made.
-- Without a skip entry a binding is made as the API server makes it; its requests are
-- counted either way.
-- Returns     msgpack array, three entries per binding: code, rv, detail
--             0 bound (rv, event id)        1 not found
--             2 uid mismatch (stored uid)   3 already assigned (its node)
--             4 terminating                 5 scheduling gated
--             6 unreadable (parse error)    7 over-committed (message)

-- The object is walked once: the root's metadata, spec and status maps are scanned in
-- the root's pass (mp_scan with nested key sets).
local ROOT_KEYS = mp_keys({
  metadata = mp_keys({uid = true, deletionTimestamp = true, resourceVersion = true}),
  spec = mp_keys({nodeName = true, schedulingGates = true}),
  status = mp_keys({nominatedNodeName = true, conditions = true}),
})

-- Edits setting PodScheduled=True in the conditions array at cp.
local function edit_conditions(edits, s, cp, cond)
  local hl, _, n = mp_head(s, cp)
  local q = cp + hl
  for _ = 1, n do
    local e = mp_skip(s, q)
    local tv = mp_find(s, q, 'type')
    if tv and mp_str(s, tv) == 'PodScheduled' then
      local sv = mp_find(s, q, 'status')
      if not (sv and mp_str(s, sv) == 'True') then mp_edit(edits, q, e - q, cond, 3) end
      return
    end
    q = e
  end
  mp_edit(edits, q, 0, cond, 3)
  mp_edit(edits, cp, hl, mp_array_header(n + 1), 2)
end

-- code, detail, new bytes
local function bind_one(s, node, uid, cond, rv)
  local root = mp_scan(s, 1, ROOT_KEYS)
  if not root then error('msgpack: object is not a map') end
  local md = root.m.metadata
  if not md then error('metadata is not a map') end
  local stored_uid = (md.v.uid and mp_str(s, md.v.uid)) or ''
  if uid ~= '' and stored_uid ~= uid then return 2, stored_uid end
  local dt = md.v.deletionTimestamp
  if dt and string.byte(s, dt) ~= 0xc0 then return 4, '' end
  local spec = root.m.spec or nil
  if spec then
    local assigned = (spec.v.nodeName and mp_str(s, spec.v.nodeName)) or ''
    if assigned ~= '' then return 3, assigned end
    local gates = spec.v.schedulingGates
    if gates then
      local _, gt, gn = mp_head(s, gates)
      if gt == MP_ARRAY and gn > 0 then return 5, '' end
    end
  end

  local edits = {}
  local node_bytes = mp_enc_str(node)
  if spec then
    mp_edit_set(edits, s, spec, 'nodeName', node_bytes, 1)
    mp_edit_header(edits, spec, 1)
  else
    mp_edit_set(edits, s, root, 'spec', mp_map_header(1) .. mp_enc_str('nodeName') .. node_bytes, 0)
  end
  local status = root.m.status or nil
  local fresh = mp_array_header(1) .. cond
  if status then
    mp_edit_del(edits, s, status, 'nominatedNodeName', 1)
    local cp = status.v.conditions
    if cp and select(2, mp_head(s, cp)) == MP_ARRAY then
      edit_conditions(edits, s, cp, cond)
    else
      mp_edit_set(edits, s, status, 'conditions', fresh, 2)
    end
    mp_edit_header(edits, status, 1)
  else
    mp_edit_set(edits, s, root, 'status', mp_map_header(1) .. mp_enc_str('conditions') .. fresh, 0)
  end
  mp_edit_set(edits, s, md, 'resourceVersion', mp_enc_str(tostring(rv)), 1)
  mp_edit_header(edits, md, 1)
  mp_edit_header(edits, root, 0)
  return 0, '', mp_splice(s, edits)
end

-- The first resource the pod cannot get on ``node`` and its message, or nil.
local NO_SKIP = {}
local function over_commit(node, reqs, used, skip, raw)
  if not raw then return nil end
  local alloc = cmsgpack.unpack(raw)
  local ignored = NO_SKIP
  if #skip > 0 then
    ignored = {}
    for _, r in ipairs(skip) do ignored[r] = true end
  end
  local names = {}
  for r, q in pairs(reqs) do
    if r ~= 'pods' and q > 0 and not ignored[r] then names[#names + 1] = r end
  end
  table.sort(names)
  if alloc.pods then table.insert(names, 1, 'pods') end
  for _, r in ipairs(names) do
    local q = (r == 'pods') and 1 or reqs[r]
    local have, cap = used[r] or 0, alloc[r] or 0
    if have + q > cap then
      return r, string.format('node %s would be over-committed: %s requested by bound pods %s + %s > allocatable %s',
        node, r, tostring(have), tostring(q), tostring(cap))
    end
  end
  return nil
end

local function event(field, reason, etype, message, time)
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], '*', 'kind', 'Pod', 'key', field,
    'type', etype, 'reason', reason, 'action', '', 'message', message, 'time', time)
end

local out = {}
local maxlen, kind, cond = ARGV[1], ARGV[2], ARGV[3]
local items = cmsgpack.unpack(ARGV[4])
local time, with_events = ARGV[6], ARGV[7] == '1'
local mark = ARGV[8] or ''
if #items == 0 then return cmsgpack.pack(out) end
-- Reads are made once for the whole call (HMGET), not per binding. What this script
-- writes is read back from the tables it keeps: a pod's object once bound (`written`),
-- a node's requested sums once counted (`used_of`, decoded); allocatable is not
-- written here. So a pod or node met twice in one call sees the first binding, as
-- with one HGET per binding.
local fields, nodes, fit = {}, {}, false
for i = 1, #items do
  fields[i], nodes[i] = items[i][1], items[i][2]
  if type(items[i][5]) == 'table' then fit = true end
end
-- HMGET of `names`, in calls of at most 1000 (unpack's stack stays small).
local function hmget(key, names)
  local got = {}
  for first = 1, #names, 1000 do
    local part = redis.call('HMGET', key, unpack(names, first, math.min(first + 999, #names)))
    for j = 1, #part do got[first + j - 1] = part[j] end
  end
  return got
end
local stored = hmget(KEYS[3], fields)
local used_raw = hmget(KEYS[6], nodes)
local alloc_raw = fit and hmget(KEYS[5], nodes) or {}
local written, used_of = {}, {}
-- The counter is read once; each binding made INCRs it (so it is exact after every
-- write, however the script ends) and ``last_rv`` follows it.
local last_rv = tonumber(redis.call('GET', KEYS[1]) or '0')
for i = 1, #items do
  local field, node, uid, reqs, skip = items[i][1], items[i][2], items[i][3], items[i][4], items[i][5]
  if type(reqs) ~= 'table' then reqs = {} end
  local old = written[field] or stored[i]
  if not old then
    out[#out + 1] = 1
    out[#out + 1] = 0
    out[#out + 1] = ''
  else
    -- Decide before INCR: a refused binding must not consume a resourceVersion.
    local rv = last_rv + 1
    local ok, code, detail, obj = pcall(bind_one, old, node, uid, cond, rv)
    local used
    if ok and code == 0 then
      used = used_of[node]
      if not used then
        used = used_raw[i] and cmsgpack.unpack(used_raw[i]) or {}
      end
    end
    if ok and code == 0 and type(skip) == 'table' then
      local res, why = over_commit(node, reqs, used, skip, alloc_raw[i])
      if res then
        code, detail = 7, why
        event(field, 'OverCommit', 'Warning', 'Binding rejected: ' .. why, time)
      end
    end
    if not ok then
      out[#out + 1] = 6
      out[#out + 1] = 0
      out[#out + 1] = tostring(code)
    elseif code ~= 0 then
      out[#out + 1] = code
      out[#out + 1] = 0
      out[#out + 1] = detail
    else
      redis.call('INCR', KEYS[1])
      last_rv = rv
      redis.call('HSET', KEYS[3], field, obj)
      written[field] = obj
      local id
      if mark ~= '' then
        id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*',
          'type', 'MODIFIED', 'kind', kind, 'key', field, 'rv', rv, 'obj', obj,
          'by', mark, 'node', node, 'cond', cond)
      else
        id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*',
          'type', 'MODIFIED', 'kind', kind, 'key', field, 'rv', rv, 'obj', obj)
      end
      for r, q in pairs(reqs) do
        if r ~= 'pods' then used[r] = (used[r] or 0) + q end
      end
      used.pods = (used.pods or 0) + 1
      used_of[node] = used
      redis.call('HSET', KEYS[6], node, cmsgpack.pack(used))
      redis.call('HSET', KEYS[7], field, cmsgpack.pack({node, reqs}))
      if with_events then
        event(field, 'Scheduled', 'Normal', 'Successfully assigned ' .. field .. ' to ' .. node, time)
      end
      out[#out + 1] = 0
      out[#out + 1] = rv
      out[#out + 1] = id
    end
  end
end
return cmsgpack.pack(out)
