-- Floodgate main: consume or peek N limits of one subject in one atomic step, all-or-nothing.
-- KEYS[i]   state key of limit i; all keys of one subject share one {hash tag}.
-- ARGV[1]   mode: 'c' consume, 'p' peek (evaluate only, never write)
-- ARGV[2]   cost: a non-negative integer; all of it must fit in every limit
-- ARGV[3]   UNSAFE test clock in ms, or '' (production): then the clock is redis.call('TIME')
-- ARGV[4+3(i-1)..6+3(i-1)]  limit i: algorithm id, capacity, period (window ms or refill/s)
-- Returns   { allowedAll (0|1), then per limit: allowed, remaining, resetMs, retryAfterMs }
-- Writes    only when every limit admits and mode is 'c'; every write sets PEXPIRE here.
local mode = ARGV[1]
local cost = tonumber(ARGV[2])
local now
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local out = { 1 }
local commits = {}
for i = 1, #KEYS do
  local base = 3 + (i - 1) * 3
  local check = CHECK[tonumber(ARGV[base + 1])]
  local allowed, remaining, reset, retry, commit =
    check(KEYS[i], now, tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]), cost)
  if allowed == 0 then out[1] = 0 end
  commits[i] = commit
  out[#out + 1] = allowed
  out[#out + 1] = remaining
  out[#out + 1] = reset
  out[#out + 1] = retry
end
if out[1] == 1 and mode == 'c' then
  for i = 1, #KEYS do commits[i]() end
end
return out
