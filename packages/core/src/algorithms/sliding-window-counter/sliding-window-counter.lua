-- sliding-window-counter: previous window's count weighted by how much of it still overlaps the
-- sliding window, plus the current window's count. Two integers per subject; the default.
-- State: HASH { w = current window index, c = count in w, p = count in w - 1 }.
-- TTL: until the end of the next window, when c stops mattering.
local function check(key, now, cap, win, cost)
  local s = hmget(key, 'w', 'c', 'p')
  -- What this check sees at time `at`, from the stored state (also used to settle retry):
  -- the weighted estimate, the current and previous counts, the ms elapsed in the window, the window.
  local function view(at)
    local w = math.floor(at / win)
    local elapsed = at - w * win
    local c, p = 0, 0
    if s[1] then
      local sw = tonumber(s[1])
      if sw == w then
        c = tonumber(s[2]); p = tonumber(s[3])
      elseif sw == w - 1 then
        p = tonumber(s[2])
      end
    end
    return p * (win - elapsed) / win + c, c, p, elapsed, w
  end
  local est, c, p, elapsed, w = view(now)
  if est + cost <= cap + EPSILON then
    local reset = 0
    if c + cost > 0 then reset = win - elapsed + win elseif p > 0 then reset = win - elapsed end
    return 1, math.max(0, math.floor(cap - est - cost + EPSILON)), reset, 0, function()
      hsave(key, ttl(win - elapsed + win), 'w', fmt(w), 'c', fmt(c + cost), 'p', fmt(p))
    end
  end
  local reset = 0
  if c > 0 then reset = win - elapsed + win elseif p > 0 then reset = win - elapsed end
  local retry = -1
  if cost <= cap then
    local room = cap - c - cost
    if room >= 0 then
      -- still in this window: p * (win - e) / win + c + cost <= cap + EPSILON
      retry = math.max(1, math.ceil(win - (room + EPSILON) * win / p - elapsed))
    else
      -- in the next window c becomes p: c * (win - e2) / win + cost <= cap + EPSILON
      local e2 = win - (cap - cost + EPSILON) * win / c
      if e2 < 0 then e2 = 0 end
      retry = math.max(1, math.ceil(win - elapsed + e2))
    end
    -- Rounding can put that estimate 1 ms off the admission test above: settle on the test itself,
    -- so that waiting retry admits and waiting retry - 1 does not.
    if retry > 1 and view(now + retry - 1) + cost <= cap + EPSILON then
      retry = retry - 1
    elseif view(now + retry) + cost > cap + EPSILON then
      retry = retry + 1
    end
  end
  return 0, math.max(0, math.floor(cap - est + EPSILON)), reset, retry, nil
end
