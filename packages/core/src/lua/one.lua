-- Floodgate one-decision main: a consume of ONE request, of one subject on one limit of a rate or
-- window algorithm (not a lease), with a plain cost: the call most decisions make, and nothing else
-- defined or parsed. stores/redis/protocol.ts (encodeCallOf) sends a call here only when it has that
-- shape; every other call goes to lean.lua or main.lua. One script per algorithm: its chunk, without
-- refund and debit, before this file, and the prelude without its write cache (this file's helpers
-- write straight to Redis, as the prelude's do for one request: DIRECT).
--   KEYS[1]   the subject's state key
--   ARGV      capacity, period (periodArg: a number, or a calendar window's boundaries), the cost
--             when it is not 1 (none: 1, the common request), then with the UNSAFE test clock (tests
--             only) the cost always and the clock in ms fourth; no mode (consume), no algorithm id
--             (the script's own chunk). Each ARGV costs Redis about 1k instructions a call.
--   reply     lean.lua's for one request: the clock in ms, allowed, remaining, resetMs, retryAfterMs;
--             a subject's own error: the clock, -1, its text, 0, 0
-- Clock     redis.call('TIME') unless the fourth ARGV. Writes, expiry and errors exactly as lean.lua's
--           (and main.lua's) for the same call: the same chunk's check decides and its commit writes.
-- Redis runs the whole body on every call and every closure, table and string made costs each call,
-- so the main part below is straight code: no decide closure, no CHECK table, no reply grown in a loop.
-- optional: hmget
local function hmget(key, a, b, c)
  if c then return redis.call('HMGET', key, a, b, c) end
  return redis.call('HMGET', key, a, b)
end
-- optional: hsave
-- `ttlMs` false: the key keeps its expiry (see the prelude's windowTtl).
local function hsave(key, ttlMs, a, va, b, vb, c, vc)
  if c then redis.call('HSET', key, a, va, b, vb, c, vc) else redis.call('HSET', key, a, va, b, vb) end
  if ttlMs then redis.call('PEXPIRE', key, ttlMs) end
end
-- optional: sget
local function sget(key)
  return redis.call('GET', key)
end
-- optional: ssave
local function ssave(key, value, ttlMs)
  redis.call('SET', key, value, 'PX', ttlMs)
end
-- optional: expire
local function expire(key, ttlMs)
  redis.call('PEXPIRE', key, ttlMs)
end
-- one: main (the chunk goes before this line)
local now, cost = nil, 1
local argc = #ARGV
if argc > 2 then cost = tonumber(ARGV[3]) end
if argc > 3 then
  now = tonumber(ARGV[4])
else
  -- TIME's two strings read by arithmetic, which converts them as tonumber would without its C call.
  local t = redis.call('TIME')
  now = t[1] * 1000 + floor(t[2] / 1000)
end
local key, cap, period = KEYS[1], tonumber(ARGV[1]), ARGV[2]
-- A capacity of 0 admits nothing and reads nothing (lean.lua's decide).
if cap == 0 then return { now, 0, 0, 0, 0 } end
period = tonumber(period) or period
-- Under pcall: a subject's own failure is its answer, a refusal of the server fails the call (main.lua's Errors).
local ok, allowed, remaining, reset, retry, f, a, b, d, e = pcall(check, key, now, cap, period, cost)
if ok and allowed == 1 then
  local written, why = pcall(f, key, a, b, d, e)
  if not written then ok, allowed = false, why end
end
if ok then return { now, allowed, remaining, reset, retry } end
-- Not ok: `allowed` holds the error.
local err = allowed
if type(err) == 'table' then err = err.err end
err = tostring(err)
local code = string.match(err, '^(%u+)[ ]')
if code and code ~= 'WRONGTYPE' then error({ err = err }) end
return { now, -1, err, 0, 0 }
