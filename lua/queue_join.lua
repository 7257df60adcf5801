-- queue_join: a fan joins a concert's waiting line, or gets back the live token they already hold.
-- FIFO by arrival: seq is an INCR. A concert with a sale (cfg opens, pqopens) refuses joins before the
-- pre-queue opens, takes joins before the opening into the pre-queue (PREQUEUE, seq 0), and from the
-- opening on queues FIFO behind the entrants' places: the first join after the opening seals the
-- pre-queue (as draw_seal does), so a racing join is an entrant or an arrival, never both. Nobody is
-- admitted before the draw is in place (draw drawnAt). Admitted at once when nobody waits, a slot is free, the queue is not
-- paused and the admission rate budget has a token left. A join past the user's rate limit does
-- nothing; a concert may ask a fan without a live token for an access code and a proof of work.
-- KEYS[1] cfg       hash: cap, rate, ttl (ms), paused, opens, pqopens (ms, a sale's), pow (bits), codereq,
--                   aps (activePerSeat), noshow (ms), seenbase (the seq seen's fields count from, absent 0)
-- KEYS[2] seq       string: arrival sequence
-- KEYS[3] places    hash: user -> seq of each fan WAITING in the line
-- KEYS[4] active    zset: member user, score activeUntil (ms)
-- KEYS[5] aseq      hash: user -> seq of the ACTIVE token
-- KEYS[6] head      string: highest seq that left the line by admission
-- KEYS[7] bucket    hash: tok, ts (ms): the admission rate budget, refilled at rate/s up to rate
-- KEYS[8] admitted  string: admissions so far
-- KEYS[9] events    stream: the concert's outbox
-- KEYS[10] pre      zset: the pre-queue's entrants, member user, score entry time (ms)
-- KEYS[11] draw     hash: sealed ('1' once the pre-queue is closed), base, n, drawnAt (see draw_seal)
-- KEYS[12] inv      hash: avail, soldout (kept by the seat scripts)
-- KEYS[13] holds    zset: member res, score expires (ms): lapsed but unswept holds count as available
-- KEYS[14] seen     string: 6 bytes per arrival at byte (seq - seenbase - 1) x 6, when its fan was last
--                   seen (Unix ms, big-endian): a join or rejoin is a sign of life
-- KEYS[15] noshow   zset: member user, score the deadline (ms) of their first gated call after admission
-- KEYS[16] rl       string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- KEYS[17] pow      string: marks the proof's challenge used until it expires (a placeholder without one)
-- KEYS[18] codes    hash: hex SHA-256(access code) -> owner user ('' while unclaimed)
-- KEYS[19] order    list: '<seq>|<user>' of the line's arrivals in seq order, the tick's to take from
-- KEYS[20..] inv|holds  a seat slot's count and HELD set, in pairs, for each seat slot in the concert's own
--                  slot (a line of one shard): activePerSeat counts the seats there (lib/stock.lua)
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- ARGV[3] ulimit (requests/s, 0 = off)  ARGV[4] uburst
-- ARGV[5] powid (the checked challenge's id; '' none, '-' a proof that failed the check)  ARGV[6] powbits
-- (its difficulty)  ARGV[7] powexp (its expiry, ms)  ARGV[8] code (hex SHA-256 of the access code, '' none)
-- Reply: {status ('PREQUEUE'|'WAITING'|'ACTIVE'), seq (0 for PREQUEUE), activeUntil (ms, 0 unless ACTIVE),
--         created (1|0)}
-- Event: code.claim code user at, when a join claims an access code
-- Errors: NOT_FOUND (no such concert in Redis), RATE_LIMITED, SALE_NOT_OPEN (before the pre-queue opens),
--         SOLD_OUT (every seat is sold; an ACTIVE fan gets their token), ACCESS_CODE_REQUIRED,
--         ACCESS_CODE_INVALID, POW_REQUIRED, POW_INVALID
local cfg, seq, places, active, aseq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local head, bucket, admitted, events = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local pre, draw, inv, holds, seen, noshow = KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15]
local rl, pow, codes, order = KEYS[16], KEYS[17], KEYS[18], KEYS[19]
local user, now = ARGV[1], tonumber(ARGV[2])
local ulimit, uburst = tonumber(ARGV[3]), tonumber(ARGV[4])
local powid, powbits, powexp, code = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local slots = {unpack(KEYS, 20)}
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'ttl', 'paused', 'opens', 'pqopens', 'pow', 'codereq', 'aps',
  'noshow', 'seenbase')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
--#include rate_limit
--#include budget
--#include pow
--#include prequeue
--#include active_until
--#include end_token
--#include seal
if limited(rl, now, ulimit, uburst) then
  return redis.error_reply('RATE_LIMITED')
end
local opens, pqopens = tonumber(conf[5]), tonumber(conf[6])
local sealed = opens and redis.call('HGET', draw, 'sealed') == '1'
if opens and not sealed and now < pqopens then
  return redis.error_reply('SALE_NOT_OPEN')
end
--#include stock
local avail, soldout = stock(inv, holds, slots, now, tonumber(conf[9] or '0') > 0)
if soldout and not (redis.call('HGET', aseq, user) and
    tonumber(redis.call('ZSCORE', active, user) or '0') > now) then
  return redis.error_reply('SOLD_OUT')
end
local room = true -- activePerSeat: admitted at once only while ACTIVE stays within aps x AVAILABLE seats
if tonumber(conf[9] or '0') > 0 then
  room = redis.call('ZCARD', active) < tonumber(conf[9]) * avail
end
-- Gates: an access code and a proof of work, asked of a fan without a live token (in the line, the
-- pre-queue or the active set) only.
local need, codereq = tonumber(conf[7]) or 0, conf[8] == '1'
if need > 0 or codereq then
  local live = redis.call('HGET', places, user) or redis.call('ZSCORE', pre, user)
  if not live and redis.call('HEXISTS', aseq, user) == 1 then
    live = tonumber(redis.call('ZSCORE', active, user) or 0) > now
  end
  if not live then
    local owner = codereq and code ~= '' and redis.call('HGET', codes, code)
    local refused = join_refusal(codereq, code, owner == '' or owner == user, pow, powid, powbits, powexp, need, now)
    if refused then
      return refused
    end
    if owner == '' then
      redis.call('HSET', codes, code, user)
      redis.call('XADD', events, '*', 'type', 'code.claim', 'code', code, 'user', user, 'at', now)
    end
  end
end
-- The on-sale: before the opening a join enters the pre-queue; the first join after it seals.
local gated = false -- a sale whose draw is not in place yet: nobody is admitted
if opens then
  if not sealed then
    if now < opens then
      if redis.call('ZSCORE', pre, user) then
        return {'PREQUEUE', 0, 0, 0}
      end
      enter_prequeue(pre, events, user, now)
      return {'PREQUEUE', 0, 0, 1}
    end
    -- The opening has passed and no scheduler sealed yet: this join seals, so it is an arrival.
    seal(seq, draw, events, redis.call('ZCARD', pre), now)
  end
  gated = redis.call('HEXISTS', draw, 'drawnAt') == 0
end

-- The fan of arrival s (a number) was seen now: its field in seen, unless s is older than the field's
-- base (an arrival from before the line last emptied is not waiting).
--#include seen
local function saw(s)
  local at = s - tonumber(conf[11] or '0')
  if at > 0 then
    redis.call('SETRANGE', seen, string.format('%d', (at - 1) * 6), seen_field(now))
  end
end

local waiting = redis.call('HGET', places, user)
if waiting then
  saw(tonumber(waiting))
  return {'WAITING', tonumber(waiting), 0, 0}
end
local live, till = active_until(aseq, active, user, now)
if till then
  return {'ACTIVE', tonumber(live), till, 0}
elseif live then
  end_token(active, aseq, events, user, live, 'lapse', now)
end

if gated and redis.call('ZSCORE', pre, user) then
  return {'PREQUEUE', 0, 0, 0} -- an entrant the draw has not placed yet
end

local arrival = redis.call('INCR', seq)
-- each number a write takes, printed once (redis.call prints a Lua number with %.17g each time)
local arr, nows = string.format('%d', arrival), string.format('%d', now)
local cap, rate, ttl = tonumber(conf[1]), tonumber(conf[2]), tonumber(conf[3])
if room and conf[4] ~= '1' and not gated and redis.call('HLEN', places) == 0 and redis.call('ZCARD', active) < cap then
  local tok, ts = budget(bucket, rate, now)
  if tok >= 1 then
    local till = now + ttl
    local tills = string.format('%d', till)
    redis.call('HSET', bucket, 'tok', string.format('%.6f', tok - 1), 'ts', ts)
    redis.call('ZADD', active, tills, user)
    redis.call('HSET', aseq, user, arr)
    redis.call('SET', head, arr)
    redis.call('INCR', admitted)
    redis.call('XADD', events, '*', 'type', 'queue.admit', 'user', user, 'seq', arr, 'until', tills, 'at', nows)
    if tonumber(conf[10] or '0') > 0 then
      redis.call('ZADD', noshow, string.format('%d', now + tonumber(conf[10])), user)
    end
    return {'ACTIVE', arrival, till, 1}
  end
end
redis.call('HSET', places, user, arr)
--#include line_entry
redis.call('RPUSH', order, entry(arr, user))
saw(arrival)
redis.call('XADD', events, '*', 'type', 'queue.join', 'user', user, 'seq', arr, 'at', nows)
return {'WAITING', arrival, 0, 1}
