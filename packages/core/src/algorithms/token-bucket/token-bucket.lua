-- token-bucket: `burst` tokens, refilled at `refillPerSecond`, computed lazily on read.
-- State: HASH { t = tokens after the last admission, ts = its time in ms }.
-- TTL: until the bucket is full again, when the state says no more than an absent key.
CHECK[4] = function(key, now, cap, rate, cost)
  local s = redis.call('HMGET', key, 't', 'ts')
  local tokens = cap
  if s[1] then
    local elapsed = now - tonumber(s[2])
    if elapsed < 0 then elapsed = 0 end
    tokens = math.min(cap, tonumber(s[1]) + elapsed * rate / 1000)
  end
  if tokens + EPSILON >= cost then
    local left = math.max(0, tokens - cost)
    local full = (cap - left) * 1000 / rate
    return 1, math.floor(left + EPSILON), math.ceil(full), 0, function()
      redis.call('HSET', key, 't', fmt(left), 'ts', fmt(now))
      redis.call('PEXPIRE', key, ttl(full))
    end
  end
  local retry = -1
  if cost <= cap then retry = math.max(1, math.ceil((cost - tokens) * 1000 / rate)) end
  return 0, math.floor(tokens + EPSILON), math.ceil((cap - tokens) * 1000 / rate), retry, nil
end
