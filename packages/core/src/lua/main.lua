-- Floodgate main: consume or peek N limits of one subject, for one or more requests in arrival
-- order, each all-or-nothing and each seeing the writes of the ones before it.
-- KEYS, ARGV and the reply are defined in ONE place, packages/core/src/stores/redis-protocol.ts
-- (encodeCall writes them, parseReply reads the reply); change them there and here together.
-- Clock     redis.call('TIME'), unless ARGV[3] carries the UNSAFE test clock (tests only).
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
