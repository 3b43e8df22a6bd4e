-- Floodgate main: consume, peek or refund N limits of one subject, for one or more requests in
-- arrival order, each all-or-nothing and each seeing the writes of the ones before it.
-- KEYS, ARGV and the reply are defined in ONE place, packages/core/src/stores/redis-protocol.ts
-- (encodeCall writes them, parseReply reads the reply); change them there and here together.
-- Clock     redis.call('TIME'), unless ARGV[3] carries the UNSAFE test clock (tests only). The reply
--           starts with it, so a caller can later refund a consume at the ms it was decided.
-- Writes    for a request every limit admits, in mode 'c'; for every refund, in mode 'r', where it
--           changes a state; every write sets its expiry here (hash and string state is written
--           once per key, at the end: see the prelude's cache).
local mode = ARGV[1]
local now
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local out = { now }
for c in string.gmatch(ARGV[2], '[^,]+') do
  local cost, at = tonumber(c), nil
  if mode == 'r' then
    local sep = string.find(c, ':', 1, true)
    cost, at = tonumber(string.sub(c, 1, sep - 1)), tonumber(string.sub(c, sep + 1))
  end
  local head = #out + 1
  out[head] = 1
  local commits = {}
  for i = 1, #KEYS do
    local base = 3 + (i - 1) * 3
    local id, cap, period = tonumber(ARGV[base + 1]), tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3])
    if at then
      -- A refund is always applied; its figures are those of the state it leaves (a cost-0 check).
      REFUND[id](KEYS[i], now, cap, period, cost, at)
      local _, remaining, reset = CHECK[id](KEYS[i], now, cap, period, 0)
      out[#out + 1] = 1
      out[#out + 1] = remaining
      out[#out + 1] = reset
      out[#out + 1] = 0
    else
      local allowed, remaining, reset, retry, commit = CHECK[id](KEYS[i], now, cap, period, cost)
      if allowed == 0 then out[head] = 0 end
      commits[i] = commit
      out[#out + 1] = allowed
      out[#out + 1] = remaining
      out[#out + 1] = reset
      out[#out + 1] = retry
    end
  end
  if out[head] == 1 and mode == 'c' then
    for i = 1, #KEYS do commits[i]() end
  end
end
flush()
return out
