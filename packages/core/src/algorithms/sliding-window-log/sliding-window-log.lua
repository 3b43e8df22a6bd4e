-- sliding-window-log: one ZSET entry per admitted unit, scored by its time. Exact in any
-- window-long span; memory grows with limit x callers (the limit is capped: see its descriptor).
-- State: ZSET of units, each scored by the ms it was admitted and named by a per-key sequence
-- number, so that no two units share a name whatever TIME returns (a clock that steps back revisits
-- a ms; names built from the time would collide and ZADD would overwrite a unit). The sequence's
-- next value lives in the member '#<seq>', scored -inf: outside every window, never pruned.
-- An entry with score <= now - windowMs has left the window. TTL: windowMs after the newest entry.
-- A request of cost 0 writes nothing (it neither prunes nor touches the TTL).
-- The newest entry's score when the window holds `n` entries (nil when none), for a reset. Read only
-- when needed (a cost-0 request, or a denial): an admitted unit is itself the newest (reset: the window).
local function newest(key, n)
  if n == 0 then return nil end
  return tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
end
-- What this call already knows of a key, so that the requests after its first (one call decides
-- a subject's coalesced requests, in order) skip the reads and the prune the first one made:
-- KNOWN[key] = { units in the window now (false: not counted yet), pruned (true once done),
-- the sequence's next value and its member's name (false: not read yet) }. Only this chunk's
-- check and append change a key in a call that uses it (a refund's call forgets it).
local KNOWN = {}
-- Writes `cost` units admitted at now (an admission's commit, and a settle's debit): prunes the
-- units that left the window (once a call: the ones added since are inside it), then names the
-- new ones from the sequence. The TTL, windowMs after now, is set once, when the script ends.
local function append(key, now, win, cost)
  if cost == 0 then return end
  local k = KNOWN[key]
  if not k then
    k = { false, false, false, false }
    KNOWN[key] = k
  end
  if not k[2] then
    redis.call('ZREMRANGEBYSCORE', key, '(-inf', fmt(now - win))
    k[2] = true
  end
  local seq, head = k[3], k[4]
  if not seq then
    seq = 0
    head = redis.call('ZRANGEBYSCORE', key, '-inf', '-inf', 'LIMIT', 0, 1)[1]
    if head then seq = tonumber(string.sub(head, 2)) end
  end
  if head then redis.call('ZREM', key, head) end
  -- One ZADD per 1000 units (cost is at most the limit, or a settle's bounded debit: both capped);
  -- the last one also writes the sequence's next value.
  local args = {}
  for i = 1, cost do
    args[#args + 1] = now
    args[#args + 1] = seq + i
    if i == cost then
      args[#args + 1] = '-inf'
      args[#args + 1] = '#' .. fmt(seq + cost)
    end
    if #args >= 2000 or i == cost then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  k[3], k[4] = seq + cost, '#' .. fmt(seq + cost)
  if k[1] then k[1] = k[1] + cost end
  expire(key, ttl(win))
end
local function check(key, now, cap, win, cost)
  local floor = now - win
  local k = KNOWN[key]
  local n = k and k[1]
  if not n then
    n = redis.call('ZCOUNT', key, '(' .. fmt(floor), '+inf')
    if not k then
      k = { false, false, false, false }
      KNOWN[key] = k
    end
    k[1] = n
  end
  if n + cost <= cap then
    local reset = 0
    if cost > 0 then
      reset = win
    else
      local t = newest(key, n)
      if t then reset = t + win - now end
    end
    return 1, cap - n - cost, reset, 0, append, now, win, cost
  end
  local retry = -1
  if cost <= cap then
    -- the (n + cost - cap)-th oldest entry in the window must leave it first
    local e = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(floor), '+inf', 'WITHSCORES', 'LIMIT', n + cost - cap - 1, 1)
    retry = math.max(1, tonumber(e[2]) + win - now)
  end
  local reset = 0
  local t = newest(key, n)
  if t then reset = t + win - now end
  return 0, math.max(0, cap - n), reset, retry, nil
end
-- Refund: removes `cost` entries scored `at` (whichever members they are; fewer if fewer are there),
-- then sets the TTL from the newest entry left; with no unit left the key goes, its sequence member
-- with it (no unit remains whose name a new one could take). Entries that have left the window no
-- longer count: a refund of them changes nothing and writes nothing.
local function refund(key, now, cap, win, cost, at)
  KNOWN[key] = nil
  if cost == 0 or at <= now - win then return end
  local gone = redis.call('ZRANGEBYSCORE', key, fmt(at), fmt(at), 'LIMIT', 0, cost)
  if #gone == 0 then return end
  -- In slices: unpack() of a long list would overflow Lua's stack.
  for i = 1, #gone, 1000 do redis.call('ZREM', key, unpack(gone, i, math.min(#gone, i + 999))) end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  -- Only the sequence member, or only entries that left the window, are left: the log says nothing more, so it goes.
  local left = 0
  if newest[2] ~= nil and newest[2] ~= '-inf' then left = tonumber(newest[2]) + win - now end
  if left > 0 then redis.call('PEXPIRE', key, ttl(left)) else redis.call('DEL', key) end
end
-- Debit (a settle above its reservation): `cost` more entries at now, whatever is left; past the
-- limit the log holds more than it admits (debt) until enough entries have left the window.
local function debit(key, now, cap, win, cost)
  append(key, now, win, cost)
end
