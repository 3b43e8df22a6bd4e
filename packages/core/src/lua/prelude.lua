-- Floodgate prelude: helpers shared by every algorithm chunk. Concatenated before the chunks.
local EPSILON = 1e-9
local CHECK, REFUND = {}, {}
-- Doubles survive a round trip through a Redis string only with 17 significant digits.
local function fmt(x) return string.format('%.17g', x) end
-- A TTL is always a positive whole number of ms: no key is ever written without an expiry.
local function ttl(ms) return math.max(1, math.ceil(ms)) end
-- State cache for one script call. When one call decides several requests of a subject (coalesced),
-- each key is read once and written once, when the script ends, with the TTL of its last write;
-- every request still sees exactly what a read after the previous request's write would return.
-- Keys written are flushed in the order they were first written (flush, in main).
local CACHE, DIRTY, ORDER = {}, {}, {}
local function mark(key, write)
  if DIRTY[key] == nil then ORDER[#ORDER + 1] = key end
  DIRTY[key] = write
end
-- HMGET through the cache: a false entry is a missing field, as HMGET returns it.
local function hmget(key, ...)
  local fields = { ... }
  local c = CACHE[key]
  if c == nil then
    local v = redis.call('HMGET', key, unpack(fields))
    c = {}
    for i = 1, #fields do c[fields[i]] = v[i] end
    CACHE[key] = c
  end
  local out = {}
  for i = 1, #fields do out[i] = c[fields[i]] end
  return out
end
-- Replaces a hash's state (field, value pairs of strings) and its TTL in ms: HSET + PEXPIRE at the end.
local function hsave(key, ttlMs, ...)
  local args = { ... }
  local c = {}
  for i = 1, #args, 2 do c[args[i]] = args[i + 1] end
  CACHE[key] = c
  mark(key, { args = args, ttl = ttlMs })
end
-- GET through the cache (false when absent, as GET returns it).
local function sget(key)
  local c = CACHE[key]
  if c == nil then
    c = { v = redis.call('GET', key) }
    CACHE[key] = c
  end
  return c.v
end
-- Replaces a string's value and its TTL in ms: SET PX at the end.
local function ssave(key, value, ttlMs)
  CACHE[key] = { v = value }
  mark(key, { value = value, ttl = ttlMs })
end
-- Drops a hash or string state (DEL at the end): reads through the cache then find it absent.
local function forget(key)
  CACHE[key] = {}
  mark(key, { del = true })
end
local function flush()
  for i = 1, #ORDER do
    local key = ORDER[i]
    local w = DIRTY[key]
    if w.del then
      redis.call('DEL', key)
    elseif w.args then
      redis.call('HSET', key, unpack(w.args))
      redis.call('PEXPIRE', key, w.ttl)
    else
      redis.call('SET', key, w.value, 'PX', w.ttl)
    end
  end
end
