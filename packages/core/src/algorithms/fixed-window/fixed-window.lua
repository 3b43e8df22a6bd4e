-- fixed-window: one counter per window, window = floor(now / windowMs).
-- State: HASH { w = window index, c = units admitted in window w }. TTL: until the window ends.
-- Admits up to 2x the limit in a span straddling a window edge; kept because everyone ships it.
local function check(key, now, cap, win, cost)
  local w = math.floor(now / win)
  local s = hmget(key, 'w', 'c')
  local c = 0
  if s[1] and tonumber(s[1]) == w then c = tonumber(s[2]) end
  local reset = (w + 1) * win - now
  if c + cost <= cap then
    return 1, cap - c - cost, reset, 0, function()
      hsave(key, ttl(reset), 'w', w, 'c', c + cost)
    end
  end
  local retry = reset
  if cost > cap then retry = -1 end
  return 0, math.max(0, cap - c), reset, retry, nil
end
-- Refund: a charge made in the current window comes off its count (never below zero); one made in
-- an older window no longer counts, so nothing changes. Writes only when the count changes.
local function refund(key, now, cap, win, cost, at)
  local w = math.floor(now / win)
  if cost == 0 or math.floor(at / win) ~= w then return end
  local s = hmget(key, 'w', 'c')
  if not s[1] or tonumber(s[1]) ~= w or tonumber(s[2]) == 0 then return end
  hsave(key, ttl((w + 1) * win - now), 'w', w, 'c', math.max(0, tonumber(s[2]) - cost))
end
-- Debit (a settle above its reservation): `cost` more units in the current window, whatever is
-- left; past the limit the count stays above it (debt) until the window ends.
local function debit(key, now, cap, win, cost)
  if cost == 0 then return end
  local w = math.floor(now / win)
  local s = hmget(key, 'w', 'c')
  local c = 0
  if s[1] and tonumber(s[1]) == w then c = tonumber(s[2]) end
  hsave(key, ttl((w + 1) * win - now), 'w', w, 'c', c + cost)
end
