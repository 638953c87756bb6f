-- _msgpack.lua: a byte-level msgpack walker, prepended to every store script.
--
-- Not an operation (scripts.py concatenates it in front of each script body). Scripts
-- edit stored objects by splicing bytes instead of decoding with cmsgpack, because a
-- cmsgpack round trip is lossy for manifests: {} comes back as [], nil values vanish and
-- large integers lose precision. Only the fields an operation touches are parsed; every
-- other byte is copied as it was.
--
-- Positions are 1-based byte offsets. A malformed buffer raises a Lua error, which the
-- scripts catch with pcall and report as "unreadable". Map keys are expected to be strings
-- (other keys are skipped, never matched).

local MP_SCALAR, MP_ARRAY, MP_MAP, MP_STR = 0, 1, 2, 3

local function mp_u16(s, p)
  local a, b = string.byte(s, p, p + 1)
  return a * 256 + b
end

local function mp_u32(s, p)
  local a, b, c, d = string.byte(s, p, p + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- Header at p: header length, type, and n = payload bytes (scalars, strings), elements
-- (arrays) or key/value pairs (maps).
local function mp_head(s, p)
  local b = string.byte(s, p)
  if b == nil then error('msgpack: truncated at byte ' .. p) end
  if b < 0x80 or b >= 0xe0 then return 1, MP_SCALAR, 0 end
  if b < 0x90 then return 1, MP_MAP, b - 0x80 end
  if b < 0xa0 then return 1, MP_ARRAY, b - 0x90 end
  if b < 0xc0 then return 1, MP_STR, b - 0xa0 end
  if b == 0xc0 or b == 0xc2 or b == 0xc3 then return 1, MP_SCALAR, 0 end
  if b == 0xc4 then return 2, MP_SCALAR, string.byte(s, p + 1) end
  if b == 0xc5 then return 3, MP_SCALAR, mp_u16(s, p + 1) end
  if b == 0xc6 then return 5, MP_SCALAR, mp_u32(s, p + 1) end
  if b == 0xc7 then return 3, MP_SCALAR, string.byte(s, p + 1) end
  if b == 0xc8 then return 4, MP_SCALAR, mp_u16(s, p + 1) end
  if b == 0xc9 then return 6, MP_SCALAR, mp_u32(s, p + 1) end
  if b == 0xca then return 1, MP_SCALAR, 4 end
  if b == 0xcb then return 1, MP_SCALAR, 8 end
  if b <= 0xcf then return 1, MP_SCALAR, 2 ^ (b - 0xcc) end      -- uint 8..64
  if b <= 0xd3 then return 1, MP_SCALAR, 2 ^ (b - 0xd0) end      -- int 8..64
  if b <= 0xd8 then return 1, MP_SCALAR, 2 ^ (b - 0xd4) + 1 end  -- fixext 1..16
  if b == 0xd9 then return 2, MP_STR, string.byte(s, p + 1) end
  if b == 0xda then return 3, MP_STR, mp_u16(s, p + 1) end
  if b == 0xdb then return 5, MP_STR, mp_u32(s, p + 1) end
  if b == 0xdc then return 3, MP_ARRAY, mp_u16(s, p + 1) end
  if b == 0xdd then return 5, MP_ARRAY, mp_u32(s, p + 1) end
  if b == 0xde then return 3, MP_MAP, mp_u16(s, p + 1) end
  if b == 0xdf then return 5, MP_MAP, mp_u32(s, p + 1) end
  error('msgpack: invalid type byte ' .. b .. ' at byte ' .. p)
end

-- Position just after the value at p (iterative: containers only add to the count). The
-- one-byte headers manifests are made of (fixstr, fixint, fixmap, fixarray) are read
-- inline; the others through mp_head.
local function mp_skip(s, p)
  local pending = 1
  local byte = string.byte
  while pending > 0 do
    local b = byte(s, p)
    pending = pending - 1
    if b == nil then error('msgpack: truncated at byte ' .. p) end
    if b >= 0xa0 and b < 0xc0 then
      p = p + 1 + (b - 0xa0)
    elseif b < 0x80 or b >= 0xe0 then
      p = p + 1
    elseif b < 0x90 then
      pending = pending + 2 * (b - 0x80)
      p = p + 1
    elseif b < 0xa0 then
      pending = pending + (b - 0x90)
      p = p + 1
    else
      local hl, t, n = mp_head(s, p)
      if t == MP_ARRAY then
        pending = pending + n
        p = p + hl
      elseif t == MP_MAP then
        pending = pending + 2 * n
        p = p + hl
      else
        p = p + hl + n
      end
    end
  end
  if p - 1 > #s then error('msgpack: truncated value') end
  return p
end

local function mp_is_map(s, p)
  local _, t = mp_head(s, p)
  return t == MP_MAP
end

-- The string at p, or nil if the value there is not a string.
local function mp_str(s, p)
  local hl, t, n = mp_head(s, p)
  if t ~= MP_STR then return nil end
  if p + hl + n - 1 > #s then error('msgpack: truncated string') end
  return string.sub(s, p + hl, p + hl + n - 1)
end

-- In the map at p: (value position, pair position) of key; (nil, end of map) if absent;
-- (nil, nil) if the value at p is not a map.
local function mp_find(s, p, key)
  local hl, t, n = mp_head(s, p)
  if t ~= MP_MAP then return nil, nil end
  local q = p + hl
  local klen = #key
  for _ = 1, n do
    local khl, kt, kn = mp_head(s, q)
    local vp
    if kt == MP_STR then
      vp = q + khl + kn
      if kn == klen and string.sub(s, q + khl, vp - 1) == key then return vp, q end
    else
      vp = mp_skip(s, q)
    end
    q = mp_skip(s, vp)
  end
  return nil, q
end

local function mp_be(n, width)
  local out = {}
  for i = width, 1, -1 do
    out[i] = n % 256
    n = math.floor(n / 256)
  end
  return string.char(unpack(out))
end

local function mp_map_header(n)
  if n < 16 then return string.char(0x80 + n) end
  if n < 65536 then return string.char(0xde) .. mp_be(n, 2) end
  return string.char(0xdf) .. mp_be(n, 4)
end

local function mp_array_header(n)
  if n < 16 then return string.char(0x90 + n) end
  if n < 65536 then return string.char(0xdc) .. mp_be(n, 2) end
  return string.char(0xdd) .. mp_be(n, 4)
end

local function mp_enc_str(v)
  local n = #v
  if n < 32 then return string.char(0xa0 + n) .. v end
  if n < 256 then return string.char(0xd9, n) .. v end
  if n < 65536 then return string.char(0xda) .. mp_be(n, 2) .. v end
  return string.char(0xdb) .. mp_be(n, 4) .. v
end

-- s with key set to the encoded value vbytes in the map at p (replaced or appended).
local function mp_map_set(s, p, key, vbytes)
  local vp, q = mp_find(s, p, key)
  if vp then
    return string.sub(s, 1, vp - 1) .. vbytes .. string.sub(s, mp_skip(s, vp))
  end
  if q == nil then error('msgpack: not a map at byte ' .. p) end
  local hl, _, n = mp_head(s, p)
  return string.sub(s, 1, p - 1) .. mp_map_header(n + 1) .. string.sub(s, p + hl, q - 1)
    .. mp_enc_str(key) .. vbytes .. string.sub(s, q)
end

-- s without key in the map at p (unchanged if absent).
local function mp_map_del(s, p, key)
  local vp, q = mp_find(s, p, key)
  if not vp then return s end
  local hl, _, n = mp_head(s, p)
  return string.sub(s, 1, p - 1) .. mp_map_header(n - 1) .. string.sub(s, p + hl, q - 1)
    .. string.sub(s, mp_skip(s, vp))
end

-- Position of the value at path {k1, k2, ...} from the root map, or nil.
local function mp_get_in(s, path)
  local p = 1
  for i = 1, #path do
    p = mp_find(s, p, path[i])
    if not p then return nil end
  end
  return p
end

-- s with the value at path set to vbytes; missing (or non-map) parents become maps.
local function mp_set_in(s, path, vbytes)
  local p = 1
  for i = 1, #path - 1 do
    local vp = mp_find(s, p, path[i])
    if not vp or not mp_is_map(s, vp) then
      local nested = vbytes
      for j = #path, i + 1, -1 do
        nested = mp_map_header(1) .. mp_enc_str(path[j]) .. nested
      end
      return mp_map_set(s, p, path[i], nested)
    end
    p = vp
  end
  return mp_map_set(s, p, path[#path], vbytes)
end

-- s without the value at path (unchanged if any part is missing).
local function mp_del_in(s, path)
  local parent = 1
  if #path > 1 then
    local sub = {}
    for i = 1, #path - 1 do sub[i] = path[i] end
    parent = mp_get_in(s, sub)
    if not parent or not mp_is_map(s, parent) then return s end
  end
  return mp_map_del(s, parent, path[#path])
end

-- The resourceVersion stored in object s ("" if it has none); errors unless s is a map.
local function mp_object_rv(s)
  if not mp_is_map(s, 1) then error('msgpack: object is not a map') end
  local vp = mp_get_in(s, {'metadata', 'resourceVersion'})
  return (vp and mp_str(s, vp)) or ''
end

-- s with metadata.resourceVersion set to rv (a number).
local function mp_stamp_rv(s, rv)
  if not mp_is_map(s, 1) then error('msgpack: object is not a map') end
  return mp_set_in(s, {'metadata', 'resourceVersion'}, mp_enc_str(tostring(rv)))
end

-- A key set for mp_scan: `keys` maps each wanted key to true, or to the key set of the
-- map expected as its value (scanned in the same pass); the lengths of the keys are
-- added as numeric entries, so that a key of another length is never copied out of the
-- buffer to be compared (copying a string is the walker's dearest step).
local function mp_keys(keys)
  local lens = {}
  for k in pairs(keys) do lens[#k] = true end
  for n in pairs(lens) do keys[n] = true end
  return keys
end

-- One pass over the map at p, noting where the keys in `wanted` (an mp_keys set) are:
-- {hl = header length, n = pairs, stop = end of the map, v = {key = value position},
--  k = {key = pair position}, m = {key = scan of the value}, delta = pairs added minus
-- removed by edits}; nil if the value at p is not a map. A key whose set entry is itself
-- a key set has its value scanned with it in the same pass (m[key]: that scan, false if
-- the value is not a map), so no part of the buffer is walked twice.
local function mp_scan(s, p, wanted)
  local hl, t, n = mp_head(s, p)
  if t ~= MP_MAP then return nil end
  local v, k, m = {}, {}, {}
  local info = {p = p, hl = hl, n = n, v = v, k = k, m = m, delta = 0}
  local q = p + hl
  local byte, sub = string.byte, string.sub
  for _ = 1, n do
    local b = byte(s, q)
    local khl, kt, kn
    if b and b >= 0xa0 and b < 0xc0 then
      khl, kt, kn = 1, MP_STR, b - 0xa0
    else
      khl, kt, kn = mp_head(s, q)
    end
    local vp
    if kt == MP_STR then
      vp = q + khl + kn
      local sub_keys = nil
      if wanted[kn] then
        local key = sub(s, q + khl, vp - 1)
        local w = wanted[key]
        if w then
          v[key] = vp
          k[key] = q
          if w ~= true then sub_keys = w; m[key] = false end
        end
        if sub_keys then
          local child = mp_scan(s, vp, sub_keys)
          if child then
            m[key] = child
            q = child.stop
          else
            q = mp_skip(s, vp)
          end
        else
          q = mp_skip(s, vp)
        end
      else
        q = mp_skip(s, vp)
      end
    else
      vp = mp_skip(s, q)
      q = mp_skip(s, vp)
    end
  end
  if q - 1 > #s then error('msgpack: truncated value') end
  info.stop = q
  return info
end

-- Edits are {position, bytes replaced, new bytes, depth}; mp_splice applies them all in
-- one pass. They must not overlap; zero-length inserts at the same position go deepest
-- first (a pair appended to an inner map precedes one appended to its parent).
local function mp_edit(edits, pos, len, bytes, depth)
  edits[#edits + 1] = {pos, len, bytes, depth}
end

-- Set key in the scanned map `info` (replace its value or append a pair).
local function mp_edit_set(edits, s, info, key, vbytes, depth)
  local vp = info.v[key]
  if vp then
    mp_edit(edits, vp, mp_skip(s, vp) - vp, vbytes, depth)
  else
    mp_edit(edits, info.stop, 0, mp_enc_str(key) .. vbytes, depth)
    info.delta = info.delta + 1
  end
end

-- Remove key from the scanned map `info` if present.
local function mp_edit_del(edits, s, info, key, depth)
  local kp = info.k[key]
  if kp then
    mp_edit(edits, kp, mp_skip(s, info.v[key]) - kp, '', depth)
    info.delta = info.delta - 1
  end
end

-- Rewrite the scanned map's header if edits changed its number of pairs.
local function mp_edit_header(edits, info, depth)
  if info.delta ~= 0 then
    mp_edit(edits, info.p, info.hl, mp_map_header(info.n + info.delta), depth)
  end
end

local function mp_edit_order(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  if a[4] ~= b[4] then return a[4] > b[4] end
  return a[2] < b[2]
end

local function mp_splice(s, edits)
  table.sort(edits, mp_edit_order)
  local out, cur = {}, 1
  for i = 1, #edits do
    local e = edits[i]
    out[#out + 1] = string.sub(s, cur, e[1] - 1)
    out[#out + 1] = e[3]
    cur = e[1] + e[2]
  end
  out[#out + 1] = string.sub(s, cur)
  return table.concat(out)
end
