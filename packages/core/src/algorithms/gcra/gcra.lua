-- gcra: the generic cell rate algorithm, token bucket's behaviour in one number, the theoretical
-- arrival time (TAT). The emission interval is 1000 / rate ms, unrounded, and every sum is taken
-- relative to now, where a double holds far below a nanosecond: precise at any rate up to 1e6/s
-- (a whole-microsecond interval admitted 20% too many at 833,333/s).
-- State: STRING '<ms>:<fraction>', the TAT as whole ms plus a fraction of a ms in [0, 1): one
-- absolute double would step by 0.24 us this century. A plain number (whole microseconds, the
-- earlier form) is still read. TTL: until the TAT, after which the state says nothing.
-- The TAT ahead of now in ms (0 when absent or past).
local function ahead(key, now)
  local s = sget(key)
  if not s then return 0 end
  local m, f = string.match(s, '^(%-?%d+):(.+)$')
  local a
  if m then
    a = (tonumber(m) - now) + tonumber(f)
  else
    local us = tonumber(s)
    local ms = math.floor(us / 1000)
    a = (ms - now) + (us - ms * 1000) / 1000
  end
  return math.max(0, a)
end
-- Saves the TAT `a` ms ahead of now, split into whole ms and fraction (both exact).
local function save(key, now, a)
  local whole = math.floor(a)
  ssave(key, fmt(now + whole) .. ':' .. fmt(a - whole), ttl(a))
end
-- Units that fit after a TAT `from` ms ahead: the largest k with from + k * T <= tau + EPSILON, settled
-- on the admission test itself (a quotient alone can be one short at 1e6/s: its error is divided by T).
local function room(from, tau, T)
  local k = math.max(0, math.floor((tau - from) / T + EPSILON))
  if from + (k + 1) * T <= tau + EPSILON then return k + 1 end
  if k > 0 and from + k * T > tau + EPSILON then return k - 1 end
  return k
end
local function check(key, now, cap, rate, cost)
  local T = 1000 / rate
  local tau = cap * T
  local tat = ahead(key, now)
  local diff = tat + cost * T
  -- EPSILON absorbs the rounding of sums of intervals (a burst of 3 at 3/s is 1000 ms, not 1000.0000000001).
  if diff <= tau + EPSILON then
    return 1, room(diff, tau, T), math.ceil(diff - EPSILON), 0, save, now, diff
  end
  local retry = -1
  if cost <= cap then retry = math.max(1, math.ceil(diff - tau - EPSILON)) end
  return 0, room(tat, tau, T), math.ceil(tat - EPSILON), retry, nil
end
-- Refund: TAT moves back by cost emission intervals, never before now. Writes only when TAT is ahead
-- of now; a TAT moved back to now goes (an absent TAT is a full bucket).
local function refund(key, now, cap, rate, cost, at)
  local tat = ahead(key, now)
  if cost == 0 or tat <= 0 then return end
  local back = tat - cost * (1000 / rate)
  if back <= EPSILON then return forget(key) end
  save(key, now, back)
end
-- Debit (a settle above its reservation): the TAT moves `cost` emission intervals further, past
-- the burst if need be (debt): nothing is admitted until now has caught up with it.
local function debit(key, now, cap, rate, cost)
  if cost == 0 then return end
  save(key, now, ahead(key, now) + cost * (1000 / rate))
end
