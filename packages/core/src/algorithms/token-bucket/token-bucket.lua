-- token-bucket: `burst` tokens, refilled at `refillPerSecond`, computed lazily on read.
-- State: HASH { t = tokens after the last admission, ts = its time in ms }.
-- TTL: until the bucket is full again, when the state says no more than an absent key.
-- The tokens the stored state `s` (HMGET t, ts) holds at time `at`: refilled lazily, up to cap.
local function tokensIn(s, cap, rate, at)
  if not s[1] then return cap end
  local elapsed = at - tonumber(s[2])
  if elapsed < 0 then elapsed = 0 end
  return math.min(cap, tonumber(s[1]) + elapsed * rate / 1000)
end
-- An admission's commit (see check): the state and its TTL.
local function write(key, ttlMs, t, ts)
  hsave(key, ttlMs, 't', t, 'ts', ts)
end
local function check(key, now, cap, rate, cost)
  local s = hmget(key, 't', 'ts')
  local tokens = tokensIn(s, cap, rate, now)
  if tokens + EPSILON >= cost then
    local left = math.max(0, tokens - cost)
    local full = (cap - left) * 1000 / rate
    return 1, math.floor(left + EPSILON), math.ceil(full), 0, write, ttl(full), left, now
  end
  local retry = -1
  if cost <= cap then
    retry = math.max(1, math.ceil((cost - EPSILON - tokens) * 1000 / rate))
    -- Rounding can put that estimate 1 ms off the admission test above: settle on the test itself,
    -- so that waiting retry admits and waiting retry - 1 does not.
    if retry > 1 and tokensIn(s, cap, rate, now + retry - 1) + EPSILON >= cost then
      retry = retry - 1
    elseif tokensIn(s, cap, rate, now + retry) + EPSILON < cost then
      retry = retry + 1
    end
  end
  -- A balance in debt (a settle's debit) is below zero: what is left is still never negative.
  return 0, math.max(0, math.floor(tokens + EPSILON)), math.ceil((cap - tokens) * 1000 / rate), retry, nil
end
-- Refund: `cost` tokens back, never past the burst. Writes only when the bucket was not full; one
-- it fills goes (an absent bucket is a full one).
local function refund(key, now, cap, rate, cost, at)
  local s = hmget(key, 't', 'ts')
  local tokens = tokensIn(s, cap, rate, now)
  if cost == 0 or tokens >= cap then return end
  local t = tokens + cost
  if t >= cap then return forget(key) end
  hsave(key, ttl((cap - t) * 1000 / rate), 't', t, 'ts', now)
end
-- Debit (a settle above its reservation): `cost` tokens off, whatever is left; below zero the
-- balance is negative (debt) and refills from there, so nothing is admitted until it is paid back.
local function debit(key, now, cap, rate, cost)
  if cost == 0 then return end
  local s = hmget(key, 't', 'ts')
  local t = tokensIn(s, cap, rate, now) - cost
  hsave(key, ttl((cap - t) * 1000 / rate), 't', t, 'ts', now)
end
