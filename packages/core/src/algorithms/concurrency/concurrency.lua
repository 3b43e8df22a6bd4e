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
  local args = {}
  for k = 1, cost do
    args[2 * k - 1] = now + leaseMs
    args[2 * k] = token .. '.' .. k
  end
  -- Every member left is held (the expired ones are gone): the held count grows by the new ones.
  local added = redis.call('ZADD', key, unpack(args))
  if HELD[key] then HELD[key] = HELD[key] + added end
  expire(key, ttl(leaseMs))
end
local function check(key, now, cap, leaseMs, cost, token)
  local held = HELD[key]
  if not held then
    held = redis.call('ZCOUNT', key, '(' .. now, '+inf')
    HELD[key] = held
  end
  if held + cost <= cap then
    return 1, cap - held - cost, leaseMs, 0, acquire, now, leaseMs, cost, token
  end
  if cost > cap then return 0, math.max(0, cap - held), leaseMs, -1, nil end
  local first = redis.call('ZRANGEBYSCORE', key, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local wait = tonumber(first[2]) - now
  return 0, math.max(0, cap - held), wait, math.min(RETRY_MS, wait), nil
end
-- A refund gives back rate-limit units; leases are given back by release, never by a refund.
local function refund(key, now, cap, leaseMs, cost, at)
end
-- Release: the lease's members leave the set (a lease already expired is simply gone).
local function release(key, now, cap, leaseMs, cost, token)
  HELD[key] = nil
  if cost == 0 then return end
  local members = {}
  for k = 1, cost do members[k] = token .. '.' .. k end
  redis.call('ZREM', key, unpack(members))
end
-- Renew: a lease still held runs leaseMs from now again; an expired one is not brought back (XX
-- only updates members that exist, and a member past its expiry no longer counts as held).
local function renew(key, now, cap, leaseMs, cost, token)
  HELD[key] = nil
  if cost == 0 then return end
  local first = redis.call('ZSCORE', key, token .. '.1')
  if not first or tonumber(first) <= now then return end
  local args = {}
  for k = 1, cost do
    args[2 * k - 1] = now + leaseMs
    args[2 * k] = token .. '.' .. k
  end
  redis.call('ZADD', key, 'XX', unpack(args))
  redis.call('PEXPIRE', key, ttl(leaseMs))
end
