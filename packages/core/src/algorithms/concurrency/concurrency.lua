-- concurrency: requests in flight, as leases. One ZSET member per leased unit, '<token>.<k>', scored
-- by the ms its lease expires at; a lease is held while its expiry is after now (Redis TIME), so a
-- lease whose holder died (never released, never renewed) frees itself leaseMs after its last renewal.
-- State: ZSET { '<token>.<k>' = expiry ms }. TTL: leaseMs from the last write, which is past every
-- member's expiry (each is at most now + leaseMs).
-- `period` is leaseMs. check reads only (ZCOUNT, and ZRANGE for a denial's wait): a peek writes
-- nothing; expired members are dropped by the next admitted acquire's write.
-- A denial's wait: until the earliest lease expires, at most RETRY_MS: a slot frees when a request
-- finishes, which no store can foresee, so a refused client is told to come back soon.
local RETRY_MS = 1000
-- The most slots one request takes (MAX_LEASE_COST in validate.ts, the twin's too): each is a member,
-- so a lease's writes and Redis time grow with it. A larger cost is refused as never admissible.
local MAX_COST = 10000
-- Members per ZADD or ZREM: unpack() of a longer list would overflow Lua's stack (LUAI_MAXCSTACK,
-- 8000 values: a lease of 4,000 slots, 2 values a member, failed the whole script before).
local SLICE = 1000
-- ZADD (with `flag`, or none) of the lease's `cost` members '<token>.<k>', each expiring at `expiry`, in
-- slices; returns how many were added.
local function zaddLease(key, flag, expiry, cost, token)
  local added, args = 0, {}
  for k = 1, cost do
    args[#args + 1] = expiry
    args[#args + 1] = token .. '.' .. k
    if k % SLICE == 0 or k == cost then
      if flag then added = added + redis.call('ZADD', key, flag, unpack(args))
      else added = added + redis.call('ZADD', key, unpack(args)) end
      args = {}
    end
  end
  return added
end
-- Leases held now per key, counted by this call's check and kept by its acquires (one call decides
-- a subject's coalesced requests, in order): the requests after the first count nothing again. A
-- release or renewal forgets the key. PRUNED[key]: the expired members already dropped this call.
local HELD, PRUNED = {}, {}
-- An admission's commit (see check): the lease's members, leaseMs from now, the expired ones
-- dropped (once a call); the key's TTL, leaseMs after now, is set once, when the script ends.
local function acquire(key, now, leaseMs, cost, token)
  if cost == 0 then return end
  if not PRUNED[key] then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    PRUNED[key] = true
  end
  -- Every member left is held (the expired ones are gone): the held count grows by the new ones.
  local added = zaddLease(key, nil, now + leaseMs, cost, token)
  if HELD[key] then HELD[key] = HELD[key] + added end
  expire(key, ttl(leaseMs))
end
local function check(key, now, cap, leaseMs, cost, token)
  local held = HELD[key]
  if not held then
    held = redis.call('ZCOUNT', key, '(' .. now, '+inf')
    HELD[key] = held
  end
  -- A cost above the slots, or above what one lease may take, never fits: refused, nothing written.
  if cost > cap or cost > MAX_COST then return 0, math.max(0, cap - held), leaseMs, -1, nil end
  if held + cost <= cap then
    return 1, cap - held - cost, leaseMs, 0, acquire, now, leaseMs, cost, token
  end
  local first = redis.call('ZRANGEBYSCORE', key, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local wait = tonumber(first[2]) - now
  return 0, math.max(0, cap - held), wait, math.min(RETRY_MS, wait), nil
end
-- A refund gives back rate-limit units; leases are given back by release, never by a refund.
local function refund(key, now, cap, leaseMs, cost, at)
end
-- Release: the lease's members leave the set (a lease already expired is simply gone). No lease has
-- more than MAX_COST members: a larger cost names none more.
local function release(key, now, cap, leaseMs, cost, token)
  HELD[key] = nil
  cost = math.min(cost, MAX_COST)
  local members = {}
  for k = 1, cost do
    members[#members + 1] = token .. '.' .. k
    if k % SLICE == 0 or k == cost then
      redis.call('ZREM', key, unpack(members))
      members = {}
    end
  end
end
-- Renew: a lease still held runs leaseMs from now again; an expired one is not brought back (XX
-- only updates members that exist, and a member past its expiry no longer counts as held).
local function renew(key, now, cap, leaseMs, cost, token)
  HELD[key] = nil
  if cost == 0 then return end
  local first = redis.call('ZSCORE', key, token .. '.1')
  if not first or tonumber(first) <= now then return end
  zaddLease(key, 'XX', now + leaseMs, math.min(cost, MAX_COST), token)
  redis.call('PEXPIRE', key, ttl(leaseMs))
end
