-- Floodgate prelude: helpers shared by every algorithm chunk. Concatenated before the chunks.
-- The whole script body runs on every call (Redis keeps no Lua state between calls), so the prelude
-- does as little as it can: the helpers below, six small tables, no work per key until a key is used.
local EPSILON = 1e-9
local CHECK, REFUND, RELEASE, RENEW, DEBIT = {}, {}, {}, {}, {}
-- Shaping (mode 'h'): each rate algorithm's reservation of a future slot (its debit), by id; none for windows and leases.
local HOLD = {}
local format, floor, ceil, max = string.format, math.floor, math.ceil, math.max
-- A helper after an `-- optional: <name>` line is left out of a script none of whose chunks calls it
-- (stores/redis/protocol.ts, compose): each closure defined here costs every call of the script.
-- optional: fmt
-- Doubles survive a round trip through a Redis string only with 17 significant digits. A number
-- passed to redis.call as a number is written by Redis itself with '%.17g' (the same bytes, without
-- a string.format call in Lua): fmt is for numbers concatenated into a string.
local function fmt(x)
  return format('%.17g', x)
end
-- A TTL is always a positive whole number of ms: no key is ever written without an expiry.
local function ttl(ms) return max(1, ceil(ms)) end
-- optional: windowTtl
-- The TTL for a window-aligned state written at `now`: its window `w` and its absolute end `stop`
-- (ms, by Redis's clock). Every write of window w sets the same absolute expiry, so a stored state
-- `s` (HMGET, its window first) of window w already carries it: false, and no PEXPIRE is sent.
local function windowTtl(s, w, now, stop)
  if s[1] and s[1] + 0 == w then return false end
  return ttl(stop - now)
end
-- cache: the write cache and its helpers, up to '-- cache: end'. A script for a call of one
-- decision (lua/one.lua) is composed without them: it defines hmget, hsave... of its own, straight to Redis.
-- State cache for one script call. When one call decides several requests of a subject (coalesced),
-- each key is read once and written once, when the script ends, with the TTL of its last write (or
-- none, when every write of the call keeps the key's own: see hsave);
-- every request still sees exactly what a read after the previous request's write would return.
-- Every table and closure made here is made again on every call: the cache makes one table per key
-- read (Redis's reply itself) and one per key written, nothing per field.
-- CACHE[key]: a hash's values in the order its chunk names the fields (each key belongs to one chunk,
-- or to the lock-out, which always reads and writes its fields in that order); when written, the
-- same table also holds the field names at [4..6] and the TTL at [7] (false: the key keeps its own). A string's cache is { value }
-- or { value, ttl } when written; a set's (expire) is { ttl }. DIRTY[key]: 'h', 's', 'e' (PEXPIRE
-- only) or 'd' (DEL) once written; ORDER: the keys
-- written, in the order they were first written (flush).
local CACHE, DIRTY, ORDER = {}, {}, {}
-- DIRECT: the subject being decided has one request (set by lean.lua, never by main.lua): a hash it
-- writes goes to Redis at once (HSET, PEXPIRE), without the cache's table and flush, and its cache
-- entry is dropped so that a later read of the call sees Redis. A key the call already wrote
-- through the cache stays there, so writes reach Redis in order.
local DIRECT = false
-- HMGET through the cache (2 or 3 fields): a false entry is a missing field, as HMGET returns it.
local function hmget(key, a, b, c)
  local s = CACHE[key]
  if s == nil then
    if c then s = redis.call('HMGET', key, a, b, c) else s = redis.call('HMGET', key, a, b) end
    CACHE[key] = s
  end
  return s
end
-- Replaces a hash's state (2 or 3 field, value pairs; values as numbers) and its TTL in ms: HSET + PEXPIRE at the end.
-- `ttlMs` false: the key's expiry in Redis is already the one this write would set (see windowTtl),
-- so HSET alone, which keeps it; unless an earlier write of this call set a TTL, which then stands.
local function hsave(key, ttlMs, a, va, b, vb, c, vc)
  local kind = DIRTY[key]
  if DIRECT and not kind then
    if c then redis.call('HSET', key, a, va, b, vb, c, vc) else redis.call('HSET', key, a, va, b, vb) end
    if ttlMs then redis.call('PEXPIRE', key, ttlMs) end
    CACHE[key] = nil
    return
  end
  if not kind then ORDER[#ORDER + 1] = key elseif not ttlMs and kind == 'h' then ttlMs = CACHE[key][7] end
  CACHE[key] = { va, vb, vc or false, a, b, c or false, ttlMs }
  DIRTY[key] = 'h'
end
-- optional: sget
-- GET through the cache (false when absent, as GET returns it).
local function sget(key)
  local s = CACHE[key]
  if s == nil then
    s = { redis.call('GET', key) }
    CACHE[key] = s
  end
  return s[1]
end
-- optional: ssave
-- Replaces a string's value and its TTL in ms: SET PX at the end.
local function ssave(key, value, ttlMs)
  CACHE[key] = { value, ttlMs }
  if not DIRTY[key] then ORDER[#ORDER + 1] = key end
  DIRTY[key] = 's'
end
-- optional: forget
-- Drops a hash or string state (DEL at the end): reads through the cache then find it absent.
local function forget(key)
  CACHE[key] = {}
  if not DIRTY[key] then ORDER[#ORDER + 1] = key end
  DIRTY[key] = 'd'
end
-- optional: expire
-- A set's TTL in ms, set once at the end (PEXPIRE): a chunk that writes a ZSET itself (its members
-- cannot wait) and would set the same expiry after each request's write sets it once per call.
local function expire(key, ttlMs)
  CACHE[key] = { ttlMs }
  if not DIRTY[key] then ORDER[#ORDER + 1] = key end
  DIRTY[key] = 'e'
end
local function flush()
  for i = 1, #ORDER do
    local key = ORDER[i]
    local kind, w = DIRTY[key], CACHE[key]
    if kind == 'd' then
      redis.call('DEL', key)
    elseif kind == 'e' then
      redis.call('PEXPIRE', key, w[1])
    elseif kind == 's' then
      redis.call('SET', key, w[1], 'PX', w[2])
    else
      if w[6] then
        redis.call('HSET', key, w[4], w[1], w[5], w[2], w[6], w[3])
      else
        redis.call('HSET', key, w[4], w[1], w[5], w[2])
      end
      if w[7] then redis.call('PEXPIRE', key, w[7]) end
    end
  end
end
-- cache: end
