-- gcra: the generic cell rate algorithm, token bucket's behaviour in one number, the theoretical
-- arrival time (TAT). Kept in whole microseconds so that long runs accumulate no rounding error;
-- the emission interval is rounded to the nearest microsecond (rates up to 1e6/s).
-- State: STRING tat in microseconds. TTL: until tat, after which the state says nothing.
-- The emission interval in whole microseconds.
local function interval(rate) return math.max(1, math.floor(1e6 / rate + 0.5)) end
local function check(key, now, cap, rate, cost)
  local T = interval(rate)
  local tau = cap * T
  local nowUs = now * 1000
  local tat = tonumber(sget(key)) or nowUs
  if tat < nowUs then tat = nowUs end
  local diff = tat + cost * T - nowUs
  if diff <= tau then
    return 1, math.floor((tau - diff) / T), math.ceil(diff / 1000), 0, function()
      ssave(key, fmt(nowUs + diff), ttl(diff / 1000))
    end
  end
  local retry = -1
  if cost <= cap then retry = math.max(1, math.ceil((diff - tau) / 1000)) end
  return 0, math.max(0, math.floor((tau - (tat - nowUs)) / T)), math.ceil((tat - nowUs) / 1000), retry, nil
end
-- Refund: TAT moves back by cost emission intervals, never before now. Writes only when TAT is ahead
-- of now; a TAT moved back to now goes (an absent TAT is a full bucket).
local function refund(key, now, cap, rate, cost, at)
  local nowUs = now * 1000
  local tat = tonumber(sget(key))
  if cost == 0 or not tat or tat <= nowUs then return end
  local back = tat - cost * interval(rate)
  if back <= nowUs then return forget(key) end
  ssave(key, fmt(back), ttl((back - nowUs) / 1000))
end
