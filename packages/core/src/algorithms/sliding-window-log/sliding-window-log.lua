-- sliding-window-log: one ZSET entry per admitted unit, scored by its time. Exact in any
-- window-long span; memory grows with limit x callers.
-- State: ZSET of members 'now:seq' (unique per unit, even when two requests share a ms), score now.
-- An entry with score <= now - windowMs has left the window. TTL: windowMs after the newest entry.
local function check(key, now, cap, win, cost)
  local floor = now - win
  local n = redis.call('ZCOUNT', key, '(' .. fmt(floor), '+inf')
  local newest = nil
  if n > 0 then newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
  if n + cost <= cap then
    local reset = 0
    if cost > 0 then reset = win elseif newest then reset = newest + win - now end
    return 1, cap - n - cost, reset, 0, function()
      redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(floor))
      -- n entries are in the window and none can leave it at this same ms, so n + i is unique.
      for i = 1, cost do redis.call('ZADD', key, fmt(now), fmt(now) .. ':' .. fmt(n + i)) end
      if cost > 0 then redis.call('PEXPIRE', key, ttl(win)) end
    end
  end
  local retry = -1
  if cost <= cap then
    -- the (n + cost - cap)-th oldest entry in the window must leave it first
    local e = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(floor), '+inf', 'WITHSCORES', 'LIMIT', n + cost - cap - 1, 1)
    retry = math.max(1, tonumber(e[2]) + win - now)
  end
  local reset = 0
  if newest then reset = newest + win - now end
  return 0, math.max(0, cap - n), reset, retry, nil
end
