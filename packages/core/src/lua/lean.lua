-- Floodgate lean main: main.lua's protocol for the calls most decisions make, and nothing else
-- defined or parsed: consume ('c') or peek ('p'), each subject ONE limit, no lock-out, no override,
-- optionally several subjects ('M', every group header '1' or '=') and the test clock ('T').
-- stores/redis/protocol.ts (encodeGroupsOf) sends a call here only when it has that shape; every
-- other call goes to main.lua. KEYS, ARGV and the reply are main.lua's (protocol.ts defines them):
--   KEYS      each subject's state key, in order
--   ARGV[1]   'c' or 'p', then the flags 'M' and 'T' if any
--   ARGV      one subject: costs, algorithm id, capacity, period (ARGV[2..5]); with 'M', per group
--             '1', costs, id, capacity, period, or '=' and costs (the limit of the group before);
--             with 'T', the UNSAFE test clock last
--   reply     the clock in ms, then per request: allowedAll, lockedMs (0), allowed, remaining,
--             resetMs, retryAfterMs
-- Clock     redis.call('TIME') unless 'T'. Writes, expiry and a subject's own errors exactly as in
--           main.lua: the same chunks' check() decides, the prelude's cache writes at the end.
-- Redis runs the whole body on every call and every closure and table it makes costs each call:
-- the composer leaves the chunks' refund, debit, release and renew out of this script.
local mode = ARGV[1]
local lastArg = #ARGV
local many, now = false, nil
if #mode > 1 then
  many = string.find(mode, 'M', 2, true)
  if string.find(mode, 'T', 2, true) then
    now = tonumber(ARGV[lastArg])
    lastArg = lastArg - 1
  end
  mode = string.sub(mode, 1, 1)
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
local commit = mode == 'c'
local out = { now, 0, 0, 0, 0, 0, 0 }
local n = 1
-- `n` after the last request decide() answered in full (see `guarded`).
local done = 1
-- One subject's requests on its one limit, in arrival order (main.lua's decide for this shape).
local function decide(key, costs, id, cap, period)
  local pos = 1
  while pos do
    local sep = string.find(costs, ',', pos, true)
    local c = costs
    if sep then
      c, pos = string.sub(costs, pos, sep - 1), sep + 1
    else
      if pos > 1 then c = string.sub(costs, pos) end
      pos = nil
    end
    -- `cost`, or `cost:token` (a lease's).
    local cost, token = tonumber(c), nil
    if not cost then
      local colon = string.find(c, ':', 1, true)
      cost, token = tonumber(string.sub(c, 1, colon - 1)), string.sub(c, colon + 1)
    end
    local allowed, remaining, reset, retry, f, a, b, d, e = 0, 0, 0, 0, nil, nil, nil, nil, nil
    if cap ~= 0 then allowed, remaining, reset, retry, f, a, b, d, e = CHECK[id](key, now, cap, period, cost, token) end
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5], out[n + 6] = allowed, 0, allowed, remaining, reset, retry
    n = n + 6
    if allowed == 1 and commit then f(key, a, b, d, e) end
    done = n
  end
end
-- decide(), with a subject's own failure kept to its requests not yet answered (main.lua's Errors).
local function guarded(key, costs, id, cap, period)
  local start = n
  done = n
  local ok, e = pcall(decide, key, costs, id, cap, period)
  if ok then return end
  if type(e) == 'table' then e = e.err end
  e = tostring(e)
  local code = string.match(e, '^(%u+)[ ]')
  if code and code ~= 'WRONGTYPE' then error({ err = e }) end
  local left = 1
  for _ in string.gmatch(costs, ',') do left = left + 1 end
  left = left - (done - start) / 6
  n = done
  for _ = 1, left do
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5], out[n + 6] = -1, e, 0, 0, 0, 0
    n = n + 6
  end
end
-- A limit's ARGV: id, capacity, period (a number, or a calendar window's boundaries, which its chunk reads).
local a0 = 3
if many then a0 = 4 end
local id, cap, period = tonumber(ARGV[a0]), tonumber(ARGV[a0 + 1]), ARGV[a0 + 2]
period = tonumber(period) or period
if many then
  local arg, k = 2, 1
  while arg <= lastArg do
    if ARGV[arg] == '=' then
      guarded(KEYS[k], ARGV[arg + 1], id, cap, period)
      arg = arg + 2
    else
      if arg > 2 then
        id, cap, period = tonumber(ARGV[arg + 2]), tonumber(ARGV[arg + 3]), ARGV[arg + 4]
        period = tonumber(period) or period
      end
      guarded(KEYS[k], ARGV[arg + 1], id, cap, period)
      arg = arg + 5
    end
    k = k + 1
  end
else
  guarded(KEYS[1], ARGV[2], id, cap, period)
end
flush()
return out
