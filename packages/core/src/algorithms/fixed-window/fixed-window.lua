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
      hsave(key, ttl(reset), 'w', fmt(w), 'c', fmt(c + cost))
    end
  end
  local retry = reset
  if cost > cap then retry = -1 end
  return 0, math.max(0, cap - c), reset, retry, nil
end
