-- Floodgate lean main: main.lua's protocol for the calls most decisions make, and nothing else
-- defined or parsed: consume ('c') or peek ('p'), each subject ONE limit, no lock-out, no override,
-- optionally several subjects ('M', every group header '1', '=' or '+') and the test clock ('T').
-- stores/redis/protocol.ts (encodeGroupsOf) sends a call here only when it has that shape, and
-- is not a consume of one request (one.lua's); every other call goes to main.lua. KEYS and ARGV are
-- main.lua's (protocol.ts defines them):
--   KEYS      each subject's state key, in order
--   ARGV[1]   'c' or 'p', then the flags 'M' and 'T' if any
--   ARGV      one subject: costs, algorithm id, capacity, period (ARGV[2..5]); with 'M', per group
--             '1', costs, id, capacity, period, or '=' and costs (the limit of the group before), or
--             '+' alone (the limit of the group before, one request of cost 1);
--             with 'T', the UNSAFE test clock last
--   reply     the clock in ms, then per request: allowed, remaining, resetMs, retryAfterMs (main.lua's
--             without allowedAll and lockedMs, which with one limit and no lock-out say nothing more:
--             parseReply reads a lean call's reply so); a subject's own error: -1, its text, 0, 0
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
  -- TIME's two strings read by arithmetic, which converts them as tonumber would without its C call.
  local t = redis.call('TIME')
  now = t[1] * 1000 + floor(t[2] / 1000)
end
local commit = mode == 'c'
-- The reply, sized at once for the common call (one request: 5 entries); longer ones grow.
local out = { now, 0, 0, 0, 0 }
local n = 1
-- `n` after the last request decide() answered in full (see the loop below).
local done = 1
-- One subject's requests on its one limit (`check` its chunk's), in arrival order: main.lua's decide for this shape.
local function decide(key, costs, check, cap, period)
  -- One plain cost, the common call, is a number as it stands; else the entries, split on ','
  -- without an iterator, each `cost` or `cost:token` (a lease's).
  local cost, pos = tonumber(costs), nil
  if not cost then pos = 1 end
  -- One plain cost is one request: its writes need no cache (the prelude's DIRECT).
  DIRECT = not pos
  repeat
    local token = nil
    if pos then
      local sep = string.find(costs, ',', pos, true)
      local c
      if sep then c, pos = string.sub(costs, pos, sep - 1), sep + 1 else c, pos = string.sub(costs, pos), nil end
      cost = tonumber(c)
      if not cost then
        local colon = string.find(c, ':', 1, true)
        cost, token = tonumber(string.sub(c, 1, colon - 1)), string.sub(c, colon + 1)
      end
    end
    local allowed, remaining, reset, retry, f, a, b, d, e = 0, 0, 0, 0, nil, nil, nil, nil, nil
    if cap ~= 0 then allowed, remaining, reset, retry, f, a, b, d, e = check(key, now, cap, period, cost, token) end
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = allowed, remaining, reset, retry
    n = n + 4
    if allowed == 1 and commit then f(key, a, b, d, e) end
    done = n
  until not pos
end
-- Each subject in turn (one, or with 'M' each group), its limit read when sent: id (its chunk's
-- check, registered under the id as ARGV carries it), capacity, period (a number, or a calendar
-- window's boundaries, which its chunk reads). decide() under pcall: a subject's own failure fails
-- its requests not yet answered, never the call (main.lua's Errors).
local arg, k, check, cap, period = 2, 1, nil, 0, nil
while arg <= lastArg do
  local costs
  if not many then
    costs, check, cap, period = ARGV[2], CHECK[ARGV[3]], tonumber(ARGV[4]), ARGV[5]
    period = tonumber(period) or period
    arg = lastArg + 1
  else
    local header = ARGV[arg]
    if header == '+' then
      -- One request of cost 1: a number, which decide's tonumber returns as it is.
      costs = 1
      arg = arg + 1
    elseif header == '=' then
      costs = ARGV[arg + 1]
      arg = arg + 2
    else
      costs, check, cap, period = ARGV[arg + 1], CHECK[ARGV[arg + 2]], tonumber(ARGV[arg + 3]), ARGV[arg + 4]
      period = tonumber(period) or period
      arg = arg + 5
    end
  end
  local start = n
  done = n
  local ok, e = pcall(decide, KEYS[k], costs, check, cap, period)
  if not ok then
    if type(e) == 'table' then e = e.err end
    e = tostring(e)
    local code = string.match(e, '^(%u+)[ ]')
    if code and code ~= 'WRONGTYPE' then error({ err = e }) end
    local left = 1
    for _ in string.gmatch(costs, ',') do left = left + 1 end
    left = left - (done - start) / 4
    n = done
    for _ = 1, left do
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = -1, e, 0, 0
      n = n + 4
    end
  end
  k = k + 1
end
flush()
return out
