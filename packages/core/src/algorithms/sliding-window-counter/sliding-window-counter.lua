-- sliding-window-counter: previous window's count weighted by how much of it still overlaps the
-- sliding window, plus the current window's count. Two integers per subject; the default.
-- State: HASH { w = current window index, c = count in w, p = count in w - 1 }.
-- TTL: until the end of the next window, when c stops mattering: the same instant for every write
-- in window w, so set only by the first write of a window (windowTtl).
-- The counts of window w and of the one before it, from the stored state `s` (HMGET w, c, p).
-- Read by arithmetic (`+ 0`), which converts a stored number as tonumber does, without its C call
-- (about 1k instructions each in Redis); a field that is not a number is this subject's error.
local function counts(s, w)
  if s[1] then
    local sw = s[1] + 0
    if sw == w then return s[2] + 0, s[3] + 0 end
    if sw == w - 1 then return 0, s[2] + 0 end
  end
  return 0, 0
end
-- What a check sees at time `at`, from the stored state `s` (also used to settle retry): the
-- weighted estimate, the current and previous counts, the ms elapsed in the window, the window.
local function view(s, win, at)
  local w = floor(at / win)
  local elapsed = at - w * win
  local c, p = counts(s, w)
  return p * (win - elapsed) / win + c, c, p, elapsed, w
end
-- An admission's commit (see check): the state and its TTL.
local function write(key, ttlMs, w, c, p)
  hsave(key, ttlMs, 'w', w, 'c', c, 'p', p)
end
-- Ms until a request of `cost` fits, from the stored state `s` at `now` (c, p, elapsed: its view); -1
-- when it never can. Used for a denial's retry, and for an admission that leaves nothing: the reset
-- then says when the next unit is back, as on a denial (draft-10's "until additional quota").
local function untilFits(s, win, now, cap, cost, c, p, elapsed)
  if cost > cap then return -1 end
  local retry
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
  -- Rounding can put that estimate 1 ms off the admission test: settle on the test itself, so that
  -- waiting retry admits and waiting retry - 1 does not.
  if retry > 1 and view(s, win, now + retry - 1) + cost <= cap + EPSILON then
    retry = retry - 1
  elseif view(s, win, now + retry) + cost > cap + EPSILON then
    retry = retry + 1
  end
  return retry
end
local function check(key, now, cap, win, cost)
  local s = hmget(key, 'w', 'c', 'p')
  -- view() and counts() for `now`, written out: the stored window is read once, and whether it is
  -- w says whether its expiry stands (windowTtl without a second read of it).
  local w = floor(now / win)
  local elapsed = now - w * win
  local c, p, same = 0, 0, false
  if s[1] then
    local sw = s[1] + 0
    if sw == w then c, p, same = s[2] + 0, s[3] + 0, true elseif sw == w - 1 then p = s[2] + 0 end
  end
  local est = p * (win - elapsed) / win + c
  if est + cost <= cap + EPSILON then
    local left = max(0, floor(cap - est - cost + EPSILON))
    local reset = 0
    if left == 0 and cap >= 1 then
      reset = untilFits({ w, c + cost, p }, win, now, cap, 1, c + cost, p, elapsed)
    elseif c + cost > 0 then reset = win - elapsed + win elseif p > 0 then reset = win - elapsed end
    -- In the state's own window (no new TTL) w and p are written back as read: Redis formats every
    -- number sent to it (snprintf), a string it takes as it is, and these are the same bytes.
    if same then return 1, left, reset, 0, write, false, s[1], c + cost, s[3] end
    return 1, left, reset, 0, write, ttl((w + 2) * win - now), w, c + cost, p
  end
  local reset = 0
  if c > 0 then reset = win - elapsed + win elseif p > 0 then reset = win - elapsed end
  return 0, math.max(0, math.floor(cap - est + EPSILON)), reset, untilFits(s, win, now, cap, cost, c, p, elapsed), nil
end
-- Refund: a charge made in the current window comes off c, one made in the previous window off p
-- (never below zero); an older one no longer counts. Writes only when a count changes, with the TTL
-- an admission now would set.
local function refund(key, now, cap, win, cost, at)
  local s = hmget(key, 'w', 'c', 'p')
  local w = math.floor(now / win)
  local c, p = counts(s, w)
  local wa = math.floor(at / win)
  if cost == 0 then return end
  if wa == w and c > 0 then
    c = math.max(0, c - cost)
  elseif wa == w - 1 and p > 0 then
    p = math.max(0, p - cost)
  else
    return
  end
  hsave(key, windowTtl(s, w, now, (w + 2) * win), 'w', w, 'c', c, 'p', p)
end
-- Debit (a settle above its reservation): `cost` more units in the current window, whatever is
-- left; past the limit the estimate stays above it (debt) until enough of it has faded.
local function debit(key, now, cap, win, cost)
  if cost == 0 then return end
  local s = hmget(key, 'w', 'c', 'p')
  local w = math.floor(now / win)
  local c, p = counts(s, w)
  hsave(key, windowTtl(s, w, now, (w + 2) * win), 'w', w, 'c', c + cost, 'p', p)
end
