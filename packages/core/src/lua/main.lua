-- Floodgate main: consume, peek, refund or settle N limits of one subject (or release or renew its leases),
-- for one or more requests in arrival order, each all-or-nothing and each seeing the writes of the
-- ones before it; with the flag 'M', the same for several subjects (groups) in one call, one after
-- another, every key of every group declared in KEYS (one Cluster slot: the caller groups by slot).
-- KEYS, ARGV and the reply are defined in ONE place, packages/core/src/stores/redis/protocol.ts
-- (encodeCall writes them, parseReply reads the reply); change them there and here together.
-- Clock     redis.call('TIME'), unless ARGV[1] has the flag 'T' and the last ARGV carries the UNSAFE
--           test clock (tests only). The reply
--           starts with it, so a caller can later refund a consume at the ms it was decided.
-- Writes    for a request every limit admits, in mode 'c'; for every refund, in mode 'r', and every
--           lease release ('x') or renewal ('n'), where it
--           changes a state; the lock key for a strike (a consume the limits deny, lock-out on);
--           every write sets its expiry here, or keeps the one its window's first write set (a
--           window-aligned state: windowTtl); hash and string state is written once per key, at
--           the end: see the prelude's cache.
-- Groups    with 'M': after ARGV[1], per group a header ('3', or '3L' with a lock-out: its limit
--           count), its costs, its limits, its lock-out spec ('L'); its keys next in KEYS, the
--           lock key after them. A header '+' stands alone: the group is one request of cost 1
--           on the limits of the last group that sent them, no lock-out (a header '=' and '1').
--           A header '=' is followed by the costs alone: the group has the
--           limits of the last group that sent them (their count and ARGV) and no lock-out.
--           The reply is every group's, in order, after the one clock.
-- Lock-out  with the flag 'L' in ARGV[1] (or in a group's header): 'after,baseMs,maxMs,forgetMs' in
--           the ARGV after the limits, the lock key last in KEYS (the group's last):
--           HASH { s = strikes, u = locked until (ms, 0: not locked), l = last strike (ms) }; its
--           TTL: until the lock ends or forgetMs after the last strike, whichever is later.
--           lockout.ts is its twin.
-- Settle    in mode 's' (one subject a call, never with 'M'): the settle marker key last in KEYS
--           (ZSET { token = ms its record expires }), the ms a reservation stays settleable in the
--           ARGV after the limits. A request's entry is 'delta:at:token': the actual cost minus the
--           reserved one, the reservation's `at`, its token. A token recorded and not expired is not
--           settled again (status 1); a reservation `within` ms old or older is not settled (status
--           2); else (status 0) a negative delta is refunded as of `at` and a positive one debited
--           now, past the limit if need be (debt), and the token recorded until at + within. The
--           status goes where lockedMs goes.
-- Shaping   mode 'h' (hold): a consume whose entry is `cost:maxDelayMs`. A rate limit (HOLD, gcra and
--           token-bucket) that denies it but would admit it within maxDelayMs reserves that future
--           slot now (its debit: the TAT or the balance moves on by `cost`), so later requests queue
--           behind it fleet-wide; every other limit decides as in 'c'. All-or-nothing as ever: held
--           only if every limit admits or holds. A held request's lockedMs slot is its delay (ms
--           until it conforms, with allowedAll 1); a held limit's entry: 1, what is left after the
--           reservation, its reset, its own delay. Given back with mode 'r' like any charge.
-- Override  with the flag 'O' in ARGV[1] (or in a group's header, after 'L'): the subject's override
--           key last in KEYS (the group's last, after the lock key), its ceiling in the ARGV after the
--           lock-out spec (0: none). Read once per subject with one GET (same hash tag): a string
--           ';<suffix>=<cap>[,<rate>];...' naming each overridden limit by its key's suffix (the part
--           after the subject's base). The cap replaces the limit's capacity, capped at the ceiling;
--           a rate (token-bucket, gcra) replaces its refillPerSecond, scaled down with the cap. A cap
--           of 0 refuses (remaining 0, reset and retry the override's PTTL). The reply then carries a
--           fifth entry per limit: the capacity in force. Written by limiter.override (SET ... PX):
--           it expires by itself. Modes 'c', 'p' and 'h' only.
-- Errors    a subject's own failure (an error of this script on its state or its request, or a key of
--           another type, WRONGTYPE) fails that subject's requests not yet answered, never the call:
--           each gets -1 where `allowed` goes and the error's text where lockedMs goes (its limits'
--           entries 0); the requests before it keep their answers and writes, the groups after it
--           are decided. A refusal of the server itself (OOM, NOPERM, READONLY, BUSY...: an error
--           whose text starts with an upper-case code) fails the whole call, as before.
local mode = ARGV[1]
local lastArg = #ARGV
local hasLock, many, now = false, false, nil
local hasOverride = false
-- Production calls of one subject carry no flags: ARGV[1] is the mode alone, and nothing more is looked up.
if #mode > 1 then
  local hasClock = string.find(mode, 'T', 2, true)
  hasLock, many = string.find(mode, 'L', 2, true), string.find(mode, 'M', 2, true)
  hasOverride = string.find(mode, 'O', 2, true)
  mode = string.sub(mode, 1, 1)
  if hasClock then
    now = tonumber(ARGV[lastArg])
    lastArg = lastArg - 1
  end
end
if not now then
  -- TIME's two strings read by arithmetic, which converts them as tonumber would without its C call.
  local t = redis.call('TIME')
  now = t[1] * 1000 + floor(t[2] / 1000)
end
-- The reply, sized at once for the common call (one request, one limit: 7 entries); longer ones grow.
local out = { now, 0, 0, 0, 0, 0, 0 }
local n = 1
-- `n` after the last request decide() answered in full (see `guarded`).
local done = 1
-- One subject's requests: `k0` the index before its first key, `costs` its ARGV entry of costs,
-- `a0` the ARGV index of its first limit, `limits` their count, `lock` its lock-out (or nil),
-- `settle` a settle's marker key and window (mode 's', or nil).
local function decide(k0, costs, a0, limits, lock, settle, ov)
  -- The limits, read once for all the requests: one limit in locals, several in a flat table
  -- (id, cap, period, key per limit). A period is a number, or a calendar window's boundaries
  -- ('b0,b1,b2,b3'), which its chunk reads.
  local id1, cap1, period1, key1 = tonumber(ARGV[a0]), tonumber(ARGV[a0 + 1]), ARGV[a0 + 2], KEYS[k0 + 1]
  period1 = tonumber(period1) or period1
  local lims = nil
  if limits > 1 then
    lims = { id1, cap1, period1, key1 }
    for i = 2, limits do
      local base, j = a0 + (i - 1) * 3, (i - 1) * 4
      local period = ARGV[base + 2]
      lims[j + 1], lims[j + 2], lims[j + 3], lims[j + 4] = tonumber(ARGV[base]), tonumber(ARGV[base + 1]), tonumber(period) or period, KEYS[k0 + i]
    end
  end
  -- The override (see the header): one GET; each overridden limit's cap (and rate) replaced.
  local zeroMs, width = 0, 4
  if ov then
    width = 5
    local v = redis.call('GET', ov.key)
    if v then
      local cut = #ov.key - 2
      for i = 1, limits do
        local key = i == 1 and key1 or lims[(i - 1) * 4 + 4]
        local at = string.find(v, ';' .. string.sub(key, cut) .. '=', 1, true)
        if at then
          local from = string.find(v, '=', at + 1, true) + 1
          local stop = (string.find(v, ';', from, true) or #v + 1) - 1
          local c, r = string.match(string.sub(v, from, stop), '^([^,]+),?(.*)$')
          c, r = tonumber(c), tonumber(r)
          if ov.ceiling > 0 and c > ov.ceiling then
            if r then r = r * ov.ceiling / c end
            c = ov.ceiling
          end
          if c == 0 then zeroMs = max(1, redis.call('PTTL', ov.key)) end
          if i == 1 then
            cap1 = c
            if r then period1 = r end
          end
          if lims then
            lims[(i - 1) * 4 + 2] = c
            if r then lims[(i - 1) * 4 + 3] = r end
          end
        end
      end
    end
  end
  -- Each admitted check's commit: a function of the chunk's and its arguments (no closure per
  -- request); with several limits, five entries per limit in one table.
  local f1, a1, b1, c1, d1 = nil, nil, nil, nil, nil
  local commits = nil
  if limits > 1 then commits = {} end
  -- The requests' entries, split on ',' without an iterator (a single entry is the string itself).
  local pos = 1
  while pos do
    local sep = string.find(costs, ',', pos, true)
    local c = costs
    if sep then
      c, pos = string.sub(costs, pos, sep - 1), sep + 1
    else
      if pos > 1 then c = string.sub(costs, pos) end
      pos = nil
    end
    -- An entry is `cost`, or `cost:x`: x is a refund's `at`, or a lease's token (consume, release, renew).
    local cost, at, token = tonumber(c), nil, nil
    -- Shaping: the longest this request may be held (ms), its limits held in `holds` (by index) and the longest wait.
    local hold, holds, wait = 0, nil, 0
    if not cost then
      local colon = string.find(c, ':', 1, true)
      cost, token = tonumber(string.sub(c, 1, colon - 1)), string.sub(c, colon + 1)
      if mode == 'r' then at = tonumber(token) end
      if mode == 'h' then hold, token = tonumber(token), nil end
    end
    -- A settle's status: 0 applied now, 1 settled before, 2 too old (see the header).
    local status = 0
    if settle then
      local colon2 = string.find(token, ':', 1, true)
      at, token = tonumber(string.sub(token, 1, colon2 - 1)), string.sub(token, colon2 + 1)
      local seen = redis.call('ZSCORE', settle.key, token)
      if seen and tonumber(seen) > now then
        status = 1
      elseif now - at >= settle.within then
        status = 2
      else
        redis.call('ZREMRANGEBYSCORE', settle.key, '-inf', now)
        redis.call('ZADD', settle.key, at + settle.within, token)
        -- Every record expires within `within` of now (each `at` is at most now).
        redis.call('PEXPIRE', settle.key, ttl(settle.within))
      end
    end
    local head = n + 1
    -- Both filled now so that the reply stays a sequence as it grows; set again below.
    out[head], out[head + 1] = 1, 0
    local allowedAll = 1
    n = head + 1
    local strikes, lockedMs = 0, 0
    if lock and (mode == 'c' or mode == 'p' or mode == 'h') then
      -- Strikes still remembered, and ms left locked (0: not locked).
      local s = hmget(lock.key, 's', 'u', 'l')
      if s[1] then
        if now - tonumber(s[3]) < lock.forget then strikes = tonumber(s[1]) end
        lockedMs = max(0, tonumber(s[2]) - now)
      end
    end
    local id, cap, period, key = id1, cap1, period1, key1
    for i = 1, limits do
      if i > 1 then
        local j = (i - 1) * 4
        id, cap, period, key = lims[j + 1], lims[j + 2], lims[j + 3], lims[j + 4]
      end
      if mode == 'c' or mode == 'p' or mode == 'h' then
        local allowed, remaining, reset, retry, f, a, b, c, d = 0, 0, zeroMs, zeroMs, nil, nil, nil, nil, nil
        if cap ~= 0 then allowed, remaining, reset, retry, f, a, b, c, d = CHECK[id](key, now, cap, period, cost, token) end
        if allowed == 0 then
          if mode == 'h' and HOLD[id] and cap ~= 0 and retry > 0 and retry <= hold then
            holds = holds or {}
            holds[i] = retry
            wait = max(wait, retry)
          else
            allowedAll = 0
          end
        elseif commits then
          local j = (i - 1) * 5
          commits[j + 1], commits[j + 2], commits[j + 3], commits[j + 4], commits[j + 5] = f, a, b, c, d
        else
          f1, a1, b1, c1, d1 = f, a, b, c, d
        end
        out[n + 1], out[n + 2], out[n + 3], out[n + 4] = allowed, remaining, reset, retry
        if ov then out[n + 5] = cap end
      else
        -- A refund, release or renewal is always applied, a settle when its status is 0; the figures
        -- are those of the state left (a cost-0 check). Release and renewal are sent to lease limits
        -- only, a settle to rate limits only.
        if mode == 's' then
          if status == 0 and cost < 0 then REFUND[id](key, now, cap, period, -cost, at)
          elseif status == 0 and cost > 0 then DEBIT[id](key, now, cap, period, cost) end
        elseif mode == 'r' then REFUND[id](key, now, cap, period, cost, at)
        elseif mode == 'x' then RELEASE[id](key, now, cap, period, cost, token)
        else RENEW[id](key, now, cap, period, cost, token) end
        local _, remaining, reset = CHECK[id](key, now, cap, period, 0)
        out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 1, remaining, reset, 0
        if ov then out[n + 5] = cap end
      end
      n = n + width
    end
    if settle then lockedMs = status end
    if lockedMs > 0 then
      -- Locked out (or, for a settle, not applied): denied whatever the limits say, nothing charged, no new strike.
      allowedAll = 0
    elseif allowedAll == 0 and (mode == 'c' or mode == 'h') and lock then
      strikes = strikes + 1
      local untilMs = 0
      if strikes >= lock.after then
        lockedMs = math.min(lock.max, lock.base * 2 ^ (strikes - lock.after))
        untilMs = now + lockedMs
      end
      hsave(lock.key, ttl(max(lockedMs, lock.forget)), 's', strikes, 'u', untilMs, 'l', now)
    end
    out[head], out[head + 1] = allowedAll, lockedMs
    if allowedAll == 1 and (mode == 'c' or mode == 'h') then
      if commits then
        for i = 1, limits do
          local j = (i - 1) * 5
          if not (holds and holds[i]) then commits[j + 1](lims[(i - 1) * 4 + 4], commits[j + 2], commits[j + 3], commits[j + 4], commits[j + 5]) end
        end
      elseif not holds then
        f1(key1, a1, b1, c1, d1)
      end
      if holds then
        -- Shaping: each held limit reserves its slot; the request's delay goes where lockedMs goes.
        out[head + 1] = wait
        for i = 1, limits do
          if holds[i] then
            local hid, hcap, hperiod, hkey = id1, cap1, period1, key1
            if i > 1 then
              local j = (i - 1) * 4
              hid, hcap, hperiod, hkey = lims[j + 1], lims[j + 2], lims[j + 3], lims[j + 4]
            end
            HOLD[hid](hkey, now, hcap, hperiod, cost)
            local _, remaining, reset = CHECK[hid](hkey, now, hcap, hperiod, 0)
            local o = head + 2 + (i - 1) * width
            out[o], out[o + 1], out[o + 2], out[o + 3] = 1, remaining, reset, holds[i]
          end
        end
      end
    end
    done = n
  end
end
-- decide(), with a subject's own failure kept to that subject's requests (see Errors above): the
-- ones it had not answered in full get the error in their place, and the call goes on.
local function guarded(k0, costs, a0, limits, lock, settle, ov)
  local start = n
  done = n
  local ok, e = pcall(decide, k0, costs, a0, limits, lock, settle, ov)
  if ok then return end
  if type(e) == 'table' then e = e.err end
  e = tostring(e)
  local code = string.match(e, '^(%u+)[ ]')
  if code and code ~= 'WRONGTYPE' then error({ err = e }) end
  local size, left = 2 + (ov and 5 or 4) * limits, 1
  for _ in string.gmatch(costs, ',') do left = left + 1 end
  left = left - (done - start) / size
  n = done
  for _ = 1, left do
    out[n + 1], out[n + 2] = -1, e
    for i = 3, size do out[n + i] = 0 end
    n = n + size
  end
end
-- A lock-out spec 'after,baseMs,maxMs,forgetMs' and its key.
local function lockout(spec, key)
  local a, b, m, f = string.match(spec, '^([^,]+),([^,]+),([^,]+),([^,]+)$')
  return { key = key, after = tonumber(a), base = tonumber(b), max = tonumber(m), forget = tonumber(f) }
end
if many then
  -- Several subjects: each group's header, costs, limits and lock-out spec, its keys in order.
  -- `la0` and `lcount`: where the last limits sent start in ARGV, and how many, for '=' groups.
  local arg, k0, la0, lcount = 2, 0, 0, 0
  while arg <= lastArg do
    local header = ARGV[arg]
    if header == '=' or header == '+' then
      if header == '+' then
        guarded(k0, '1', la0, lcount, nil)
        arg = arg + 1
      else
        guarded(k0, ARGV[arg + 1], la0, lcount, nil)
        arg = arg + 2
      end
      k0 = k0 + lcount
    else
      -- '1' or '1L': a header without a lock-out is a number as it stands ('1O', '1LO': an override).
      local limits = tonumber(header)
      local lock, ov = nil, nil
      if not limits then
        local flags = string.match(header, '%a+$')
        limits = tonumber(string.sub(header, 1, -1 - #flags))
        local extra = 0
        if string.find(flags, 'L', 1, true) then
          lock = lockout(ARGV[arg + 2 + 3 * limits], KEYS[k0 + limits + 1])
          extra = 1
        end
        if string.find(flags, 'O', 1, true) then
          ov = { key = KEYS[k0 + limits + extra + 1], ceiling = tonumber(ARGV[arg + 2 + 3 * limits + extra]) }
        end
      end
      guarded(k0, ARGV[arg + 1], arg + 2, limits, lock, nil, ov)
      la0, lcount = arg + 2, limits
      arg = arg + 2 + 3 * limits + (lock and 1 or 0) + (ov and 1 or 0)
      k0 = k0 + limits + (lock and 1 or 0) + (ov and 1 or 0)
    end
  end
else
  local limits = #KEYS
  local lock, settle, ov = nil, nil, nil
  if hasOverride then limits = limits - 1 end
  if hasLock then
    limits = limits - 1
    lock = lockout(ARGV[3 + 3 * limits], KEYS[limits + 1])
  end
  if hasOverride then
    local at = limits + (lock and 1 or 0)
    ov = { key = KEYS[at + 1], ceiling = tonumber(ARGV[3 + 3 * limits + (lock and 1 or 0)]) }
  end
  if mode == 's' then
    limits = limits - 1
    settle = { key = KEYS[limits + 1], within = tonumber(ARGV[3 + 3 * limits]) }
  end
  guarded(0, ARGV[2], 3, limits, lock, settle, ov)
end
flush()
return out
