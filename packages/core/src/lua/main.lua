-- Floodgate main: consume, peek or refund N limits of one subject, for one or more requests in
-- arrival order, each all-or-nothing and each seeing the writes of the ones before it.
-- KEYS, ARGV and the reply are defined in ONE place, packages/core/src/stores/redis-protocol.ts
-- (encodeCall writes them, parseReply reads the reply); change them there and here together.
-- Clock     redis.call('TIME'), unless ARGV[3] carries the UNSAFE test clock (tests only). The reply
--           starts with it, so a caller can later refund a consume at the ms it was decided.
-- Writes    for a request every limit admits, in mode 'c'; for every refund, in mode 'r', where it
--           changes a state; the lock key for a strike (a consume the limits deny, lock-out on);
--           every write sets its expiry here (hash and string state is written once per key, at
--           the end: see the prelude's cache).
-- Lock-out  ARGV[4] 'after,baseMs,maxMs,forgetMs' (or '' for none), the lock key last in KEYS:
--           HASH { s = strikes, u = locked until (ms, 0: not locked), l = last strike (ms) }; its
--           TTL: until the lock ends or forgetMs after the last strike, whichever is later.
--           lockout.ts is its twin.
local mode = ARGV[1]
local now
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local lock = nil
if ARGV[4] ~= '' then
  local a, b, m, f = string.match(ARGV[4], '^([^,]+),([^,]+),([^,]+),([^,]+)$')
  lock = { key = KEYS[#KEYS], after = tonumber(a), base = tonumber(b), max = tonumber(m), forget = tonumber(f) }
end
local limits = #KEYS
if lock then limits = limits - 1 end
-- Strikes still remembered, and ms left locked (0: not locked).
local function lockView()
  local s = hmget(lock.key, 's', 'u', 'l')
  if not s[1] then return 0, 0 end
  local strikes = 0
  if now - tonumber(s[3]) < lock.forget then strikes = tonumber(s[1]) end
  return strikes, math.max(0, tonumber(s[2]) - now)
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
  out[head + 1] = 0
  local strikes, lockedMs = 0, 0
  if lock and not at then strikes, lockedMs = lockView() end
  local commits = {}
  for i = 1, limits do
    local base = 4 + (i - 1) * 3
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
  if lockedMs > 0 then
    -- Locked out: denied whatever the limits say, nothing charged, no new strike.
    out[head] = 0
  elseif out[head] == 0 and mode == 'c' and lock then
    strikes = strikes + 1
    local untilMs = 0
    if strikes >= lock.after then
      lockedMs = math.min(lock.max, lock.base * 2 ^ (strikes - lock.after))
      untilMs = now + lockedMs
    end
    hsave(lock.key, ttl(math.max(lockedMs, lock.forget)), 's', fmt(strikes), 'u', fmt(untilMs), 'l', fmt(now))
  end
  out[head + 1] = lockedMs
  if out[head] == 1 and mode == 'c' then
    for i = 1, limits do commits[i]() end
  end
end
flush()
return out
