-- Floodgate main: consume or peek N limits of one subject, for one or more requests in arrival
-- order, each all-or-nothing and each seeing the writes of the ones before it.
-- KEYS[i]   state key of limit i; all keys of one subject share one {hash tag}.
-- ARGV[1]   mode: 'c' consume, 'p' peek (evaluate only, never write)
-- ARGV[2]   costs: one non-negative integer per request, comma-separated ('1' or '1,1,10');
--           a request is admitted only if all of its cost fits in every limit
-- ARGV[3]   UNSAFE test clock in ms, or '' (production): then the clock is redis.call('TIME')
-- ARGV[4+3(i-1)..6+3(i-1)]  limit i: algorithm id, capacity, period (window ms or refill/s)
-- Returns   per request: allowedAll (0|1), then per limit: allowed, remaining, resetMs, retryAfterMs
-- Writes    only for a request every limit admits, in mode 'c'; every write sets its expiry here
--           (hash and string state is written once per key, at the end: see the prelude's cache).
local mode = ARGV[1]
local now
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local out = {}
for c in string.gmatch(ARGV[2], '[^,]+') do
  local cost = tonumber(c)
  local head = #out + 1
  out[head] = 1
  local commits = {}
  for i = 1, #KEYS do
    local base = 3 + (i - 1) * 3
    local check = CHECK[tonumber(ARGV[base + 1])]
    local allowed, remaining, reset, retry, commit =
      check(KEYS[i], now, tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]), cost)
    if allowed == 0 then out[head] = 0 end
    commits[i] = commit
    out[#out + 1] = allowed
    out[#out + 1] = remaining
    out[#out + 1] = reset
    out[#out + 1] = retry
  end
  if out[head] == 1 and mode == 'c' then
    for i = 1, #KEYS do commits[i]() end
  end
end
flush()
return out
