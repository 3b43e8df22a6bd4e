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
      -- Members 'now:seq' from seq n + 1. A refund can remove entries of this same ms and so free
      -- a seq below one still held: NX skips a member already there, so each unit adds one entry.
      local seq, added = n, 0
      while added < cost do
        seq = seq + 1
        added = added + redis.call('ZADD', key, 'NX', fmt(now), fmt(now) .. ':' .. fmt(seq))
      end
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
-- Refund: removes `cost` entries scored `at` (whichever members they are; fewer if fewer are there),
-- then sets the TTL from the newest entry left. An emptied ZSET is gone, as Redis removes it. Entries
-- that have left the window no longer count: a refund of them changes nothing and writes nothing.
local function refund(key, now, cap, win, cost, at)
  if cost == 0 or at <= now - win then return end
  local gone = redis.call('ZRANGEBYSCORE', key, fmt(at), fmt(at), 'LIMIT', 0, cost)
  if #gone == 0 then return end
  -- In slices: unpack() of a long list would overflow Lua's stack.
  for i = 1, #gone, 1000 do redis.call('ZREM', key, unpack(gone, i, math.min(#gone, i + 999))) end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if not newest[2] then return end
  -- Only entries that left the window are left: the log says nothing more, so it goes.
  local left = tonumber(newest[2]) + win - now
  if left > 0 then redis.call('PEXPIRE', key, ttl(left)) else redis.call('DEL', key) end
end
