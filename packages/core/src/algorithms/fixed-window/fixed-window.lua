-- fixed-window: one counter per window, window = floor(now / windowMs); or, for a calendar window
-- (option `window`), the period [b, next b) of the boundaries sent that holds now.
-- State: HASH { w = window id, c = units admitted in window w }: the id is the window's index
-- (windowMs), or its start in ms (a calendar window). TTL: until the window ends; with windowMs set
-- by the first write of each window only (windowTtl: every later one would set the same instant).
-- A calendar window sets it on every write: periods of other lengths share starts (a day's and its
-- month's), so a state of the same start may have been written under another period (a changed
-- quota) and carry that period's end.
-- Admits up to 2x the limit in a span straddling a window edge; kept because everyone ships it.
-- The window holding `now`: its id and its end (ms). `win` is windowMs, or a calendar window's
-- boundaries 'b0,b1,b2,b3' (ms, ascending: the periods around the client's clock, computed from a
-- time-zone database Redis does not have); the script's own clock picks among them. A clock outside
-- them (client and Redis clocks a whole period apart) is an error, never a guess.
local function span(now, win)
  if type(win) == 'number' then
    local w = math.floor(now / win)
    return w, (w + 1) * win
  end
  local start = nil
  for b in string.gmatch(win, '[^,]+') do
    local t = tonumber(b)
    if t > now then
      if start then return start, t end
      break
    end
    start = t
  end
  -- 'ERR ...': the application's clock, not this subject, is wrong: a failure of the call (main.lua's Errors).
  return error({ err = 'ERR fixed-window: the clock ' .. now .. ' is outside the calendar periods ' .. win })
end
-- The TTL a write of window w sets (see the header): kept from the window's first write (false) with
-- windowMs, always set for a calendar window.
local function expiry(s, w, now, stop, win)
  if type(win) == 'number' then return windowTtl(s, w, now, stop) end
  return ttl(stop - now)
end
-- An admission's commit (see check): the state and its TTL.
local function write(key, ttlMs, w, c)
  hsave(key, ttlMs, 'w', w, 'c', c)
end
local function check(key, now, cap, win, cost)
  local w, stop = span(now, win)
  local s = hmget(key, 'w', 'c')
  local c = 0
  if s[1] and tonumber(s[1]) == w then c = tonumber(s[2]) end
  local reset = stop - now
  if c + cost <= cap then
    return 1, cap - c - cost, reset, 0, write, expiry(s, w, now, stop, win), w, c + cost
  end
  local retry = reset
  if cost > cap then retry = -1 end
  return 0, math.max(0, cap - c), reset, retry, nil
end
-- Refund: a charge made in the current window comes off its count (never below zero); one made in
-- an older window no longer counts, so nothing changes. Writes only when the count changes.
local function refund(key, now, cap, win, cost, at)
  local w, stop = span(now, win)
  -- The charge must have been made in this window: its index (windowMs), or between its start and end (calendar).
  local same
  if type(win) == 'number' then same = math.floor(at / win) == w else same = at >= w and at < stop end
  if cost == 0 or not same then return end
  local s = hmget(key, 'w', 'c')
  if not s[1] or tonumber(s[1]) ~= w or tonumber(s[2]) == 0 then return end
  hsave(key, expiry(s, w, now, stop, win), 'w', w, 'c', math.max(0, tonumber(s[2]) - cost))
end
-- Debit (a settle above its reservation): `cost` more units in the current window, whatever is
-- left; past the limit the count stays above it (debt) until the window ends.
local function debit(key, now, cap, win, cost)
  if cost == 0 then return end
  local w, stop = span(now, win)
  local s = hmget(key, 'w', 'c')
  local c = 0
  if s[1] and tonumber(s[1]) == w then c = tonumber(s[2]) end
  hsave(key, expiry(s, w, now, stop, win), 'w', w, 'c', c + cost)
end
