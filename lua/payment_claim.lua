-- payment_claim: step 1 of a payment. Claims a HELD, unexpired reservation for payment: it becomes
-- PAYING and can no longer lapse or be cancelled. Claiming a reservation that is PAYING already (a retry,
-- or a second request at once) succeeds again; a PAID one replies with its payment.
-- KEYS[1] seats    hash: seat -> state, of the reservation's schedule
-- KEYS[2] holds    zset: member res, score expires (ms)
-- KEYS[3] res      hash: res -> reservation JSON
-- KEYS[4] paying   zset: member res, score claimed at (ms): what the sweeper finishes or undoes
-- KEYS[5] events   stream: the concert's outbox
-- KEYS[6] rl       string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- KEYS[7] ugate    hash: user -> comma list of '<res>:<until ms>' (the concert's gate entries); this key
--                  and the four after it are given when the schedule's seat slot is the concert's own:
--                  the fan's entry then follows the step in this call (lib/follow.lua), as gate_apply's follow
--                  does after it otherwise
-- KEYS[8] active   zset: member user, score activeUntil (ms)
-- KEYS[9] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[10] done     set: seqs whose fan finished
-- KEYS[11] cevents stream: the concert's outbox
-- ARGV[1] user  ARGV[2] id (the reservation)  ARGV[3] now (ms)
-- ARGV[4] ulimit (requests/s, 0 = off)  ARGV[5] uburst
-- ARGV[6] payms (ms: how long a claim keeps the fan's entry counting, PayingGate)
-- Reply: the reservation JSON (status PAYING, or PAID with its payment)
-- Errors: NOT_FOUND (no such reservation, or not the caller's), RESERVATION_EXPIRED (lapsed),
--         RESERVATION_NOT_HELD (cancelled), RATE_LIMITED
local seats, holds, res, paying, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, id, now = ARGV[1], ARGV[2], ARGV[3]
local rl, ulimit, uburst = KEYS[6], tonumber(ARGV[4]), tonumber(ARGV[5])
local ugate, active, aseq, done, cevents = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local payms = tonumber(ARGV[6])
--#include rate_limit
--#include reservation
local function step()
  if limited(rl, tonumber(now), ulimit, uburst) then
    return redis.error_reply('RATE_LIMITED')
  end
  local rec, raw = own_reservation(res, id, user)
  if not rec then
    return redis.error_reply('NOT_FOUND')
  end
  if rec.status == 'PAID' or rec.status == 'PAYING' then
    return raw, rec
  end
  if rec.status == 'CANCELLED' then
    return redis.error_reply('RESERVATION_NOT_HELD')
  end
  if rec.status == 'EXPIRED' or rec.expiresAt <= tonumber(now) then
    return redis.error_reply('RESERVATION_EXPIRED')
  end
  rec.status = 'PAYING'
  raw = cjson.encode(rec)
  redis.call('HSET', res, id, raw)
  redis.call('ZREM', holds, id)
  redis.call('ZADD', paying, now, id)
  redis.call('HSET', seats, rec.seat, 'P|' .. id)
  redis.call('XADD', events, '*', 'type', 'payment.claim', 'res', id, 'user', user, 'at', now)
  return raw, rec
end
--#include follow
return followed(ugate, active, aseq, done, cevents, now, payms, step())
